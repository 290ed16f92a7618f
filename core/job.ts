// A job and the orderings the heaps use.
import type { JobState } from "./wal.ts";
import type { Tube } from "./tube.ts";
import type { Client } from "./client.ts";

export type { JobState };

/** Priorities below this count as "urgent" in stats (beanstalkd URGENT_THRESHOLD). */
export const URGENT_PRI = 1024;

export class Job {
  readonly id: number;
  readonly tube: Tube;
  /**
   * Where the body (with its trailing CRLF) lives: a range of a buffer that may be
   * shared with other bodies. Kept as three fields rather than a Uint8Array view,
   * which would cost an object per job (memory per job is a goal).
   */
  readonly #buf: ArrayBufferLike;
  readonly #off: number;
  readonly #len: number;
  pri: number;
  delayMs: number;
  ttrMs: number;
  /** Monotonic ms when created (may lie before process start after a restart). */
  createdAt: number;
  state: JobState = "ready";
  /** Monotonic ms: delayed → when it becomes ready; reserved → when TTR ends. */
  deadline = 0;
  reserves = 0;
  timeouts = 0;
  releases = 0;
  buries = 0;
  kicks = 0;
  /** Slot in the tube's ready or delayed heap. */
  tubeSlot = -1;
  /** Slot in the queue's delayed-promotion or TTR heap. */
  timeSlot = -1;
  /** The connection holding the reservation. */
  owner: Client | null = null;
  /** Links of the one list the job is on: its tube's buried FIFO or its owner's reserved list. */
  prev: Job | null = null;
  next: Job | null = null;

  constructor(
    id: number,
    tube: Tube,
    pri: number,
    delayMs: number,
    ttrMs: number,
    body: Uint8Array,
    createdAt: number,
  ) {
    this.id = id;
    this.tube = tube;
    this.#buf = body.buffer;
    this.#off = body.byteOffset;
    this.#len = body.length;
    this.pri = pri;
    this.delayMs = delayMs;
    this.ttrMs = ttrMs;
    this.createdAt = createdAt;
  }

  /** Body including its trailing CRLF, exactly as sent; never mutate it. */
  get body(): Uint8Array {
    return new Uint8Array(this.#buf, this.#off, this.#len);
  }

  /** Body length on the wire (without the trailing CRLF). */
  get size(): number {
    return this.#len - 2;
  }
}

/** Ready order: priority, then id (ids are unique, so the order is total). */
export function readyBefore(a: Job, b: Job): boolean {
  return a.pri < b.pri || (a.pri === b.pri && a.id < b.id);
}

/** Delayed and TTR order: deadline, then id. */
export function deadlineBefore(a: Job, b: Job): boolean {
  return a.deadline < b.deadline || (a.deadline === b.deadline && a.id < b.id);
}

export const tubeSlot = {
  get: (j: Job) => j.tubeSlot,
  set: (j: Job, i: number) => {
    j.tubeSlot = i;
  },
};

export const timeSlot = {
  get: (j: Job) => j.timeSlot,
  set: (j: Job, i: number) => {
    j.timeSlot = i;
  },
};

/** An intrusive doubly linked FIFO of jobs (buried lists, a client's reservations). */
export class JobList {
  head: Job | null = null;
  tail: Job | null = null;
  size = 0;

  push(j: Job): void {
    j.prev = this.tail;
    j.next = null;
    if (this.tail) this.tail.next = j;
    else this.head = j;
    this.tail = j;
    this.size++;
  }

  remove(j: Job): void {
    if (j.prev) j.prev.next = j.next;
    else this.head = j.next;
    if (j.next) j.next.prev = j.prev;
    else this.tail = j.prev;
    j.prev = j.next = null;
    this.size--;
  }
}
