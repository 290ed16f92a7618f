// The in-memory engine's time: every delayed job by when it becomes ready, every
// reserved job by when its TTR ends, and the one timer (beanstalkd's prottick). The
// queue asks for the timer with at(), and the timer calls the queue's tick, which
// does what is due and says when it next has work. No timer per job.
import { Heap } from "./heap.ts";
import { deadlineBefore, type Job, timeSlot } from "./model.ts";
import type { Clock, TimerHandle } from "../clock.ts";

/** The longest the one timer sleeps (1.12 wakes at least hourly too). */
const MAX_SLEEP_MS = 3_600_000;

export class Schedule {
  /** Delayed jobs, by when they become ready (then id). */
  readonly delayed = new Heap<Job>(deadlineBefore, timeSlot);
  /** Reserved jobs, by when their TTR ends (then id). A job is in one of the two at most. */
  readonly ttr = new Heap<Job>(deadlineBefore, timeSlot);
  readonly #clock: Clock;
  /** Does what is due; returns when it next has work (monotonic ms, or Infinity). */
  readonly #tick: () => number;
  #timer: TimerHandle | undefined;
  #timerAt = Infinity;

  constructor(clock: Clock, tick: () => number) {
    this.#clock = clock;
    this.#tick = tick;
  }

  /** The earliest delayed or TTR deadline (monotonic ms), or Infinity. */
  get nextDeadline(): number {
    const d = this.delayed.peek();
    const r = this.ttr.peek();
    return Math.min(d ? d.deadline : Infinity, r ? r.deadline : Infinity);
  }

  /** The timer comes back at atMs at the latest (monotonic). */
  at(atMs: number): void {
    if (atMs >= this.#timerAt) return;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timerAt = atMs;
    const ms = Math.min(Math.max(0, atMs - this.#clock.now()), MAX_SLEEP_MS);
    this.#timer = this.#clock.setTimer(this.#fire, Math.ceil(ms));
  }

  /** No more timer. */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#timerAt = -Infinity; // at() arms nothing from now on
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const next = this.#tick();
    if (next < Infinity) this.at(next);
  };
}
