// Turns (core/clock.ts) in slices: how a busy connection lets the sockets be polled, on
// both runtimes. Deno 2.9 does not poll sockets between setImmediate callbacks, nor
// between continuations of socket writes that complete at once: a few callback chains
// doing a fraction of a millisecond of work each (setImmediate, or `await conn.write()`
// in a loop) delay an unrelated socket's round trip by seconds, while setTimeout(0) does
// not. So a client that pipelines a flood held every other client for seconds: each of
// its batches was followed by another before any read was seen.
//
// setTimeout alone costs a millisecond or more per yield, which would cap a connection
// streaming replies at one 64 KiB batch per timer tick. So: setImmediate for a slice of
// SLICE_MS after a timer turn, then every yield waits for the next timer turn, before
// which Deno polls the sockets; a turn runs the waiting for at most one slice too. So the
// sockets are polled every few milliseconds however many connections are busy, and the
// busy ones are served in rounds, as in beanstalkd. Bun polls its sockets between
// setImmediate callbacks, but a turn of a thousand flooders' batches still kept another
// client waiting several times longer than beanstalkd does; in slices it waits far less,
// with no change in throughput. What was measured: docs/benchmark.md (Measurements behind
// the code) and docs/reliability.md.
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
