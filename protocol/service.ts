// The server without sockets: an engine, and the open connections on it. Adapters
// (server.ts) accept sockets and hand each to connect().
import type { Engine } from "../core/engine.ts";
import { immediateTurns, type Turns } from "../core/clock.ts";
import { Connection, type Transport } from "./connection.ts";
import type { Session } from "./session.ts";
import { type HostInfo, randomId, UNKNOWN_HOST } from "./host.ts";
import type { ServerFacts } from "./yaml.ts";
import { BodyArena } from "./arena.ts";
import { Counters } from "./counters.ts";

/** What `stats` reports as version: the protocol level we reproduce, so clients that check it keep working. */
export const PROTOCOL_VERSION = "1.12";

/** How a {@linkcode Service} is set up; every field is optional. */
export interface ServiceOptions {
  /** -V count: 1 logs connections, 2 also commands. */
  verbose?: number;
  /** Where log lines go (default: console.log / console.error). */
  log?: (line: string) => void;
  /** Where error lines go (default: console.error). */
  error?: (line: string) => void;
  /** Facts for `stats` (pid, hostname, ...): adapters/host_node.ts hostInfo() reads the real ones. Default: UNKNOWN_HOST. */
  host?: HostInfo;
  /**
   * How busy connections let others have a turn: adapters/turns.ts runtimeTurns() gives
   * turns in slices, which let the sockets be polled at least every few ms under a flood
   * (openService uses them). Default: plain setImmediate.
   */
  turns?: Turns;
}

/**
 * The server without sockets: an engine (the jobs) and the open connections on it. Hand
 * it to {@linkcode listen} for this runtime's TCP/UNIX sockets, or to
 * {@linkcode serveStreams} for any pair of web streams. Build the engine with
 * {@linkcode memoryEngine} (or let {@linkcode openService} build it from flags); the
 * service owns it from then on, and close() closes it.
 *
 * @example Serve one in-memory connection
 * ```ts
 * import { memoryEngine, serveStreams, Service } from "../mod.ts";
 *
 * const svc = new Service(memoryEngine());
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
  readonly engine: Engine;
  /** @internal Commands, connections, producers and workers seen by this server. */
  readonly counters = new Counters();
  /** @internal */
  readonly facts: ServerFacts;
  /** @internal */
  readonly verbose: number;
  /** @internal */
  readonly log: (line: string) => void;
  /** @internal */
  readonly error: (line: string) => void;
  /** @internal */
  readonly turns: Turns;
  /** @internal */
  readonly connections = new Set<Connection>();
  readonly #arena = new BodyArena();
  /** @internal Allocates job bodies for every connection (see BodyArena). */
  readonly bodies = (n: number): Uint8Array => this.#arena.alloc(n);
  /** @internal Output buffers of idle connections, for busy ones to take (see ConnectionContext). */
  readonly spareBuffers: Uint8Array[] = [];
  #lastId = 0;

  /** A service on `engine` (it owns it from now on). */
  constructor(engine: Engine, opts: ServiceOptions = {}) {
    this.engine = engine;
    this.facts = {
      host: opts.host ?? UNKNOWN_HOST,
      id: randomId(),
      version: PROTOCOL_VERSION,
      startedAt: engine.clock.now(),
    };
    this.verbose = opts.verbose ?? 0;
    this.log = opts.log ?? ((l) => console.log(l));
    this.error = opts.error ?? ((l) => console.error(l));
    this.turns = opts.turns ?? immediateTurns;
  }

  /**
   * @internal A new client connection writing to `transport` (adapters call this).
   * `peer` says who it is, when the transport knows (a TLS client certificate's
   * subject), for the -V accept line; `addr` where it is (host:port, [v6]:port or
   * unix:PATH), for stats-conn and list-connections.
   */
  connect(transport: Transport, peer?: string, addr?: string): Connection {
    const c = new Connection(this, transport, addr);
    this.connections.add(c);
    this.counters.connections++;
    this.counters.totalConnections++;
    if (this.verbose > 0) this.log(peer === undefined ? `accept ${c.id}` : `accept ${c.id} ${peer}`);
    return c;
  }

  /** @internal Every open connection's session (ids ascending: connections are added in order). */
  *sessions(): Iterable<Session> {
    for (const c of this.connections) yield c.session;
  }

  /** @internal */
  nextConnectionId(): number {
    return ++this.#lastId;
  }

  /** @internal */
  forget(c: Connection): void {
    this.connections.delete(c);
    this.counters.connections--;
    if (this.verbose > 0) this.log(`close ${c.id}`);
  }

  /** @internal Settles once the event loop has polled the sockets (Turns.afterIO): lets other connections go first. */
  afterIO(): Promise<void> {
    return new Promise((resolve) => this.turns.afterIO(resolve));
  }

  /** Drain mode (SIGUSR1): from now on every put is answered DRAINING. */
  drain(): void {
    this.engine.drain();
  }

  /** Close every connection, then the engine (its timer; with -b, the log: write, fsync, unlock). */
  close(): void {
    for (const c of [...this.connections]) c.abort();
    this.engine.close();
  }
}
