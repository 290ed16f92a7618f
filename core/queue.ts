// The queue engine: every state change of jobs, tubes and waiting clients.
// Pure TypeScript, no I/O: time comes from the injected clock, the binlog sits behind
// the Wal interface, and the one timer lives with the caller (see tick()).
import {
  type Client,
  deadlineBefore,
  Heap,
  Job,
  jobMs,
  readyBefore,
  timeSlot,
  type Tube,
  type WaitEnd,
} from "./model.ts";
import { DEADLINE_SOON_MS, Waits } from "./waits.ts";
import type { Clock } from "./clock.ts";
import { Counters, type Gauges, type JobStats, type TubeStats } from "./stats.ts";
import { Tubes } from "./tubes.ts";
import { Records } from "./records.ts";
import { type JobRecord, type JobState, noWal, type Wal } from "./wal.ts";
import { DEFAULT_BINLOG_SIZE } from "./config.ts";
import { Histogram, QUEUE_BOUNDS_MS } from "./histogram.ts";
import * as upkeep from "./queue_upkeep.ts";
import { JobTable } from "./job_table.ts";

export { DEADLINE_SOON_MS };
export type { Refusal } from "./queue_upkeep.ts";

export interface QueueOptions {
  clock: Clock;
  /** Largest body accepted by put (-z), bytes. */
  maxJobSize?: number;
  wal?: Wal;
}

export class Queue {
  readonly clock: Clock;
  readonly counters = new Counters();
  /** Queue latencies for the metrics port: ready -> reserved, reserved -> deleted (ms). */
  readonly latency = {
    readyToReserve: new Histogram(QUEUE_BOUNDS_MS),
    reserveToDelete: new Histogram(QUEUE_BOUNDS_MS),
  };
  readonly maxJobSize: number;
  readonly wal: Wal;
  /** Drain mode (SIGUSR1): puts are refused from then on. */
  draining = false;
  /** Called with the new earliest deadline whenever one appears that is sooner than any before. */
  onDeadline: ((atMs: number) => void) | undefined;

  readonly #jobs = new JobTable<Job>();
  readonly #tubes = new Tubes();
  readonly #records: Records;
  /** Every delayed job, for promotion; every reserved job, for TTR expiry. */
  readonly #delayed = new Heap<Job>(deadlineBefore, timeSlot);
  readonly #ttr = new Heap<Job>(deadlineBefore, timeSlot);
  readonly #waits = new Waits((atMs) => this.#schedule(atMs), (c, j, now) => this.#reserveFor(c, j, now));
  readonly #logging: boolean;
  /** The same state and helpers, for the off-hot-path work in queue_upkeep.ts. */
  readonly #parts: upkeep.QueueParts;
  #nextId = 1;
  #armed = Infinity;
  readonly #presence: upkeep.Presence = { connections: 0, producers: 0, workers: 0 };

  constructor(opts: QueueOptions) {
    this.clock = opts.clock;
    this.maxJobSize = opts.maxJobSize ?? 65535;
    this.wal = opts.wal ?? noWal(DEFAULT_BINLOG_SIZE);
    this.#logging = this.wal.logs;
    this.#records = new Records(opts.clock);
    this.#parts = {
      clock: this.clock,
      wal: this.wal,
      logging: this.#logging,
      counters: this.counters,
      presence: this.#presence,
      jobs: this.#jobs,
      tubes: this.#tubes,
      delayed: this.#delayed,
      ttr: this.#ttr,
      waits: this.#waits,
      unlink: (j) => this.#unlink(j),
      reserveFor: (c, j, now) => this.#reserveFor(c, j, now),
      markWorker: (c) => this.#markWorker(c),
      serve: (tubes) => this.#serve(tubes),
      schedule: (atMs) => this.#schedule(atMs),
      logUpdate: (j, state, now, change) => this.#logUpdate(j, state, now, change),
    };
  }

  // ---- connections ----------------------------------------------------------------

  connect(onWake: (result: Job | WaitEnd) => void): Client {
    return upkeep.join(this.#parts, onWake);
  }

  /** A connection closed: its reservations go straight back to ready (no counters move). */
  disconnect(c: Client): void {
    upkeep.leave(this.#parts, c);
  }

  /** The connection sent a well-formed put line (it counts as a producer from then on). */
  markProducer(c: Client): void {
    if (!c.producer) {
      c.producer = true;
      this.#presence.producers++;
    }
  }

  #markWorker(c: Client): void {
    if (!c.worker) {
      c.worker = true;
      this.#presence.workers++;
    }
  }

  // ---- producing ------------------------------------------------------------------

  /**
   * Take the next job id. 1.12 takes it when it reads a put line, before the body:
   * a put that is then abandoned, or whose body lacks its CRLF, still uses its id.
   */
  takeId(): number {
    return this.#nextId++;
  }

  /**
   * Store a new job in the client's used tube. `body` includes its trailing CRLF. `id`
   * is one from takeId() (the connection takes it at the put line), or the next one.
   */
  put(
    c: Client,
    pri: number,
    delaySec: number,
    ttrSec: number,
    body: Uint8Array,
    id = this.takeId(),
  ): Job | "DRAINING" | "OUT_OF_MEMORY" {
    if (this.draining) return "DRAINING";
    const now = this.clock.now();
    const tube = c.use;
    // ttr < 1 s is raised to 1 s, as 1.12 does.
    const j = new Job(id, tube, pri, delaySec * 1000, Math.max(ttrSec, 1) * 1000, body, now);
    if (delaySec > 0) {
      j.state = "delayed";
      j.deadline = jobMs(now + j.delayMs);
    }
    if (this.#logging && !this.#logged(this.wal.put(this.#records.of(j, j.state, now, true)), now)) {
      return "OUT_OF_MEMORY";
    }
    this.#jobs.set(j);
    tube.totalJobs++;
    this.counters.totalJobs++;
    if (delaySec > 0) this.#addDelayed(j);
    else {
      tube.pushReady(j, now);
      if (tube.waiting > 0) this.#serve([tube]);
    }
    return j;
  }

  // ---- consuming ------------------------------------------------------------------

  /**
   * reserve / reserve-with-timeout. Returns the job, DEADLINE_SOON or TIMED_OUT at once,
   * or null when the client now waits (its onWake is called later).
   * timeoutMs: Infinity for plain reserve; 0 answers at once.
   */
  reserve(c: Client, timeoutMs: number): Job | WaitEnd | null {
    this.#markWorker(c);
    const now = this.clock.now();
    const soonest = c.soonestDeadline();
    const soon = soonest - DEADLINE_SOON_MS <= now;
    // 1.12: inside the safety margin, DEADLINE_SOON comes first only when no watched
    // tube has a ready job (paused or not); otherwise the reserve goes ahead (#646).
    if (soon && !c.watching.some((t) => t.ready.size > 0)) return "DEADLINE_SOON";
    let best: Job | undefined;
    for (const t of c.watching) {
      const j = t.ready.peek();
      if (j && !(t.unpauseAt > now) && (!best || readyBefore(j, best))) best = j;
    }
    if (best) {
      best.tube.removeReady(best);
      this.#reserveFor(c, best, now);
      return best;
    }
    if (soon) return "DEADLINE_SOON";
    if (timeoutMs <= 0) return "TIMED_OUT";
    this.#waits.begin(c, now, timeoutMs, soonest);
    return null;
  }

  /** reserve-job: any ready, delayed or buried job in any tube, ignoring pauses and drain. */
  reserveJob(c: Client, id: number): Job | undefined {
    return upkeep.reserveJob(this.#parts, c, id);
  }

  /** Succeeds for a job reserved by c, or one that is ready, delayed or buried. */
  delete(c: Client, id: number): "DELETED" | upkeep.Refusal {
    const j = this.#jobs.get(id);
    if (!j || (j.state === "reserved" && j.owner !== c)) return "NOT_FOUND";
    const now = this.#logging || j.state === "reserved" ? this.clock.now() : 0;
    if (this.#logging && !this.#logUpdate(j, "deleted", now)) return "INTERNAL_ERROR";
    if (j.state === "reserved") this.latency.reserveToDelete.observe(now - j.reservedAt);
    this.#unlink(j);
    this.#jobs.delete(id);
    j.tube.cmdDelete++;
    this.#tubes.dropIfUnused(j.tube);
    return "DELETED";
  }

  release(c: Client, id: number, pri: number, delaySec: number): "RELEASED" | upkeep.Refusal {
    const j = this.#ownedBy(c, id);
    if (!j) return "NOT_FOUND";
    const now = this.clock.now();
    const delayed = delaySec > 0;
    const logged = !this.#logging || this.#logUpdate(j, delayed ? "delayed" : "ready", now, (rec) => {
      rec.pri = pri;
      rec.delayMs = delaySec * 1000;
      rec.deadlineAtMs = delayed ? this.#records.wall(now + delaySec * 1000, now) : 0;
      rec.releases++;
    });
    if (!logged) return "INTERNAL_ERROR";
    this.#unlink(j);
    j.pri = pri;
    j.delayMs = delaySec * 1000;
    j.releases++;
    if (delayed) {
      j.state = "delayed";
      j.deadline = jobMs(now + j.delayMs);
      this.#addDelayed(j);
    } else {
      j.tube.pushReady(j, now);
      if (j.tube.waiting > 0) this.#serve([j.tube]);
    }
    return "RELEASED";
  }

  bury(c: Client, id: number, pri: number): "BURIED" | upkeep.Refusal {
    const j = this.#ownedBy(c, id);
    if (!j) return "NOT_FOUND";
    const logged = !this.#logging || this.#logUpdate(j, "buried", this.clock.now(), (rec) => {
      rec.pri = pri;
      rec.buries++;
    });
    if (!logged) return "INTERNAL_ERROR";
    this.#unlink(j);
    j.pri = pri;
    j.buries++;
    j.state = "buried";
    j.tube.buried.push(j);
    return "BURIED";
  }

  /** A fresh full TTR for a job reserved by c (not logged, as in 1.12). */
  touch(c: Client, id: number): boolean {
    const j = this.#ownedBy(c, id);
    if (!j) return false;
    this.#ttr.remove(j);
    j.deadline = jobMs(this.clock.now() + j.ttrMs);
    this.#ttr.push(j);
    return true;
  }

  /** kick on the used tube: buried jobs if it has any (never delayed ones in the same call), else delayed. */
  kick(c: Client, bound: number): number | "INTERNAL_ERROR" {
    return upkeep.kick(this.#parts, c, bound);
  }

  /** kick-job: a buried or delayed job in any tube. */
  kickJob(id: number): "KICKED" | upkeep.Refusal {
    return upkeep.kickJob(this.#parts, id);
  }

  // ---- peeking --------------------------------------------------------------------

  peek(id: number): Job | undefined {
    return this.#jobs.get(id);
  }
  peekReady(c: Client): Job | undefined {
    return c.use.ready.peek();
  }
  peekDelayed(c: Client): Job | undefined {
    return c.use.delayed.peek();
  }
  /** The oldest-buried job of the used tube (head of its FIFO). */
  peekBuried(c: Client): Job | undefined {
    return c.use.buried.head ?? undefined;
  }

  // ---- tubes ----------------------------------------------------------------------

  use(c: Client, name: string): Tube {
    return this.#tubes.use(c, name);
  }

  /** Returns the watch count. */
  watch(c: Client, name: string): number {
    return this.#tubes.watch(c, name);
  }

  /** Returns the watch count, or NOT_IGNORED when t is the only watched tube. Never creates a tube. */
  ignore(c: Client, name: string): number | "NOT_IGNORED" {
    return this.#tubes.ignore(c, name);
  }

  /** pause-tube; 0 s unpauses at once and serves waiting clients. False if no such tube. */
  pauseTube(name: string, delaySec: number): boolean {
    return upkeep.pauseTube(this.#parts, name, delaySec);
  }

  /** Every tube, in list-tubes order: read-only, for the metrics port and dashboard. */
  tubeList(): readonly Tube[] {
    return this.#tubes.all();
  }

  tubeNames(): string[] {
    return this.#tubes.all().map((t) => t.name);
  }

  hasTube(name: string): boolean {
    return this.#tubes.get(name) !== undefined;
  }

  // ---- time -----------------------------------------------------------------------

  /**
   * Do everything that is due: promote delayed jobs, expire TTRs, end pauses, wake
   * waiting clients. Returns when the next thing falls due (monotonic ms, or Infinity).
   */
  tick(): number {
    return (this.#armed = upkeep.tick(this.#parts));
  }

  /** When tick() next has work (monotonic ms), or Infinity. */
  nextDue(): number {
    return upkeep.nextDue(this.#parts);
  }

  /** End a client's wait without a job (its peer half-closed): TIMED_OUT. */
  cancelWait(c: Client): void {
    if (c.isWaiting) this.#waits.finish(c, "TIMED_OUT");
  }

  // ---- stats ----------------------------------------------------------------------

  statsJob(id: number): JobStats | undefined {
    return upkeep.statsJob(this.#parts, id);
  }

  statsTube(name: string): TubeStats | undefined {
    return upkeep.statsTube(this.#parts, name);
  }

  /** The gauges of `stats`. */
  gauges(): Gauges {
    return upkeep.gauges(this.#parts);
  }

  // ---- restart --------------------------------------------------------------------

  /**
   * Rebuild jobs recovered from the log. Reserved jobs come back ready; delayed jobs keep
   * their absolute deadline (ready at once if it has passed); buried order is kept.
   * Ids continue above maxId. Counters are not restored (as 1.12).
   */
  restore(records: Iterable<JobRecord>, maxId: number): void {
    this.#records.restore(records, this.#tubes, (j) => this.#jobs.set(j), (j) => this.#addDelayed(j));
    this.#nextId = Math.max(this.#nextId, maxId + 1);
  }

  /** The current state of a live job as a log record (for compaction); undefined if gone. */
  liveRecord(id: number): JobRecord | undefined {
    const j = this.#jobs.get(id);
    return j ? this.#records.of(j, j.state, this.clock.now(), true) : undefined;
  }

  // ---- internals ------------------------------------------------------------------

  #ownedBy(c: Client, id: number): Job | undefined {
    const j = this.#jobs.get(id);
    return j && j.state === "reserved" && j.owner === c ? j : undefined;
  }

  /** Take a job out of whatever structure its state puts it in. */
  #unlink(j: Job): void {
    const t = j.tube;
    switch (j.state) {
      case "ready":
        t.removeReady(j);
        break;
      case "delayed":
        t.delayed.remove(j);
        this.#delayed.remove(j);
        break;
      case "buried":
        t.buried.remove(j);
        break;
      case "reserved":
        this.#ttr.remove(j);
        j.owner!.reserved.remove(j);
        j.owner = null;
        t.reserved--;
        break;
    }
  }

  #addDelayed(j: Job): void {
    j.tube.delayed.push(j);
    this.#delayed.push(j);
    this.#schedule(j.deadline);
  }

  #reserveFor(c: Client, j: Job, now: number): void {
    if (j.state === "ready") this.latency.readyToReserve.observe(now - j.deadline);
    j.reservedAt = jobMs(now);
    j.state = "reserved";
    j.owner = c;
    j.deadline = jobMs(now + j.ttrMs);
    j.reserves++;
    j.tube.reserved++;
    c.reserved.push(j);
    this.#ttr.push(j);
    this.#schedule(j.deadline);
  }

  /** Hand ready jobs of these tubes to their waiting clients (see Waits.serve). */
  #serve(tubes: Tube[]): void {
    if (tubes.length > 0) this.#waits.serve(tubes, this.clock.now());
  }

  /**
   * Log a change of j before it is applied: its record in `state`, with the fields the
   * command changes set by `change`. False when the log refused it (apply nothing).
   * Callers check #logging first, so without -b no record and no closure is built.
   */
  #logUpdate(j: Job, state: JobState | "deleted", now: number, change?: (rec: JobRecord) => void): boolean {
    const rec = this.#records.of(j, state, now);
    change?.(rec);
    return this.#logged(this.wal.update(rec), now);
  }

  /**
   * After a successful log write: give the log its check (fsync when -f's interval has
   * passed, as 1.12 does after every write) and make sure the timer comes back for a
   * quiet tail.
   */
  #logged(ok: boolean, now: number): boolean {
    if (ok) {
      const inMs = this.wal.tick(now);
      if (inMs !== undefined) this.#schedule(now + inMs);
    }
    return ok;
  }

  #schedule(atMs: number): void {
    if (atMs < this.#armed) {
      this.#armed = atMs;
      this.onDeadline?.(atMs);
    }
  }
}
