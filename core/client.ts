// What the engine knows about one connection: its used tube, watch list,
// reservations and whether (and until when) it is waiting in reserve.
import { type Job, JobList } from "./job.ts";
import type { Tube, WaitNode } from "./tube.ts";

/** How a wait in reserve ended, when it did not end with a job. */
export type WaitEnd = "TIMED_OUT" | "DEADLINE_SOON";

export class Client {
  use: Tube;
  /** The watch list, an unordered multiset: removal moves the last entry into the gap (as 1.12). */
  readonly watching: Tube[] = [];
  readonly reserved = new JobList();
  producer = false;
  worker = false;
  /** Non-null while waiting in reserve: one node per watched tube. */
  waitNodes: WaitNode[] | null = null;
  /** Monotonic ms when the wait ends by timeout; Infinity for plain reserve. */
  waitUntil = Infinity;
  /** When the next wake check is due (timeout or DEADLINE_SOON), in the wake heap. */
  wakeAt = Infinity;
  wakeSlot = -1;
  /** Called when a wait ends: with the reserved job, or the reason it ended without one. */
  readonly onWake: (result: Job | WaitEnd) => void;

  constructor(use: Tube, onWake: (result: Job | WaitEnd) => void) {
    this.use = use;
    this.onWake = onWake;
  }

  get isWaiting(): boolean {
    return this.waitNodes !== null;
  }

  /** The deadline of this client's soonest reservation, or Infinity. */
  soonestDeadline(): number {
    let t = Infinity;
    for (let j = this.reserved.head; j; j = j.next) if (j.deadline < t) t = j.deadline;
    return t;
  }
}
