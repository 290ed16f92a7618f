// The server without sockets: one queue, its one timer, and the open connections.
// Adapters (server.ts) accept sockets and hand each to connect().
import { Queue } from "../core/queue.ts";
import type { Clock } from "../core/clock.ts";
import { systemClock } from "../core/clock.ts";
import type { Wal } from "../core/wal.ts";
import { Connection, type Transport } from "./connection.ts";
import { type HostInfo, randomId, UNKNOWN_HOST } from "./host.ts";
import type { ServerFacts } from "./yaml.ts";
import { BodyArena } from "./arena.ts";
import { LogTurn } from "./log_turn.ts";

/** What `stats` reports as version: the protocol level we reproduce, so clients that check it keep working. */
export const PROTOCOL_VERSION = "1.12";

/** The longest the one timer sleeps (1.12 wakes at least hourly too). */
const MAX_SLEEP_MS = 3_600_000;

/** How a {@linkcode Service} is set up; every field is optional. */
export interface ServiceOptions {
  /** Time for deadlines and stats; default: the system clock ({@linkcode ManualClock} in tests). */
  clock?: Clock;
  /** Largest job body accepted, bytes (-z). Default 65535. */
  maxJobSize?: number;
  /** @internal The write-ahead log (openService in adapters/open.ts wires it up from -b). */
  wal?: Wal;
  /** -V count: 1 logs connections, 2 also commands. */
  verbose?: number;
  /** Where log lines go (default: console.log / console.error). */
  log?: (line: string) => void;
  /** Where error lines go (default: console.error). */
  error?: (line: string) => void;
  /** Facts for `stats` (pid, hostname, ...): adapters/host_node.ts hostInfo() reads the real ones. Default: UNKNOWN_HOST. */
  host?: HostInfo;
  /** @internal An existing queue to serve (e.g. one restored from the binlog). */
  queue?: Queue;
}

/**
 * The server without sockets: one queue, its one timer, and the open connections. Hand
 * it to {@linkcode listen} for this runtime's TCP/UNIX sockets, or to
 * {@linkcode serveStreams} for any pair of web streams.
 *
 * @example Serve one in-memory connection
 * ```ts
 * import { serveStreams, Service } from "../mod.ts";
 *
 * const svc = new Service();
 * const input = new Blob(["put 0 0 60 5\r\nhello\r\nquit\r\n"]).stream();
 * const replies: string[] = [];
 * const output = new WritableStream<Uint8Array>({ write: (c) => void replies.push(new TextDecoder().decode(c)) });
 * await serveStreams(svc, { readable: input, writable: output });
 * console.log(replies.join("")); // "INSERTED 1\r\n"
 * svc.close();
 * ```
 */
export class Service {
  /** @internal */
  readonly queue: Queue;
  /** @internal */
  readonly facts: ServerFacts;
  /** @internal */
  readonly verbose: number;
  /** @internal */
  readonly log: (line: string) => void;
  /** @internal */
  readonly error: (line: string) => void;
  /** @internal */
  readonly connections = new Set<Connection>();
  readonly #arena = new BodyArena();
  /** @internal Allocates job bodies for every connection (see BodyArena). */
  readonly bodies = (n: number): Uint8Array => this.#arena.alloc(n);
  /** @internal Output buffers of idle connections, for busy ones to take (see ConnectionContext). */
  readonly spareBuffers: Uint8Array[] = [];
  /** @internal With -b: one append per turn for every connection's records (see LogTurn). */
  readonly logTurn: LogTurn | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Infinity;
  #lastId = 0;

  /** A service with a new empty queue (or `opts.queue`). */
  constructor(opts: ServiceOptions = {}) {
    const clock = opts.clock ?? systemClock;
    this.queue = opts.queue ?? new Queue({
      clock,
      ...(opts.maxJobSize !== undefined ? { maxJobSize: opts.maxJobSize } : {}),
      ...(opts.wal ? { wal: opts.wal } : {}),
    });
    this.logTurn = this.queue.wal.logs ? new LogTurn(this.queue.wal) : undefined;
    this.facts = { host: opts.host ?? UNKNOWN_HOST, id: randomId(), version: PROTOCOL_VERSION, startedAt: clock.now() };
    this.verbose = opts.verbose ?? 0;
    this.log = opts.log ?? ((l) => console.log(l));
    this.error = opts.error ?? ((l) => console.error(l));
    this.queue.onDeadline = (at) => this.#arm(at);
    const due = this.queue.nextDue();
    if (due < Infinity) this.#arm(due);
  }

  /**
   * @internal A new client connection writing to `transport` (adapters call this).
   * `peer` says who it is, when the transport knows (a TLS client certificate's
   * subject), for the -V accept line.
   */
  connect(transport: Transport, peer?: string): Connection {
    const c = new Connection(this, transport);
    this.connections.add(c);
    if (this.verbose > 0) this.log(peer === undefined ? `accept ${c.id}` : `accept ${c.id} ${peer}`);
    return c;
  }

  /** @internal */
  nextConnectionId(): number {
    return ++this.#lastId;
  }

  /** @internal */
  forget(c: Connection): void {
    this.connections.delete(c);
    if (this.verbose > 0) this.log(`close ${c.id}`);
  }

  /** Drain mode (SIGUSR1): from now on every put is answered DRAINING. */
  drain(): void {
    this.queue.draining = true;
  }

  /** Close every connection and stop the timer. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.queue.onDeadline = undefined;
    for (const c of [...this.connections]) c.abort();
  }

  /** One timer for every deadline: armed for the earliest, re-armed by each tick. */
  #arm(at: number): void {
    if (at >= this.#timerAt) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    const ms = Math.min(Math.max(0, at - this.queue.clock.now()), MAX_SLEEP_MS);
    this.#timer = setTimeout(this.#fire, Math.ceil(ms));
  }

  #fire = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const next = this.queue.tick();
    if (next < Infinity) this.#arm(next);
  };
}
