// A node vacuums the jobs table itself after many deletes: autovacuum looks at a table
// once per `autovacuum_naptime` (a setting of the whole server, a minute by default), and
// a table whose rows are deleted as fast as they come fills its claim index with dead
// entries meanwhile (docs/pg.md#measured). On the pool, beside the turns.
import type { Clock } from "../clock.ts";
import type { SqlClient } from "./sql.ts";
import { message } from "./views.ts";

/** Deletes by this node between two of its vacuums. */
const VACUUM_AFTER = 20_000;
/** The least time between two of its vacuums (ms). */
const VACUUM_EVERY_MS = 5_000;

export class Vacuum {
  readonly #sql: SqlClient;
  /** The vacuum statement (statements.ts). */
  readonly #text: string;
  readonly #clock: Clock;
  readonly #error: (line: string) => void;
  /** Deletes since this node last vacuumed the jobs table; whether it is vacuuming, since when. */
  #deleted = 0;
  #vacuuming = false;
  #vacuumedAt = -Infinity;
  /** The node is closing: no vacuum begins, and a failing one is not worth a log line. */
  #stopped = false;

  constructor(sql: SqlClient, text: string, clock: Clock, error: (line: string) => void) {
    this.#sql = sql;
    this.#text = text;
    this.#clock = clock;
    this.#error = error;
  }

  /** A turn carries `n` more deletes: vacuum once enough have gathered. */
  deleted(n: number): void {
    this.#deleted += n;
    const now = this.#clock.now();
    if (this.#vacuuming || this.#stopped || this.#deleted < VACUUM_AFTER || now - this.#vacuumedAt < VACUUM_EVERY_MS) {
      return;
    }
    this.#vacuuming = true;
    this.#deleted = 0;
    this.#sql.query(this.#text)
      .catch((e) => {
        if (!this.#stopped) this.#error(`pg: could not vacuum the jobs table: ${message(e)}`);
      })
      .finally(() => {
        this.#vacuuming = false;
        this.#vacuumedAt = this.#clock.now();
      });
  }

  stop(): void {
    this.#stopped = true;
  }
}
