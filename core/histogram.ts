// A fixed-bucket latency histogram for the metrics port. Observing is a short loop
// over the bounds and two number writes: no allocation, cheap enough for every
// reserve and delete. Counts are kept per bucket; Prometheus wants them cumulative,
// which the renderer adds up at scrape time.

/** Upper bounds (ms) for queue latencies: 1 ms up to 1 hour. */
export const QUEUE_BOUNDS_MS: readonly number[] = [
  1,
  5,
  10,
  50,
  100,
  500,
  1000,
  5000,
  10_000,
  30_000,
  60_000,
  300_000,
  900_000,
  3_600_000,
];

/** Upper bounds (ms) for fsync latency: 0.1 ms up to 5 s. */
export const FSYNC_BOUNDS_MS: readonly number[] = [0.1, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000];

export class Histogram {
  readonly boundsMs: readonly number[];
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last slot is +Inf. */
  readonly counts: Float64Array;
  sumMs = 0;
  count = 0;

  constructor(boundsMs: readonly number[]) {
    this.boundsMs = boundsMs;
    this.counts = new Float64Array(boundsMs.length + 1);
  }

  observe(ms: number): void {
    const b = this.boundsMs;
    let i = 0;
    while (i < b.length && ms > b[i]!) i++;
    this.counts[i] = this.counts[i]! + 1;
    this.sumMs += ms;
    this.count++;
  }
}
