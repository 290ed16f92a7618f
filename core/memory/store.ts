// What the in-memory engine keeps, and the moves that keep it consistent: every job by
// id, every tube, the schedule (delayed and TTR heaps, the one timer, and tick(): what
// falls due), the waiting clients, and the log behind them. The stock commands (core/memory/queue.ts) and the
// extension commands (core/memory/extensions.ts) change state only through the primitives
// here (unlink, makeReady, addDelayed, reserveFor, kickOne, forget, the log calls), so
// the invariants live in one place: a job is in exactly the structure its state says,
// the tube's counts match, and a change is logged before it is applied.
import { type Client, Job, jobMs, type Tube } from "./model.ts";
import { Waits } from "./waits.ts";
import type { Clock, Turns } from "../clock.ts";
import { Tubes } from "./tubes.ts";
import { Records } from "./records.ts";
import { type JobRecord, type JobState, type Wal } from "./wal.ts";
import { Histogram, QUEUE_BOUNDS_MS } from "../histogram.ts";
import { JobTable } from "./job_table.ts";
import { Schedule } from "./schedule.ts";
import { LogTurn } from "./log_turn.ts";
import type { JobExtras } from "./extras.ts";
import { Limits } from "./limits.ts";

/** What runs recurring jobs (core/memory/schedules.ts): called by tick like the rest of what falls due. */
export interface Recurring {
  /** Put the jobs that are due at monotonic time now. */
  due(now: number): void;
  /** When one is next due (monotonic ms), or Infinity. */
  readonly nextDueMs: number;
}

export class Store {
  readonly clock: Clock;
  readonly wal: Wal;
  /** False without -b: no record (and no closure) is built at all. */
  readonly logging: boolean;
  readonly jobs = new JobTable<Job>();
  readonly tubes = new Tubes();
  readonly records: Records;
  readonly schedule: Schedule;
  readonly waits: Waits;
  /** The holds of tubes with limits (set-concurrency, set-rate). */
  readonly limits: Limits;
  /** The recurring jobs, once the engine has them (schedules.ts). */
  recurring: Recurring | null = null;
  /** With a log: one append per turn for every connection's records. */
  readonly turn: LogTurn | undefined;
  /**
   * Extension state of the jobs that have any (a unique key, the tube a dead letter came
   * from, a reservation that outlived a delete-tube), by id: a job without any costs
   * nothing here, and the stock paths look at it only through `extras.size`.
   */
  readonly extras = new Map<number, JobExtras>();
  /** Jobs ever put (stats total-jobs), reservations whose TTR ran out (job-timeouts). */
  totalJobs = 0;
  jobTimeouts = 0;
  /** Jobs moved to a dead-letter tube since start (the metrics port). */
  deadLettered = 0;
  /** Queue latencies for the metrics port: ready -> reserved, reserved -> deleted (ms). */
  readonly readyToReserve = new Histogram(QUEUE_BOUNDS_MS);
  readonly reserveToDelete = new Histogram(QUEUE_BOUNDS_MS);

  /** A reservation of a tube with a policy, or of any job while some have extension state, ran out: true when taken care of. */
  readonly #timedOut: (j: Job, now: number) => boolean;

  /** `timedOut`: the extensions' part of a TTR expiry (core/memory/extensions.ts), for an unlinked job. */
  constructor(clock: Clock, wal: Wal, turns: Turns, timedOut: (j: Job, now: number) => boolean) {
    this.clock = clock;
    this.wal = wal;
    this.logging = wal.logs;
    this.turn = this.logging ? new LogTurn(wal, turns) : undefined;
    this.records = new Records(clock, this.extras);
    this.#timedOut = timedOut;
    this.schedule = new Schedule(clock, () => this.tick());
    this.waits = new Waits((atMs) => this.schedule.at(atMs), (c, j, now) => this.reserveFor(c, j, now));
    this.limits = new Limits((atMs) => this.schedule.at(atMs));
  }

  /** A new job for tube t, delayed when delayMs > 0; not yet stored (see insert). */
  newJob(t: Tube, pri: number, delayMs: number, ttrSec: number, body: Uint8Array, id: number, now: number): Job {
    // ttr < 1 s is raised to 1 s, as 1.12 does.
    const j = new Job(id, t, pri, delayMs, Math.max(ttrSec, 1) * 1000, body, now);
    if (delayMs > 0) {
      j.state = "delayed";
      j.deadline = jobMs(now + delayMs);
    }
    return j;
  }

  /**
   * A new job joins its tube, logged first (false: the log refused it, nothing changed).
   * `run`: a schedule put it for that due time, which the log keeps in the same record.
   */
  insert(j: Job, now: number, run?: { name: string; dueSec: number }): boolean {
    if (this.logging) {
      const ok = run === undefined
        ? this.logFull(j, now)
        : this.logged(this.wal.scheduledPut(this.records.of(j, j.state, now, true), run.name, run.dueSec), now);
      if (!ok) return false;
    }
    const t = j.tube;
    this.jobs.set(j);
    t.totalJobs++;
    this.totalJobs++;
    if (j.state === "delayed") this.addDelayed(j);
    else {
      t.pushReady(j, now);
      if (t.waiting > 0) this.serve([t]);
    }
    return true;
  }

  /** The job if c holds its reservation. */
  ownedBy(c: Client, id: number): Job | undefined {
    const j = this.jobs.get(id);
    return j && j.state === "reserved" && j.owner === c ? j : undefined;
  }

  /** Take a job out of whatever structure its state puts it in. */
  unlink(j: Job): void {
    const t = j.tube;
    switch (j.state) {
      case "ready":
        t.removeReady(j);
        break;
      case "delayed":
        t.delayed.remove(j);
        this.schedule.delayed.remove(j);
        break;
      case "buried":
        t.buried.remove(j);
        break;
      case "reserved":
        this.schedule.ttr.remove(j);
        j.owner!.reserved.remove(j);
        j.owner = null;
        t.reserved--;
        // its waiting clients are served by the command, once the job is where it goes
        if (t.limits !== null) this.limits.ended(t, this.clock.now());
        break;
    }
  }

  /** An unlinked job becomes ready in its tube; waiting clients are served by the caller (serve). */
  makeReady(j: Job, now: number): void {
    j.tube.pushReady(j, now);
  }

  /** An unlinked job with its deadline set waits in its tube's and the timer's delayed heaps. */
  addDelayed(j: Job): void {
    j.state = "delayed";
    j.tube.delayed.push(j);
    this.schedule.delayed.push(j);
    this.schedule.at(j.deadline);
  }

  /** An unlinked job is buried at the tail of its tube's FIFO. */
  addBuried(j: Job): void {
    j.state = "buried";
    j.tube.buried.push(j);
  }

  /** A buried or delayed job, logged, goes to ready. False when the log refused it. */
  kickOne(j: Job): boolean {
    const now = this.clock.now();
    if (this.logging && !this.logUpdate(j, "ready", now, (rec) => rec.kicks++)) return false;
    this.unlink(j);
    j.kicks++;
    j.tube.pushReady(j, now);
    return true;
  }

  /**
   * kick on tube t: up to `bound` buried jobs (fromBuried) or delayed ones, never both in
   * one call. INTERNAL_ERROR only when the log refused the first.
   */
  kickIn(t: Tube, bound: number, fromBuried: boolean): number | "INTERNAL_ERROR" {
    let n = 0;
    while (n < bound) {
      const j = fromBuried ? t.buried.head : t.delayed.peek();
      if (!j) break;
      if (!this.kickOne(j)) return n > 0 ? n : "INTERNAL_ERROR";
      n++;
    }
    if (n > 0 && t.waiting > 0) this.serve([t]);
    return n;
  }

  /** Reserve j (out of every other structure already) for c. */
  reserveFor(c: Client, j: Job, now: number): void {
    if (j.state === "ready") this.readyToReserve.observe(now - j.deadline);
    j.reservedAt = jobMs(now);
    j.state = "reserved";
    j.owner = c;
    j.deadline = jobMs(now + j.ttrMs);
    j.reserves++;
    j.tube.reserved++;
    if (j.tube.limits !== null) this.limits.reserved(j.tube, now);
    c.reserved.push(j);
    this.schedule.ttr.push(j);
    this.schedule.at(j.deadline);
  }

  /** An unlinked job leaves the engine (its delete already logged), and its unique key with it. */
  forget(j: Job): void {
    this.jobs.delete(j.id);
    if (this.extras.size > 0) this.dropExtras(j);
  }

  /** j's extension state goes: its key is free again in its tube. */
  dropExtras(j: Job): void {
    const x = this.extras.get(j.id);
    if (x === undefined) return;
    this.extras.delete(j.id);
    const keys = j.tube.keys;
    if (x.key !== undefined && keys !== null && keys.get(x.key) === j) {
      keys.delete(x.key);
      if (keys.size === 0) j.tube.keys = null;
    }
  }

  /** Hand ready jobs of these tubes to their waiting clients (see Waits.serve). */
  serve(tubes: Tube[]): void {
    if (tubes.length > 0) this.waits.serve(tubes, this.clock.now());
  }

  /**
   * Log a change of j before it is applied: its record in `state`, with the fields the
   * command changes set by `change`. False when the log refused it (apply nothing).
   * Callers check `logging` first, so without -b no record and no closure is built.
   */
  logUpdate(j: Job, state: JobState | "deleted", now: number, change?: (rec: JobRecord) => void): boolean {
    const rec = this.records.of(j, state, now);
    change?.(rec);
    return this.logged(this.wal.update(rec), now);
  }

  /** Log j's full record (a put, or a job that moved tube). False when the log refused it. */
  logFull(j: Job, now: number, change?: (rec: JobRecord) => void): boolean {
    const rec = this.records.of(j, j.state, now, true);
    change?.(rec);
    return this.logged(this.wal.put(rec), now);
  }

  /**
   * After a successful log write: give the log its check (fsync when -f's interval has
   * passed, as 1.12 does after every write) and make sure the timer comes back for a
   * quiet tail.
   */
  logged(ok: boolean, now: number): boolean {
    if (ok) {
      const inMs = this.wal.tick(now);
      if (inMs !== undefined) this.schedule.at(now + inMs);
    }
    return ok;
  }

  // ---- time -------------------------------------------------------------------------

  /**
   * Do everything that is due: promote delayed jobs, expire TTRs, end pauses, wake
   * waiting clients. Returns when the next thing falls due (monotonic ms, or Infinity).
   */
  tick(): number {
    const now = this.clock.now();
    const touched = new Set<Tube>();
    const { delayed, ttr } = this.schedule;
    for (let j = delayed.peek(); j && j.deadline <= now; j = delayed.peek()) {
      this.unlink(j);
      j.tube.pushReady(j, now);
      touched.add(j.tube);
    }
    // Released at now >= deadline: 1.12 can miss a job whose timer fires in the same
    // microsecond as its deadline and leave it reserved indefinitely (#262, #380).
    for (let j = ttr.peek(); j && j.deadline <= now; j = ttr.peek()) {
      this.unlink(j);
      j.timeouts++;
      this.jobTimeouts++;
      // whatever becomes of the job, its tube may have room for a waiting client now (a limit)
      touched.add(j.tube);
      if ((j.tube.policy !== null || this.extras.size > 0) && this.#timedOut(j, now)) continue;
      j.tube.pushReady(j, now);
    }
    for (const t of this.tubes.paused) {
      if (t.unpauseAt <= now) {
        t.pauseMs = t.unpauseAt = 0;
        this.tubes.paused.delete(t);
        touched.add(t);
      }
    }
    this.limits.due(now, touched);
    this.recurring?.due(now);
    if (touched.size > 0) this.serve([...touched]);
    const walIn = this.logging ? this.wal.tick(now) : undefined;
    this.waits.wakeDue(now);
    return walIn === undefined ? this.nextDue() : Math.min(this.nextDue(), now + walIn);
  }

  /** When tick() next has work (monotonic ms), or Infinity. */
  nextDue(): number {
    let t = Math.min(this.schedule.nextDeadline, this.waits.nextWake(), this.limits.nextDue);
    for (const p of this.tubes.paused) if (p.unpauseAt < t) t = p.unpauseAt;
    return this.recurring === null ? t : Math.min(t, this.recurring.nextDueMs);
  }
}
