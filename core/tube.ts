// A tube: its ready heap, delayed heap, buried FIFO, waiting connections and counters.
import { Heap } from "./heap.ts";
import { deadlineBefore, type Job, JobList, readyBefore, tubeSlot, URGENT_PRI } from "./job.ts";
import type { Client } from "./client.ts";

/** One entry of a tube's waiting list; a waiting client has one per watched tube. */
export interface WaitNode {
  client: Client;
  tube: Tube;
  prev: WaitNode | null;
  next: WaitNode | null;
}

export class Tube {
  readonly name: string;
  readonly ready = new Heap<Job>(readyBefore, tubeSlot);
  readonly delayed = new Heap<Job>(deadlineBefore, tubeSlot);
  readonly buried = new JobList();
  /** Ready jobs with pri < 1024. */
  urgent = 0;
  reserved = 0;
  /** Waiting connections, first come first served (1.12's order is not FIFO; we fix that). */
  waitHead: WaitNode | null = null;
  waitTail: WaitNode | null = null;
  waiting = 0;
  using = 0;
  watching = 0;
  totalJobs = 0;
  cmdDelete = 0;
  cmdPauseTube = 0;
  /** Length of the current pause in ms, and when it ends (monotonic); 0 when not paused. */
  pauseMs = 0;
  unpauseAt = 0;
  /** Position in the queue's tube list (swap-remove order, as list-tubes shows). */
  listSlot = -1;

  constructor(name: string) {
    this.name = name;
  }

  /** Every job of this tube, in any state. */
  get jobs(): number {
    return this.ready.size + this.delayed.size + this.buried.size + this.reserved;
  }

  /** Nothing refers to this tube any more (the queue keeps "default" regardless). */
  get unreferenced(): boolean {
    return this.using === 0 && this.watching === 0 && this.jobs === 0;
  }

  pushReady(j: Job): void {
    j.state = "ready";
    this.ready.push(j);
    if (j.pri < URGENT_PRI) this.urgent++;
  }

  removeReady(j: Job): void {
    this.ready.remove(j);
    if (j.pri < URGENT_PRI) this.urgent--;
  }

  addWaiter(client: Client): WaitNode {
    const n: WaitNode = { client, tube: this, prev: this.waitTail, next: null };
    if (this.waitTail) this.waitTail.next = n;
    else this.waitHead = n;
    this.waitTail = n;
    this.waiting++;
    return n;
  }

  removeWaiter(n: WaitNode): void {
    if (n.prev) n.prev.next = n.next;
    else this.waitHead = n.next;
    if (n.next) n.next.prev = n.prev;
    else this.waitTail = n.prev;
    n.prev = n.next = null;
    this.waiting--;
  }
}
