// The in-memory engine: every state change of jobs, tubes and waiting clients, kept in
// this process, each change logged first when there is a write-ahead log (-b). It
// implements core/engine.ts and answers every call at once (no promises). Time comes
// from the injected clock, which also carries the one timer (core/memory/schedule.ts); the log
// sits behind the Wal interface, and the per-turn shared append is core/memory/log_turn.ts.
// The calls that only look (peeks, stats, listings, metrics) are core/memory/queue_views.ts, the
// extension commands core/memory/queue_extensions.ts (Queue extends both).
import { Client, Job, jobMs, readyBefore, type Tube } from "./model.ts";
import { DEADLINE_SOON_MS } from "../clients.ts";
import { type Clock, immediateTurns, systemClock, type Turns } from "../clock.ts";
import type { Engine, NewJob, PutResult, Refusal, RetryPolicy, Settling, TubeLimits, Wake } from "../engine.ts";
import { QueueExtensions } from "./queue_extensions.ts";
import { type JobRecord, noWal, type ScheduleRecord, type Wal } from "./wal.ts";
import { DEFAULT_BINLOG_SIZE } from "./binlog/options.ts";
import type { LogTurn } from "./log_turn.ts";
import { Store } from "./store.ts";
import { Extensions } from "./extensions.ts";
import { Schedules } from "./schedules.ts";

/** What a restart restores beside the jobs (Recovered has them all). */
export interface RestoredState {
  policies?: Map<string, RetryPolicy>;
  limits?: Map<string, TubeLimits>;
  schedules?: Map<string, ScheduleRecord>;
}

export type { Refusal };

export interface QueueOptions {
  clock: Clock;
  /** Largest body accepted by put (-z), bytes. */
  maxJobSize?: number;
  wal?: Wal;
  /** How the log's shared append waits for the end of a turn (default: setImmediate). */
  turns?: Turns;
}

/**
 * The in-memory engine for a {@linkcode Service}: jobs in this process only, as
 * beanstalkd without -b (openService() adds the write-ahead log for -b).
 *
 * @example
 * ```ts
 * import { ManualClock, memoryEngine, Service } from "../../mod.ts";
 *
 * const svc = new Service(memoryEngine({ clock: new ManualClock(), maxJobSize: 1024 }));
 * svc.close();
 * ```
 */
export function memoryEngine(opts: { clock?: Clock; maxJobSize?: number } = {}): Engine {
  const clock = opts.clock ?? systemClock;
  return new Queue(opts.maxJobSize === undefined ? { clock } : { clock, maxJobSize: opts.maxJobSize });
}

export class Queue extends QueueExtensions implements Engine {
  readonly clock: Clock;
  readonly maxJobSize: number;
  readonly wal: Wal;

  /** Jobs, tubes, the schedule, waiting clients and the log, with the moves that keep them consistent. */
  protected readonly s: Store;
  /** The extension commands (docs/extensions.md), on the same store. */
  protected readonly x: Extensions;
  /** The recurring jobs (schedule), on the same store and its timer. */
  protected readonly schedules: Schedules;
  #nextId = 1;
  #draining = false;
  #closed = false;

  constructor(opts: QueueOptions) {
    super();
    this.clock = opts.clock;
    this.maxJobSize = opts.maxJobSize ?? 65535;
    this.wal = opts.wal ?? noWal(DEFAULT_BINLOG_SIZE);
    // A reservation whose TTR ran out: the extensions may take it (a doomed job, a retry policy).
    this.s = new Store(opts.clock, this.wal, opts.turns ?? immediateTurns, (j, now) => this.x.timedOut(j, now));
    this.x = new Extensions(this.s);
    this.schedules = new Schedules(this.s, () => this.takeId(), () => this.#draining);
  }

  // ---- connections ----------------------------------------------------------------

  connect(wake: Wake): Client {
    return this.s.tubes.join((t) => new Client(t, wake));
  }

  /** A connection closed: its reservations go straight back to ready (no counters move). */
  disconnect(c: Client): void {
    if (c.isWaiting) this.s.waits.end(c);
    const touched: Tube[] = [];
    const now = this.clock.now();
    for (let j = c.reserved.head; j; j = c.reserved.head) {
      this.s.unlink(j);
      // a doomed job goes, but its tube may have room for a waiting client now (a limit)
      if (!touched.includes(j.tube)) touched.push(j.tube);
      if (this.s.extras.size > 0 && this.x.comesBack(j)) continue;
      j.tube.pushReady(j, now);
    }
    this.s.tubes.leave(c);
    this.s.serve(touched);
  }

  // ---- producing ------------------------------------------------------------------

  takeId(): number {
    return this.#nextId++;
  }

  /** Store a new job in the client's used tube. */
  put(c: Client, job: NewJob): Job | PutResult {
    if (this.#draining) return "DRAINING";
    const now = this.clock.now();
    const s = this.s;
    const tube = c.use;
    const delaySec = job.delaySec;
    const j = s.newJob(tube, job.pri, delaySec * 1000, job.ttrSec, job.body, job.id, now);
    // Store.insert's steps, inline: on the stock hot path the call was a noticeable part
    // of a put + reserve + delete cycle on Bun (the extensions' puts use Store.insert).
    if (s.logging && !s.logFull(j, now)) return "OUT_OF_MEMORY";
    s.jobs.set(j);
    tube.totalJobs++;
    s.totalJobs++;
    if (delaySec > 0) s.addDelayed(j);
    else {
      tube.pushReady(j, now);
      if (tube.waiting > 0) s.serve([tube]);
    }
    return j;
  }

  // ---- consuming ------------------------------------------------------------------

  reserve(c: Client, timeoutMs: number): Job | "TIMED_OUT" | "DEADLINE_SOON" | null {
    const now = this.clock.now();
    const soonest = c.soonestDeadline();
    const soon = soonest - DEADLINE_SOON_MS <= now;
    // 1.12: inside the safety margin, DEADLINE_SOON comes first only when no watched
    // tube has a ready job (paused or not); otherwise the reserve goes ahead (#646).
    if (soon && !c.watching.some((t) => t.ready.size > 0)) return "DEADLINE_SOON";
    let best: Job | undefined;
    for (const t of c.watching) {
      const j = t.ready.peek();
      // a tube held by a limit is passed over as a paused one is: the client may wait for it
      if (j && !(t.unpauseAt > now) && !t.held && (!best || readyBefore(j, best))) best = j;
    }
    if (best) {
      best.tube.removeReady(best);
      this.s.reserveFor(c, best, now);
      return best;
    }
    if (soon) return "DEADLINE_SOON";
    if (timeoutMs <= 0) return "TIMED_OUT";
    this.s.waits.begin(c, now, timeoutMs, soonest);
    return null;
  }

  cancelWait(c: Client): void {
    if (c.isWaiting) this.s.waits.finish(c, "TIMED_OUT");
  }

  /** reserve-job: any ready, delayed or buried job in any tube, ignoring pauses and drain. */
  reserveJob(c: Client, id: number): Job | undefined {
    const j = this.s.jobs.get(id);
    if (!j || j.state === "reserved") return undefined;
    this.s.unlink(j);
    this.s.reserveFor(c, j, this.clock.now());
    return j;
  }

  /** Succeeds for a job reserved by c, or one that is ready, delayed or buried. */
  delete(c: Client, id: number): "DELETED" | Refusal {
    const s = this.s;
    const j = s.jobs.get(id);
    if (!j || (j.state === "reserved" && j.owner !== c)) return "NOT_FOUND";
    const now = s.logging || j.state === "reserved" ? this.clock.now() : 0;
    if (s.logging && !s.logUpdate(j, "deleted", now)) return "INTERNAL_ERROR";
    if (j.state === "reserved") s.reserveToDelete.observe(now - j.reservedAt);
    s.unlink(j);
    s.jobs.delete(id); // Store.forget, inline (see put)
    if (s.extras.size > 0) s.dropExtras(j);
    const t = j.tube;
    t.cmdDelete++;
    // a limit may have room for a waiting client now (a tube with limits is never dropped)
    if (t.limits !== null) s.serve([t]);
    else s.tubes.dropIfUnused(t);
    return "DELETED";
  }

  release(c: Client, id: number, pri: number, delaySec: number): "RELEASED" | Refusal {
    const j = this.s.ownedBy(c, id);
    if (!j) return "NOT_FOUND";
    const t = j.tube;
    if (t.policy !== null || this.s.extras.size > 0) {
      const r = this.x.released(j, pri, delaySec);
      if (typeof r === "string") {
        if (t.limits !== null) this.s.serve([t]);
        return r;
      }
      delaySec = r;
    }
    const now = this.clock.now();
    const delayed = delaySec > 0;
    const logged = !this.s.logging || this.s.logUpdate(j, delayed ? "delayed" : "ready", now, (rec) => {
      rec.pri = pri;
      rec.delayMs = delaySec * 1000;
      rec.deadlineAtMs = delayed ? this.s.records.wall(now + delaySec * 1000, now) : 0;
      rec.releases++;
    });
    if (!logged) return "INTERNAL_ERROR";
    this.s.unlink(j);
    j.pri = pri;
    j.delayMs = delaySec * 1000;
    j.releases++;
    if (delayed) {
      j.state = "delayed";
      j.deadline = jobMs(now + j.delayMs);
      this.s.addDelayed(j);
      if (t.limits !== null) this.s.serve([t]);
    } else {
      t.pushReady(j, now);
      if (t.waiting > 0) this.s.serve([t]);
    }
    return "RELEASED";
  }

  bury(c: Client, id: number, pri: number): "BURIED" | Refusal {
    const j = this.s.ownedBy(c, id);
    if (!j) return "NOT_FOUND";
    const t = j.tube;
    if (this.s.extras.size > 0 && this.x.buried(j)) {
      if (t.limits !== null) this.s.serve([t]);
      return "BURIED";
    }
    const logged = !this.s.logging || this.s.logUpdate(j, "buried", this.clock.now(), (rec) => {
      rec.pri = pri;
      rec.buries++;
    });
    if (!logged) return "INTERNAL_ERROR";
    this.s.unlink(j);
    j.pri = pri;
    j.buries++;
    j.state = "buried";
    t.buried.push(j);
    if (t.limits !== null) this.s.serve([t]);
    return "BURIED";
  }

  /** A fresh full TTR for a job reserved by c (not logged, as in 1.12). */
  touch(c: Client, id: number): boolean {
    const j = this.s.ownedBy(c, id);
    if (!j) return false;
    const ttr = this.s.schedule.ttr;
    ttr.remove(j);
    j.deadline = jobMs(this.clock.now() + j.ttrMs);
    ttr.push(j);
    return true;
  }

  /** kick on the used tube: buried jobs if it has any (never delayed ones in the same call), else delayed. */
  kick(c: Client, bound: number): number | "INTERNAL_ERROR" {
    return this.s.kickIn(c.use, bound, c.use.buried.size > 0);
  }

  /** kick-job: a buried or delayed job in any tube. */
  kickJob(id: number): "KICKED" | Refusal {
    const j = this.s.jobs.get(id);
    if (!j || (j.state !== "buried" && j.state !== "delayed")) return "NOT_FOUND";
    if (!this.s.kickOne(j)) return "INTERNAL_ERROR";
    if (j.tube.waiting > 0) this.s.serve([j.tube]);
    return "KICKED";
  }

  // ---- tubes ----------------------------------------------------------------------

  use(c: Client, name: string): void {
    this.s.tubes.use(c, name);
  }

  watch(c: Client, name: string): number {
    return this.s.tubes.watch(c, name);
  }

  /** Never creates a tube. */
  ignore(c: Client, name: string): number | "NOT_IGNORED" {
    return this.s.tubes.ignore(c, name);
  }

  /** pause-tube; 0 s unpauses at once and serves waiting clients. False if no such tube. */
  pauseTube(name: string, delaySec: number): boolean {
    const t = this.s.tubes.get(name);
    if (!t) return false;
    t.cmdPauseTube++;
    if (delaySec === 0) {
      t.pauseMs = t.unpauseAt = 0;
      this.s.tubes.paused.delete(t);
      this.s.serve([t]);
    } else {
      t.pauseMs = delaySec * 1000;
      t.unpauseAt = this.clock.now() + t.pauseMs;
      this.s.tubes.paused.add(t);
      this.s.schedule.at(t.unpauseAt);
    }
    return true;
  }

  // ---- the server -----------------------------------------------------------------

  drain(): void {
    this.#draining = true;
  }

  /** Drain mode ends; schedules' runs missed meanwhile put their job now (one each). */
  undrain(): void {
    this.#draining = false;
    this.schedules.arm();
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** With a log, replies that show a change wait for the turn's one append (core/memory/log_turn.ts). */
  settle(s: Settling, changed: boolean, replies: boolean): boolean {
    const turn = this.s.turn;
    // A batch that logged nothing waits too while a turn is under way: it may show a
    // change those records describe (a reserve of a job just put).
    if (turn === undefined || !(changed || (turn.pending && replies))) return false;
    turn.join(s, changed);
    return true;
  }

  /** @internal For tests: the log's per-turn append (undefined without a log). */
  get logTurn(): LogTurn | undefined {
    return this.s.turn;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.s.schedule.stop();
    this.wal.close();
  }

  // ---- time -----------------------------------------------------------------------

  /**
   * Do everything that is due (core/memory/store.ts tick). Returns when the next thing falls
   * due (monotonic ms, or Infinity). The one timer calls it; tests may too.
   */
  tick(): number {
    return this.s.tick();
  }

  /** When tick() next has work (monotonic ms), or Infinity. */
  nextDue(): number {
    return this.s.nextDue();
  }

  // ---- restart --------------------------------------------------------------------

  /**
   * Rebuild jobs recovered from the log, and the tubes' policies and limits and the
   * schedules. Reserved jobs come back ready; delayed jobs keep their absolute deadline
   * (ready at once if it has passed); buried order is kept. Ids continue above maxId.
   * Counters are not restored (as 1.12), nor the reservations a rate limit counted.
   */
  restore(records: Iterable<JobRecord>, maxId: number, state: RestoredState = {}): void {
    if (state.policies) this.x.restorePolicies(state.policies);
    if (state.limits) this.x.restoreLimits(state.limits);
    this.s.records.restore(records, this.s.tubes, (j) => this.s.jobs.set(j), (j) => this.s.addDelayed(j));
    this.#nextId = Math.max(this.#nextId, maxId + 1);
    // after the jobs: a run's key must find the job it put before the restart
    if (state.schedules) this.schedules.restore(state.schedules.values());
  }

  /** The current state of a live job as a log record (for compaction); undefined if gone. */
  liveRecord(id: number): JobRecord | undefined {
    const j = this.s.jobs.get(id);
    return j ? this.s.records.fresh(j, this.clock.now()) : undefined;
  }
}
