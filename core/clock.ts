// Time for the engine. Deadlines use a monotonic clock (beanstalkd 1.12 uses the wall
// clock, so a clock jump moves every deadline: a difference we list in README);
// the wall clock is only for what must survive a restart (binlog) and for stats.

/** What the engine asks for time: a monotonic clock for deadlines, the wall clock, and its one timer. */
export interface Clock {
  /** Monotonic milliseconds (fractional), for deadlines and ages. */
  now(): number;
  /** Wall-clock milliseconds since the Unix epoch. */
  wallMs(): number;
  /** Call `f` once, `ms` from now (the engine's one timer; it keeps at most one set). */
  setTimer(f: () => void, ms: number): TimerHandle;
  /** Cancel a timer that has not fired (a fired or cleared one is ignored). */
  clearTimer(t: TimerHandle): void;
}

/** A set timer, as setTimer returned it. */
export type TimerHandle = unknown;

/** The process clock: performance.now() for deadlines, Date.now() for the wall, setTimeout. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallMs: () => Date.now(),
  setTimer: (f, ms) => setTimeout(f, ms),
  clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
};

/**
 * How work waits for the event loop. `afterIO`: until the loop has polled the sockets
 * (fairness between connections; adapters/sliced_turns.ts).
 * `afterTurn`: until this turn's callbacks have run, without waiting for a poll (work
 * that gathers what this turn's reads produced, such as the log's shared append).
 */
export interface Turns {
  /** Run f once the event loop has polled the sockets. */
  afterIO(f: () => void): void;
  /** Run f once this turn's callbacks have run. */
  afterTurn(f: () => void): void;
}

/** setImmediate where the runtime has it (both do), not setTimeout(0), which is clamped to milliseconds. */
function immediate(f: () => void): void {
  const set = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
  if (set) set(f);
  else setTimeout(f, 0);
}

/** Turns by plain setImmediate: the default; under a flood runtimeTurns()' slices are fairer (adapters/sliced_turns.ts). */
export const immediateTurns: Turns = { afterIO: immediate, afterTurn: immediate };

/**
 * A clock that moves only when told to: tests drive scheduling without sleeping.
 *
 * @example
 * ```ts
 * import { ManualClock, memoryEngine, Service } from "../mod.ts";
 *
 * const clock = new ManualClock();
 * const svc = new Service(memoryEngine({ clock }));
 * clock.advance(5000); // five seconds pass for every deadline in svc, at once
 * console.log(clock.now()); // 6000
 * svc.close();
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #wallOffset: number;
  /** Timers not yet fired, by when they fire (monotonic ms). */
  #timers = new Set<{ at: number; f: () => void }>();
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
  /** Fires when advance() reaches it (never by itself). */
  setTimer(f: () => void, ms: number): TimerHandle {
    const t = { at: this.#now + Math.max(0, ms), f };
    this.#timers.add(t);
    return t;
  }
  clearTimer(t: TimerHandle): void {
    this.#timers.delete(t as { at: number; f: () => void });
  }
  /** Move both clocks forward by `ms`, then fire every timer that is due, soonest first. */
  advance(ms: number): void {
    this.#now += ms;
    for (;;) {
      let due: { at: number; f: () => void } | undefined;
      for (const t of this.#timers) if (t.at <= this.#now && (!due || t.at < due.at)) due = t;
      if (!due) return;
      this.#timers.delete(due);
      due.f();
    }
  }
}
