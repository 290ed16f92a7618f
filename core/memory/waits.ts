// Waiting clients: a reserve that found no job waits on every tube it watches until a
// job comes (handed over by serve()), its timeout passes (TIMED_OUT) or one of its
// reservations nears its TTR (DEADLINE_SOON). This file owns the wake heap and the
// count of waiting clients; the queue owns the jobs and hands them over through `give`.
import { type Client, type Job, readyBefore, type Tube, type WaitEnd } from "./model.ts";
import { Heap } from "./heap.ts";
import { DEADLINE_SOON_MS } from "../clients.ts";

const wakeSlot = {
  get: (c: Client) => c.wakeSlot,
  set: (c: Client, i: number) => {
    c.wakeSlot = i;
  },
};

export class Waits {
  /** Waiting clients by when they must be woken (timeout or DEADLINE_SOON). */
  readonly #wakes = new Heap<Client>((a, b) => a.wakeAt < b.wakeAt, wakeSlot);
  /** Ask the one timer to come back at atMs (monotonic). */
  readonly #schedule: (atMs: number) => void;
  /** Reserve j for c (the queue's bookkeeping); j is already out of its ready heap. */
  readonly #give: (c: Client, j: Job, now: number) => void;
  #count = 0;

  constructor(schedule: (atMs: number) => void, give: (c: Client, j: Job, now: number) => void) {
    this.#schedule = schedule;
    this.#give = give;
  }

  /** How many clients wait (the `current-waiting` gauge). */
  get count(): number {
    return this.#count;
  }

  /** c waits on every tube it watches until now + timeoutMs; `soonest` is its nearest TTR deadline. */
  begin(c: Client, now: number, timeoutMs: number, soonest: number): void {
    c.enterWait(now, timeoutMs);
    this.#count++;
    this.#wake(c, soonest);
  }

  /** End c's wait without telling it (it is going away, or gets a job). */
  end(c: Client): void {
    if (c.wakeSlot >= 0) this.#wakes.remove(c);
    c.leaveWait();
    this.#count--;
  }

  /** End c's wait and tell it why. */
  finish(c: Client, why: WaitEnd): void {
    this.end(c);
    c.onWake(why);
  }

  /** Wake every client whose timeout or DEADLINE_SOON has come. */
  wakeDue(now: number): void {
    for (let c = this.#wakes.peek(); c && c.wakeAt <= now; c = this.#wakes.peek()) {
      this.#wakes.pop();
      const soonest = c.soonestDeadline();
      if (soonest - DEADLINE_SOON_MS <= now) this.finish(c, "DEADLINE_SOON");
      else if (c.waitUntil <= now) this.finish(c, "TIMED_OUT");
      else this.#wake(c, soonest);
    }
  }

  /** When the next client must be woken (monotonic ms), or Infinity. */
  nextWake(): number {
    return this.#wakes.peek()?.wakeAt ?? Infinity;
  }

  /**
   * Hand ready jobs to waiting clients until no tube among `tubes` that is neither paused
   * nor held by a limit has both (a hand-over may hold the tube: each round looks again).
   * Each round takes the best (pri, id) job among those tubes and gives it to that
   * tube's longest-waiting client. Only tubes that just changed can newly have both,
   * so callers pass just those.
   */
  serve(tubes: Tube[], now: number): void {
    for (;;) {
      let bt: Tube | undefined;
      let bj: Job | undefined;
      for (const t of tubes) {
        if (t.waiting === 0 || t.unpauseAt > now || t.held) continue;
        const j = t.ready.peek();
        if (j && (!bj || readyBefore(j, bj))) {
          bt = t;
          bj = j;
        }
      }
      if (!bt || !bj) return;
      const c = bt.waiters.head!.client;
      this.end(c);
      bt.removeReady(bj);
      this.#give(c, bj, now);
      c.onWake(bj);
    }
  }

  #wake(c: Client, soonest: number): void {
    c.wakeAt = Math.min(c.waitUntil, soonest - DEADLINE_SOON_MS);
    if (c.wakeAt < Infinity) {
      this.#wakes.push(c);
      this.#schedule(c.wakeAt);
    }
  }
}
