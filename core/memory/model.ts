// The in-memory engine's data model in one file, read top to bottom (beanstalkd's dat.h):
// a Job, the Tube that holds it (ready and delayed heaps, buried list; the waiting
// clients are core/clients.ts's part of it), and the Client (core/clients.ts's
// connection, plus its reservations). They refer to each other, so they live together:
// no import cycle between files. The heaps the tubes keep their jobs in are heap.ts
// (beanstalkd's heap.c), the intrusive lists core/list.ts.
import type { JobState, RetryPolicy, TubeLimits, WaitEnd, Wake } from "../engine.ts";
import { NodeClient, NodeTube } from "../clients.ts";
import { List } from "../list.ts";
import { Heap } from "./heap.ts";

export type { JobState, WaitEnd };

// ---- Job ---------------------------------------------------------------------------

/** Priorities below this count as "urgent" in stats (beanstalkd URGENT_THRESHOLD). */
export const URGENT_PRI = 1024;

/**
 * What a job gathers only once it is reserved, buried, kicked or delayed: a state other
 * than ready and its deadline, its counters, its reservation, its list links, its delay
 * and its slot in the timer's heaps. A job put without a delay that waits (the many, in
 * a deep queue) has none, and costs 9 fields instead of 22 (memory per job is a goal:
 * 96 bytes against 200 on Deno, 112 against 224 on Bun); once made it stays, as the
 * counters must. A job that has one costs more than with every field in the job would
 * (Deno 224 bytes against 200, Bun 272 against 224): the price of the second object,
 * paid by reserved, delayed and buried jobs.
 */
class JobLife {
  state: JobState = "ready";
  deadline = 0;
  delayMs = 0;
  timeSlot = -1;
  reserves = 0;
  timeouts = 0;
  releases = 0;
  buries = 0;
  kicks = 0;
  reservedAt = 0;
  owner: Client | null = null;
  prev: Job | null = null;
  next: Job | null = null;
}

/** A body range packed into one small integer: offset * SPAN + length (length < SPAN, offset < MAX_OFF). */
const SPAN = 4096;
const MAX_OFF = 2 ** 19;

/**
 * One job: its body, priority, TTR, times and ready-heap slot; the rest in a JobLife
 * made when first needed, read and written as fields all the same.
 */
export class Job {
  readonly id: number;
  /** Changes only when a dead letter moves to its dead-letter tube (core/memory/extensions.ts). */
  tube: Tube;
  /**
   * Where the body (with its trailing CRLF) lives: a range of a buffer that may be
   * shared with other bodies, as offset and length packed in one field (-1: the whole
   * buffer). Not a Uint8Array view, which would cost an object per job.
   */
  readonly #buf: ArrayBufferLike;
  readonly #span: number;
  pri: number;
  ttrMs: number;
  /** Monotonic ms when created (may lie before process start after a restart); see jobMs. */
  createdAt: number;
  /** Slot in the tube's ready or delayed heap. */
  tubeSlot = -1;
  #life: JobLife | null = null;

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
    const off = body.byteOffset, len = body.length;
    if (off === 0 && len === body.buffer.byteLength) {
      this.#buf = body.buffer;
      this.#span = -1;
    } else if (len < SPAN && off < MAX_OFF) {
      this.#buf = body.buffer;
      this.#span = off * SPAN + len;
    } else {
      // A large view into a larger buffer (not what the protocol makes): a copy of its own.
      this.#buf = body.slice().buffer;
      this.#span = -1;
    }
    this.pri = pri;
    this.ttrMs = ttrMs;
    this.createdAt = jobMs(createdAt);
    if (delayMs !== 0) this.delayMs = delayMs; // after createdAt: the second object starts from it
  }

  /** Body including its trailing CRLF, exactly as sent; never mutate it. */
  get body(): Uint8Array {
    const span = this.#span;
    if (span < 0) return new Uint8Array(this.#buf);
    return new Uint8Array(this.#buf, Math.floor(span / SPAN), span % SPAN);
  }

  /** Body length on the wire (without the trailing CRLF). */
  get size(): number {
    const span = this.#span;
    return (span < 0 ? this.#buf.byteLength : span % SPAN) - 2;
  }

  /** The second object, made with the values the getters gave without it (deadline: createdAt). */
  #made(): JobLife {
    if (this.#life !== null) return this.#life;
    const life = new JobLife();
    life.deadline = this.createdAt;
    return this.#life = life;
  }

  /**
   * Monotonic ms: delayed → when it becomes ready; reserved → when TTR ends; ready →
   * when it became ready (for the metrics port's queue latency and oldest-job age; one
   * field for the three, as a job is in one state at a time). A job ready since its put
   * has none of its own: it became ready when it was created.
   */
  get deadline(): number {
    return this.#life === null ? this.createdAt : this.#life.deadline;
  }
  set deadline(t: number) {
    if (t !== this.createdAt || this.#life !== null) this.#made().deadline = t;
  }
  get state(): JobState {
    return this.#life === null ? "ready" : this.#life.state;
  }
  set state(s: JobState) {
    if (s !== "ready" || this.#life !== null) this.#made().state = s;
  }
  /** Slot in the queue's delayed-promotion or TTR heap. */
  get timeSlot(): number {
    return this.#life === null ? -1 : this.#life.timeSlot;
  }
  set timeSlot(i: number) {
    if (i !== -1 || this.#life !== null) this.#made().timeSlot = i;
  }
  /** The delay it was put or last released with, ms. */
  get delayMs(): number {
    return this.#life === null ? 0 : this.#life.delayMs;
  }
  set delayMs(ms: number) {
    if (ms !== 0 || this.#life !== null) this.#made().delayMs = ms;
  }
  get reserves(): number {
    return this.#life === null ? 0 : this.#life.reserves;
  }
  set reserves(n: number) {
    this.#made().reserves = n;
  }
  get timeouts(): number {
    return this.#life === null ? 0 : this.#life.timeouts;
  }
  set timeouts(n: number) {
    this.#made().timeouts = n;
  }
  get releases(): number {
    return this.#life === null ? 0 : this.#life.releases;
  }
  set releases(n: number) {
    this.#made().releases = n;
  }
  get buries(): number {
    return this.#life === null ? 0 : this.#life.buries;
  }
  set buries(n: number) {
    this.#made().buries = n;
  }
  get kicks(): number {
    return this.#life === null ? 0 : this.#life.kicks;
  }
  set kicks(n: number) {
    this.#made().kicks = n;
  }
  /** Monotonic ms when it was last reserved (for the metrics port). */
  get reservedAt(): number {
    return this.#life === null ? 0 : this.#life.reservedAt;
  }
  set reservedAt(t: number) {
    this.#made().reservedAt = t;
  }
  /** The connection holding the reservation. */
  get owner(): Client | null {
    return this.#life === null ? null : this.#life.owner;
  }
  set owner(c: Client | null) {
    if (c !== null || this.#life !== null) this.#made().owner = c;
  }
  /** Links of the one list the job is on: its tube's buried FIFO or its owner's reserved list. */
  get prev(): Job | null {
    return this.#life === null ? null : this.#life.prev;
  }
  set prev(j: Job | null) {
    if (j !== null || this.#life !== null) this.#made().prev = j;
  }
  get next(): Job | null {
    return this.#life === null ? null : this.#life.next;
  }
  set next(j: Job | null) {
    if (j !== null || this.#life !== null) this.#made().next = j;
  }
}

/**
 * A time as a job keeps it: whole ms, rounded down. Whole because V8 (Deno) keeps a
 * field that ever holds a fractional number as a separate 16-byte heap number per job,
 * where a small integer sits in the object itself (memory per job is a goal). Down, not
 * up: stats-job's time-left (whole seconds, truncated) must never read more than 1.12's
 * exact value, so a deadline may come up to a millisecond early, the timer's own grain.
 */
export function jobMs(t: number): number {
  return Math.floor(t);
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

// ---- Tube --------------------------------------------------------------------------

export class Tube extends NodeTube<Client> {
  readonly ready = new Heap<Job>(readyBefore, tubeSlot);
  readonly delayed = new Heap<Job>(deadlineBefore, tubeSlot);
  readonly buried = new List<Job>();
  /** Ready jobs with pri < 1024. */
  urgent = 0;
  reserved = 0;
  totalJobs = 0;
  cmdDelete = 0;
  cmdPauseTube = 0;
  /** Length of the current pause in ms, and when it ends (monotonic); 0 when not paused. */
  pauseMs = 0;
  unpauseAt = 0;
  /** Extensions (core/memory/extensions.ts): the retry policy, and the jobs by put-unique key; null when none. */
  policy: RetryPolicy | null = null;
  keys: Map<string, Job> | null = null;
  /** set-concurrency / set-rate (TubeLimit below; their holds: core/memory/limits.ts); null when none. */
  limits: TubeLimit | null = null;
  /**
   * A limit keeps the tube's ready jobs from being reserved now. Kept up to date by
   * limits.ts (a hold by the rate ends by the timer), so a reserve pays one test of a
   * boolean for it; a boolean, not a time, so the field never turns into a boxed double
   * on every tube once one tube is held (that cost a tube without limits ~5% of a
   * put + reserve + delete in process).
   */
  held = false;

  /** Every job of this tube, in any state. */
  get jobs(): number {
    return this.ready.size + this.delayed.size + this.buried.size + this.reserved;
  }

  /** Nothing refers to this tube any more (the queue keeps "default" regardless; a policy or a limit keeps a tube). */
  override get unreferenced(): boolean {
    return super.unreferenced && this.jobs === 0 && this.policy === null && this.limits === null;
  }

  /** `now`: monotonic ms, kept in the job's deadline: when it became ready (queue latency metrics). */
  pushReady(j: Job, now: number): void {
    j.state = "ready";
    j.deadline = jobMs(now);
    this.ready.push(j);
    if (j.pri < URGENT_PRI) this.urgent++;
  }

  removeReady(j: Job): void {
    this.ready.remove(j);
    if (j.pri < URGENT_PRI) this.urgent--;
  }
}

/** A tube's limits (set-concurrency, set-rate) and the recent reservations its rate counts. */
export class TubeLimit {
  readonly concurrency: number;
  readonly rateCount: number;
  readonly windowMs: number;
  /** Monotonic ms until which these limits hold the tube (Infinity: until a reservation ends; 0: not held). */
  heldUntil = 0;
  /**
   * Monotonic ms of the tube's latest reservations, oldest first, from #head on: at most
   * rateCount of them and none that has left the window, so memory is bounded by the
   * reservations one window holds.
   */
  #times: number[] = [];
  #head = 0;

  /** `before`: the tube's limits until now, whose reservations the new rate goes on counting. */
  constructor(l: TubeLimits, before: TubeLimit | null) {
    this.concurrency = l.concurrency;
    this.rateCount = l.rateCount;
    this.windowMs = l.rateCount > 0 ? l.rateWindowSec * 1000 : 0;
    if (before !== null && this.rateCount > 0) {
      this.#times = before.#times.slice(Math.max(before.#head, before.#times.length - this.rateCount));
    }
  }

  /** As the protocol shows them. */
  get view(): TubeLimits {
    return { concurrency: this.concurrency, rateCount: this.rateCount, rateWindowSec: this.windowMs / 1000 };
  }

  /** A reservation of the tube at `now`. */
  record(now: number): void {
    if (this.rateCount === 0) return;
    this.#times.push(now);
    if (this.#times.length - this.#head > this.rateCount) this.#head++;
    this.#compact();
  }

  /** When the rate next allows a reservation (monotonic ms; at or before now: now). */
  rateFreeAt(now: number): number {
    if (this.rateCount === 0) return 0;
    // a reservation at t counts in every window that holds t: until t + window
    while (this.#head < this.#times.length && this.#times[this.#head]! + this.windowMs <= now) this.#head++;
    this.#compact();
    return this.#times.length - this.#head >= this.rateCount ? this.#times[this.#head]! + this.windowMs : 0;
  }

  #compact(): void {
    if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#head);
      this.#head = 0;
    }
  }
}

// ---- Client ------------------------------------------------------------------------

/** One connection as the engine sees it: core/clients.ts's, plus the jobs it holds. */
export class Client extends NodeClient<Tube> {
  readonly reserved = new List<Job>();
  /** Slot in the wake heap (waits.ts). */
  wakeSlot = -1;

  constructor(use: Tube, onWake: Wake) {
    super(use, onWake);
  }

  reservedIds(): number[] {
    const ids: number[] = [];
    for (let j = this.reserved.head; j; j = j.next) ids.push(j.id);
    return ids.sort((a, b) => a - b);
  }

  /** The deadline of this client's soonest reservation, or Infinity. */
  soonestDeadline(): number {
    let t = Infinity;
    for (let j = this.reserved.head; j; j = j.next) if (j.deadline < t) t = j.deadline;
    return t;
  }
}
