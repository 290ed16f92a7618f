// Turns (core/clock.ts) in slices: how a busy connection lets the sockets be polled, on
// both runtimes. Deno 2.9 does not poll sockets between setImmediate callbacks, nor between continuations of socket writes that complete at once: measured on 2.9.6,
// ten callback chains doing 0.2 ms of work each (setImmediate, or `await conn.write()`
// in a loop) delayed an unrelated socket's round trip to 0.3 s and 1.9 s, 1.4 s and
// 8.7 s with 1 ms of work, while setTimeout(0) kept it at 0.1 ms. So a client that
// pipelines a flood (1,000 of them peeking a 60 KB job, issue 7) held every other client
// for seconds: each of its batches was followed by another before any read was seen.
//
// setTimeout alone costs a millisecond or more per yield, which would cap a connection
// streaming replies at one 64 KiB batch per timer tick. So: setImmediate for a slice of
// SLICE_MS after a timer turn, then every yield waits for the next timer turn, before
// which Deno polls the sockets; a turn runs the waiting for at most one slice too. So the
// sockets are polled every few milliseconds however many connections are busy, and the
// busy ones are served in rounds, as in beanstalkd. Measured (1,000 peek flooders, 20 s,
// tests/system/memory_test.ts with TUBEWAY_SOAK=1): another client's worst wait went from
// 0.3-2.9 s (up to 12 s on a busy machine) to 0.1 s. Bun polls its sockets between
// setImmediate callbacks, but a turn of 1,000 flooders' batches still kept another client
// waiting 221-281 ms (beanstalkd 1.12: 35 ms on the same VM); in slices, 38-93 ms (issue
// 21, section 2), with no change in throughput within noise (put-50, put-50x16, rd-50x16).
import { immediateTurns, type Turns } from "../core/clock.ts";

/** How long yields may go by setImmediate before a timer turn lets the sockets be polled. */
const SLICE_MS = 4;

export class SlicedTurns implements Turns {
  #sliceStart = -Infinity;
  #timerSet = false;
  /** Callbacks waiting for the next timer turn, oldest first. */
  #waiting: (() => void)[] = [];

  readonly afterTurn = immediateTurns.afterTurn;

  readonly afterIO = (f: () => void): void => {
    if (!this.#timerSet && performance.now() - this.#sliceStart < SLICE_MS) {
      setImmediate(f);
      return;
    }
    this.#waiting.push(f);
    this.#arm();
  };

  #arm(): void {
    if (this.#timerSet) return;
    this.#timerSet = true;
    setTimeout(this.#turn, 0);
  }

  /**
   * A timer turn: run the waiting callbacks, oldest first, for at most one slice; those
   * left over go first at the next turn, so 1,000 busy connections are served in rounds
   * with the sockets polled between slices, not in one long run.
   */
  readonly #turn = (): void => {
    this.#timerSet = false;
    this.#sliceStart = performance.now();
    const run = this.#waiting;
    this.#waiting = [];
    let i = 0;
    while (i < run.length) {
      run[i++]!();
      if (performance.now() - this.#sliceStart >= SLICE_MS) break;
    }
    if (i < run.length) {
      this.#waiting = run.slice(i).concat(this.#waiting);
      this.#arm();
    }
  };
}
