// Time for the engine. Deadlines use a monotonic clock (beanstalkd 1.12 uses the wall
// clock, so a clock jump moves every deadline: a difference we list in README);
// the wall clock is only for what must survive a restart (binlog) and for stats.

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

/** A clock that moves only when told to: tests drive scheduling without sleeping. */
export class ManualClock implements Clock {
  #now: number;
  #wallOffset: number;
  constructor(startMs = 1000, wallStartMs = 1_700_000_000_000) {
    this.#now = startMs;
    this.#wallOffset = wallStartMs - startMs;
  }
  now(): number {
    return this.#now;
  }
  wallMs(): number {
    return this.#now + this.#wallOffset;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}
