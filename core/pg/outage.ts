// Whether the database takes this node's transactions. The turns (turn.ts) and the reads
// beside them tell it each time the database is away and each time something committed
// or answered again; it says so once per outage in the logs, and /readyz and the metrics
// port read it. A command waits for a database that is away up to --pg-wait (`waiting`).
import type { Clock } from "../clock.ts";
import type { Health, Waiting } from "./turn.ts";
import { message } from "./views.ts";

export class Outage implements Health {
  /** How long a command waits for the database, and who hears about it (turn.ts). */
  readonly waiting: Waiting;
  readonly #clock: Clock;
  /** The database as logs name it ("host:port/db", no password). */
  readonly #target: string;
  readonly #error: (line: string) => void;
  readonly #log: (line: string) => void;
  #available = true;
  #reason = "";
  /** When the database last went away, and last came back (monotonic ms). */
  #since = -Infinity;
  #backAt = -Infinity;
  /** When a transaction last committed, or a read answered (monotonic ms). */
  #okAt = -Infinity;

  constructor(
    clock: Clock,
    waitMs: number,
    target: string,
    error: (line: string) => void,
    log: (line: string) => void,
  ) {
    this.#clock = clock;
    this.#target = target;
    this.#error = error;
    this.#log = log;
    this.waiting = { clock, waitMs, health: this };
  }

  /** Whether the database takes this node's transactions. */
  get available(): boolean {
    return this.#available;
  }

  /** Why not ("" while available), for /readyz and the metrics port. */
  get reason(): string {
    return this.#reason;
  }

  get wentAwayAt(): number {
    return this.#since;
  }

  get backAt(): number {
    return this.#backAt;
  }

  /**
   * A transaction or read begun at `startedAt` failed because the database is away: said
   * once per outage. Not when another one committed since it began (it waited across the
   * database's return).
   */
  away(e: unknown, startedAt = Infinity): void {
    if (!this.#available || this.#okAt > startedAt) return;
    this.#available = false;
    this.#reason = `PostgreSQL at ${this.#target} is unavailable: ${message(e)}`;
    this.#since = this.#clock.now();
    this.#error(
      `pg: database at ${this.#target} went away (${message(e)}); commands wait up to ${
        this.waiting.waitMs / 1000
      } s for it, then answer INTERNAL_ERROR`,
    );
  }

  /** A transaction committed (or a read answered) again. */
  back(): void {
    this.#okAt = this.#clock.now();
    if (this.#available) return;
    this.#available = true;
    this.#reason = "";
    this.#backAt = this.#okAt;
    const s = ((this.#clock.now() - this.#since) / 1000).toFixed(1);
    this.#log(`pg: database at ${this.#target} is back after ${s} s`);
  }
}
