// Per-tube flow limits of the in-memory engine (set-concurrency, set-rate;
// docs/extensions.md): at most N jobs of a tube reserved at once, at most N reservations
// in any window of S seconds. A tube with limits keeps in Tube.held whether they keep its
// ready jobs from being reserved now (and in its TubeLimit until when); reserve and the
// serving of waiting clients test it beside the pause, so a tube without limits pays one
// test of a boolean and nothing else. The hold is recomputed when a reservation of
// the tube starts or ends and when the limits change; a hold by the rate ends at a known
// time, for which the engine's one timer is asked (core/memory/schedule.ts), and then the
// tube's waiting clients are served: no polling, no timer of its own.
import { type Tube, TubeLimit } from "./model.ts";
import type { TubeLimits } from "../engine.ts";

/** The tubes' holds, and the ones the timer is to open again. */
export class Limits {
  /** Tubes held by their rate until a known time, for the timer. */
  readonly #rateHeld = new Set<Tube>();
  /** Ask the one timer to come back at atMs (monotonic). */
  readonly #at: (atMs: number) => void;

  constructor(at: (atMs: number) => void) {
    this.#at = at;
  }

  /** t's limits from now on; none when both are 0 (the caller serves its waiters and may drop it). */
  set(t: Tube, l: TubeLimits, now: number): void {
    if (l.concurrency === 0 && l.rateCount === 0) {
      t.limits = null;
      t.held = false;
      this.#rateHeld.delete(t);
      return;
    }
    t.limits = new TubeLimit(l, t.limits);
    this.#hold(t, now);
  }

  /** A reservation of t (a tube with limits) began. */
  reserved(t: Tube, now: number): void {
    t.limits!.record(now);
    this.#hold(t, now);
  }

  /** A reservation of t (a tube with limits) ended: a hold by its concurrency may end (the caller serves). */
  ended(t: Tube, now: number): void {
    if (t.limits!.heldUntil === Infinity) this.#hold(t, now);
  }

  /** For the timer: tubes whose hold by the rate has run out join `touched`, whose waiters are then served. */
  due(now: number, touched: Set<Tube>): void {
    for (const t of this.#rateHeld) {
      if (t.limits!.heldUntil > now) continue;
      this.#rateHeld.delete(t);
      this.#hold(t, now);
      if (!t.held) touched.add(t);
    }
  }

  /** When a hold by a rate next runs out (monotonic ms), or Infinity. */
  get nextDue(): number {
    let next = Infinity;
    for (const t of this.#rateHeld) if (t.limits!.heldUntil < next) next = t.limits!.heldUntil;
    return next;
  }

  #hold(t: Tube, now: number): void {
    const l = t.limits!;
    const until = l.concurrency > 0 && t.reserved >= l.concurrency ? Infinity : l.rateFreeAt(now);
    l.heldUntil = until;
    t.held = until > now;
    if (until > now && until < Infinity) {
      this.#rateHeld.add(t);
      this.#at(until);
    } else this.#rateHeld.delete(t);
  }
}

/** Ready jobs of t a limit keeps from being reserved now. */
export function heldJobs(t: Tube): number {
  return t.held ? t.ready.size : 0;
}
