// One connection's command state (Session), what it needs from its server
// (ConnectionContext), the steps a command returns to the connection loop, and the
// few helpers every command module shares: answer an engine call now or later, write a
// constant reply, mark a producer or a worker. dispatch.ts (stock commands) and
// extensions.ts (docs/extensions.md) build on it.
import { Command } from "./command.ts";
import { Output, R } from "./reply.ts";
import type { ServerFacts } from "./yaml.ts";
import type { Counters } from "./counters.ts";
import type { Answer, Engine, EngineClient, JobOut } from "../core/engine.ts";

/** What a connection needs from the server it belongs to (Service provides it). */
export interface ConnectionContext {
  readonly engine: Engine;
  /** Commands, connections, producers and workers seen by this server. */
  readonly counters: Counters;
  /** Allocates job bodies (a BodyArena shared by every connection). */
  readonly bodies: (n: number) => Uint8Array;
  readonly facts: ServerFacts;
  /** -V count: 1 logs connections, 2 also commands. */
  readonly verbose: number;
  readonly log: (line: string) => void;
  readonly error: (line: string) => void;
  /**
   * Output buffers of connections that went idle, shared by every connection of the
   * server: an idle connection holds none (its own would be a good part of what an idle
   * connection costs), and a busy one takes one back without allocating.
   */
  readonly spareBuffers: Uint8Array[];
  /** Every open connection's session, in the order they connected (stats-conn, list-connections). */
  sessions(): Iterable<Session>;
}

/** What the connection does after a command. The numbers of a put's body are in Session.cmd.n. */
export const STEP = {
  /** Go on with the next command. */
  NEXT: 0,
  /** Go on; this command changed something (its reply waits for Engine.settle). */
  CHANGED: 1,
  /** Close once the replies are out. */
  QUIT: 2,
  /** The client waits in reserve: process nothing until the engine wakes it. */
  WAIT: 3,
  /** Read a put's body: cmd.n bytes and CRLF, then call putBody(). */
  BODY: 4,
  /** Throw away cmd.n bytes and CRLF (a body over -z), then answer JOB_TOO_BIG. */
  SKIP: 5,
} as const;
export type Step = (typeof STEP)[keyof typeof STEP];

/** One connection's command state: its client in the engine, its output, a put waiting for its body. */
export class Session {
  readonly out: Output;
  /** The last line parsed; a put's pri/delay/ttr wait here for its body. */
  readonly cmd = new Command();
  readonly engine: Engine;
  /** The id the put waiting for its body took when its line was read (as 1.12 does). */
  putId = 0;
  /** Sent a well-formed put line / a reserve (stats' current-producers and -workers). */
  producer = false;
  worker = false;
  /** The peer's address as the adapter gave it (host:port, [v6]:port, unix:PATH), or "" (stats-conn). */
  addr = "";

  constructor(
    readonly ctx: ConnectionContext,
    readonly client: EngineClient,
    /** For log lines (1.12 prints the fd). */
    readonly id: number,
  ) {
    this.engine = ctx.engine;
    this.out = new Output(ctx.spareBuffers);
  }
}

/** Reply with `a` now, or when the promise settles. */
export function answer<T>(s: Session, a: Answer<T>, then: (s: Session, r: T) => Step): Step | Promise<Step> {
  return a instanceof Promise ? a.then((r) => then(s, r)) : then(s, a);
}

export function reply(out: Output, bytes: Uint8Array): Step {
  out.bytes(bytes);
  return STEP.NEXT;
}

/** This connection sent a well-formed put line (stats' current-producers). */
export function markProducer(s: Session): void {
  if (!s.producer) {
    s.producer = true;
    s.ctx.counters.producers++;
  }
}

/** This connection sent a reserve (stats' current-workers). */
export function markWorker(s: Session): void {
  if (!s.worker) {
    s.worker = true;
    s.ctx.counters.workers++;
  }
}

/** FOUND with the job, or NOT_FOUND (the peeks). */
export function found(s: Session, j: JobOut | undefined): Step {
  if (j) s.out.job(R.FOUND_, j.id, j.body);
  else s.out.bytes(R.NOT_FOUND);
  return STEP.NEXT;
}
