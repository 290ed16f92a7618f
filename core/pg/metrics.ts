// What the metrics port shows of a node's work with its database: the turn
// transactions (their statements' and COMMIT's latencies, commands per transaction,
// retries, failures) and this node's lease as it last saw it renewed. turn.ts calls
// three hooks per attempt; each is a few number writes, nothing allocated.
import { Histogram } from "../histogram.ts";

/** Upper bounds (ms) for a turn's statements and its COMMIT: 0.1 ms up to 10 s (a database away for a while). */
export const PG_BOUNDS_MS: readonly number[] = [
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  25,
  50,
  100,
  250,
  500,
  1000,
  2500,
  10_000,
];

/** Upper bounds for commands per turn transaction (a histogram of counts, not ms). */
export const BATCH_BOUNDS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/** The turns' figures, kept by the TurnRunner through begin / answered / committed / failed. */
export class TurnMetrics {
  readonly statements = new Histogram(PG_BOUNDS_MS);
  readonly commits = new Histogram(PG_BOUNDS_MS);
  readonly batchSizes = new Histogram(BATCH_BOUNDS);
  transactions = 0;
  retries = 0;
  errors = 0;
  readonly #now: () => number;
  /** Monotonic ms (the clock's) at which this node's lease ends as far as it knows. */
  #leaseUntil = -Infinity;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** A transaction has its connection and sends its statements: the time now, for answered(). */
  begin(): number {
    return this.#now();
  }

  /** Every statement of the transaction begun at `start` has answered (COMMIT is next): the time now, for committed(). */
  answered(start: number): number {
    const t = this.#now();
    this.statements.observe(t - start);
    return t;
  }

  /** COMMIT answered (its statements answered at `answeredAt`); the transaction carried `commands` commands. */
  committed(answeredAt: number, commands: number): void {
    this.commits.observe(this.#now() - answeredAt);
    this.batchSizes.observe(commands);
    this.transactions++;
  }

  /** A transaction failed: it runs again (`again`), or its commands are answered INTERNAL_ERROR. */
  failed(again: boolean): void {
    if (again) this.retries++;
    else this.errors++;
  }

  /**
   * A lease renewal committed; it was sent at `sentAt` for `leaseMs`. The database set the
   * lease from its transaction's start, which is after the statement left, so the lease
   * lasts at least until sentAt + leaseMs on this node's clock.
   */
  leaseRenewed(sentAt: number, leaseMs: number): void {
    this.#leaseUntil = Math.max(this.#leaseUntil, sentAt + leaseMs);
  }

  /** Ms until this node's lease ends (<= 0: it lapsed that long ago as far as this node knows). */
  leaseRemainingMs(): number {
    return this.#leaseUntil - this.#now();
  }
}
