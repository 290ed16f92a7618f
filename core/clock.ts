// Time for the engine. Deadlines use a monotonic clock (beanstalkd 1.12 uses the wall
// clock, so a clock jump moves every deadline: a difference we list in README);
// the wall clock is only for what must survive a restart (binlog) and for stats.

/** What the engine asks for time: a monotonic clock for deadlines and the wall clock. */
export interface Clock {
  /** Monotonic milliseconds (fractional), for deadlines and ages. */
  now(): number;
  /** Wall-clock milliseconds since the Unix epoch. */
  wallMs(): number;
}

/** The process clock: performance.now() for deadlines, Date.now() for the wall. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallMs: () => Date.now(),
};

/**
 * A clock that moves only when told to: tests drive scheduling without sleeping.
 *
 * @example
 * ```ts
 * import { ManualClock, Service } from "../mod.ts";
 *
 * const clock = new ManualClock();
 * const svc = new Service({ clock });
 * clock.advance(5000); // five seconds pass for every deadline in svc, at once
 * console.log(clock.now()); // 6000
 * svc.close();
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #wallOffset: number;
  /** Starts at `startMs` on the monotonic clock and `wallStartMs` on the wall clock. */
  constructor(startMs = 1000, wallStartMs = 1_700_000_000_000) {
    this.#now = startMs;
    this.#wallOffset = wallStartMs - startMs;
  }
  /** Monotonic milliseconds. */
  now(): number {
    return this.#now;
  }
  /** Wall-clock milliseconds since the epoch. */
  wallMs(): number {
    return this.#now + this.#wallOffset;
  }
  /** Move both clocks forward by `ms`. */
  advance(ms: number): void {
    this.#now += ms;
  }
}
