// What the in-memory engine keeps, and the moves that keep it consistent: every job by
// id, every tube, the schedule (delayed and TTR heaps, the one timer), the waiting
// clients, and the log behind them. The stock commands (core/queue.ts) and the
// extension commands (core/extensions.ts) change state only through the primitives
// here (unlink, makeReady, addDelayed, reserveFor, kickOne, forget, the log calls), so
// the invariants live in one place: a job is in exactly the structure its state says,
// the tube's counts match, and a change is logged before it is applied.
import { type Client, Job, jobMs, type Tube } from "./model.ts";
import { Waits } from "./waits.ts";
import type { Clock, Turns } from "./clock.ts";
import { Tubes } from "./tubes.ts";
import { Records } from "./records.ts";
import { type JobRecord, type JobState, type Wal } from "./wal.ts";
import { Histogram, QUEUE_BOUNDS_MS } from "./histogram.ts";
import { JobTable } from "./job_table.ts";
import { Schedule } from "./schedule.ts";
import { LogTurn } from "./log_turn.ts";
import type { JobExtras } from "./extras.ts";

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
  /** With a log: one append per turn for every connection's records. */
  readonly turn: LogTurn | undefined;
  /**
   * Extension state of the jobs that have any (a unique key, the tube a dead letter came
   * from, a reservation that outlived a delete-tube), by id: a job without any costs
   * nothing here, and the stock paths look at it only through `extras.size`.
   */
  readonly extras = new Map<number, JobExtras>();
  /** Queue latencies for the metrics port: ready -> reserved, reserved -> deleted (ms). */
  readonly readyToReserve = new Histogram(QUEUE_BOUNDS_MS);
  readonly reserveToDelete = new Histogram(QUEUE_BOUNDS_MS);

  constructor(clock: Clock, wal: Wal, turns: Turns, tick: () => number) {
    this.clock = clock;
    this.wal = wal;
    this.logging = wal.logs;
    this.turn = this.logging ? new LogTurn(wal, turns) : undefined;
    this.records = new Records(clock, this.extras);
    this.schedule = new Schedule(clock, tick);
    this.waits = new Waits((atMs) => this.schedule.at(atMs), (c, j, now) => this.reserveFor(c, j, now));
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

  /** Reserve j (out of every other structure already) for c. */
  reserveFor(c: Client, j: Job, now: number): void {
    if (j.state === "ready") this.readyToReserve.observe(now - j.deadline);
    j.reservedAt = jobMs(now);
    j.state = "reserved";
    j.owner = c;
    j.deadline = jobMs(now + j.ttrMs);
    j.reserves++;
    j.tube.reserved++;
    c.reserved.push(j);
    this.schedule.ttr.push(j);
    this.schedule.at(j.deadline);
  }

  /** An unlinked job leaves the engine (its delete already logged). */
  forget(j: Job): void {
    this.jobs.delete(j.id);
    if (this.extras.size > 0) this.extras.delete(j.id);
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
}
