// The queue engine: every state change of jobs, tubes and waiting clients.
// Pure TypeScript, no I/O: time comes from the injected clock, the binlog sits behind
// the Wal interface, and the one timer lives with the caller (see tick()).
import { Client, deadlineBefore, Heap, Job, readyBefore, timeSlot, type Tube, type WaitEnd } from "./model.ts";
import { DEADLINE_SOON_MS, Waits } from "./waits.ts";
import type { Clock } from "./clock.ts";
import { Counters, type Gauges, jobGauges, type JobStats, jobStats, type TubeStats, tubeStats } from "./stats.ts";
import { Tubes } from "./tubes.ts";
import { Records } from "./records.ts";
import { type JobRecord, type JobState, noWal, type Wal } from "./wal.ts";
import { DEFAULT_BINLOG_SIZE } from "./config.ts";
import { Histogram, QUEUE_BOUNDS_MS } from "./histogram.ts";

export { DEADLINE_SOON_MS };

/** Outcome of a command the log can refuse: the reply word, or a server error. */
export type Refusal = "NOT_FOUND" | "INTERNAL_ERROR";

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

  readonly #jobs = new Map<number, Job>();
  readonly #tubes = new Tubes();
  readonly #records: Records;
  /** Every delayed job, for promotion; every reserved job, for TTR expiry. */
  readonly #delayed = new Heap<Job>(deadlineBefore, timeSlot);
  readonly #ttr = new Heap<Job>(deadlineBefore, timeSlot);
  readonly #waits = new Waits((atMs) => this.#schedule(atMs), (c, j, now) => this.#reserveFor(c, j, now));
  readonly #logging: boolean;
  #nextId = 1;
  #armed = Infinity;
  #connections = 0;
  #producers = 0;
  #workers = 0;

  constructor(opts: QueueOptions) {
    this.clock = opts.clock;
    this.maxJobSize = opts.maxJobSize ?? 65535;
    this.wal = opts.wal ?? noWal(DEFAULT_BINLOG_SIZE);
    this.#logging = this.wal.logs;
    this.#records = new Records(opts.clock);
  }

  // ---- connections ----------------------------------------------------------------

  connect(onWake: (result: Job | WaitEnd) => void): Client {
    const c = new Client(this.#tubes.default, onWake);
    this.#tubes.default.using++;
    c.watching.push(this.#tubes.default);
    this.#tubes.default.watching++;
    this.#connections++;
    this.counters.totalConnections++;
    return c;
  }

  /** A connection closed: its reservations go straight back to ready (no counters move). */
  disconnect(c: Client): void {
    if (c.isWaiting) this.#waits.end(c);
    const touched: Tube[] = [];
    const now = this.clock.now();
    for (let j = c.reserved.head; j; j = c.reserved.head) {
      this.#unlink(j);
      j.tube.pushReady(j, now);
      if (!touched.includes(j.tube)) touched.push(j.tube);
    }
    c.use.using--;
    this.#tubes.dropIfUnused(c.use);
    for (const t of c.watching) {
      t.watching--;
      this.#tubes.dropIfUnused(t);
    }
    c.watching.length = 0;
    this.#connections--;
    if (c.producer) this.#producers--;
    if (c.worker) this.#workers--;
    this.#serve(touched);
  }

  /** The connection sent a well-formed put line (it counts as a producer from then on). */
  markProducer(c: Client): void {
    if (!c.producer) {
      c.producer = true;
      this.#producers++;
    }
  }

  #markWorker(c: Client): void {
    if (!c.worker) {
      c.worker = true;
      this.#workers++;
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
      j.deadline = now + j.delayMs;
    }
    if (this.#logging && !this.#logged(this.wal.put(this.#records.of(j, j.state, now, true)), now)) {
      return "OUT_OF_MEMORY";
    }
    this.#jobs.set(id, j);
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
    const j = this.#jobs.get(id);
    if (!j || j.state === "reserved") return undefined;
    this.#unlink(j);
    this.#reserveFor(c, j, this.clock.now());
    this.#markWorker(c);
    return j;
  }

  /** Succeeds for a job reserved by c, or one that is ready, delayed or buried. */
  delete(c: Client, id: number): "DELETED" | Refusal {
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

  release(c: Client, id: number, pri: number, delaySec: number): "RELEASED" | Refusal {
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
      j.deadline = now + j.delayMs;
      this.#addDelayed(j);
    } else {
      j.tube.pushReady(j, now);
      if (j.tube.waiting > 0) this.#serve([j.tube]);
    }
    return "RELEASED";
  }

  bury(c: Client, id: number, pri: number): "BURIED" | Refusal {
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
    j.deadline = this.clock.now() + j.ttrMs;
    this.#ttr.push(j);
    return true;
  }

  /** kick on the used tube: buried jobs if it has any (never delayed ones in the same call), else delayed. */
  kick(c: Client, bound: number): number | "INTERNAL_ERROR" {
    const t = c.use;
    const fromBuried = t.buried.size > 0;
    let n = 0;
    while (n < bound) {
      const j = fromBuried ? t.buried.head : t.delayed.peek();
      if (!j) break;
      if (!this.#kickOne(j)) return n > 0 ? n : "INTERNAL_ERROR";
      n++;
    }
    if (n > 0 && t.waiting > 0) this.#serve([t]);
    return n;
  }

  /** kick-job: a buried or delayed job in any tube. */
  kickJob(id: number): "KICKED" | Refusal {
    const j = this.#jobs.get(id);
    if (!j || (j.state !== "buried" && j.state !== "delayed")) return "NOT_FOUND";
    if (!this.#kickOne(j)) return "INTERNAL_ERROR";
    if (j.tube.waiting > 0) this.#serve([j.tube]);
    return "KICKED";
  }

  #kickOne(j: Job): boolean {
    const now = this.clock.now();
    if (this.#logging && !this.#logUpdate(j, "ready", now, (rec) => rec.kicks++)) return false;
    this.#unlink(j);
    j.kicks++;
    j.tube.pushReady(j, now);
    return true;
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
    const t = this.#tubes.get(name);
    if (!t) return false;
    t.cmdPauseTube++;
    if (delaySec === 0) {
      t.pauseMs = t.unpauseAt = 0;
      this.#tubes.paused.delete(t);
      this.#serve([t]);
    } else {
      t.pauseMs = delaySec * 1000;
      t.unpauseAt = this.clock.now() + t.pauseMs;
      this.#tubes.paused.add(t);
      this.#schedule(t.unpauseAt);
    }
    return true;
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
    const now = this.clock.now();
    const touched = new Set<Tube>();
    for (let j = this.#delayed.peek(); j && j.deadline <= now; j = this.#delayed.peek()) {
      this.#unlink(j);
      j.tube.pushReady(j, now);
      touched.add(j.tube);
    }
    // Released at now >= deadline: 1.12 can miss a job whose timer fires in the same
    // microsecond as its deadline and leave it reserved indefinitely (#262, #380).
    for (let j = this.#ttr.peek(); j && j.deadline <= now; j = this.#ttr.peek()) {
      this.#unlink(j);
      j.timeouts++;
      this.counters.jobTimeouts++;
      j.tube.pushReady(j, now);
      touched.add(j.tube);
    }
    for (const t of this.#tubes.paused) {
      if (t.unpauseAt <= now) {
        t.pauseMs = t.unpauseAt = 0;
        this.#tubes.paused.delete(t);
        touched.add(t);
      }
    }
    if (touched.size > 0) this.#serve([...touched]);
    const walIn = this.#logging ? this.wal.tick(now) : undefined;
    this.#waits.wakeDue(now);
    this.#armed = walIn === undefined ? this.nextDue() : Math.min(this.nextDue(), now + walIn);
    return this.#armed;
  }

  /** When tick() next has work (monotonic ms), or Infinity. */
  nextDue(): number {
    let t = Infinity;
    const d = this.#delayed.peek();
    if (d) t = d.deadline;
    const r = this.#ttr.peek();
    if (r && r.deadline < t) t = r.deadline;
    const w = this.#waits.nextWake();
    if (w < t) t = w;
    for (const p of this.#tubes.paused) if (p.unpauseAt < t) t = p.unpauseAt;
    return t;
  }

  /** End a client's wait without a job (its peer half-closed): TIMED_OUT. */
  cancelWait(c: Client): void {
    if (c.isWaiting) this.#waits.finish(c, "TIMED_OUT");
  }

  // ---- stats ----------------------------------------------------------------------

  statsJob(id: number): JobStats | undefined {
    const j = this.#jobs.get(id);
    return j && jobStats(j, this.clock.now(), this.wal.fileOf(id));
  }

  statsTube(name: string): TubeStats | undefined {
    const t = this.#tubes.get(name);
    return t && tubeStats(t, this.clock.now());
  }

  /** The gauges of `stats`. */
  gauges(): Gauges {
    return {
      ...jobGauges(this.#tubes.all()),
      tubes: this.#tubes.size,
      connections: this.#connections,
      producers: this.#producers,
      workers: this.#workers,
      waiting: this.#waits.count,
    };
  }

  // ---- restart --------------------------------------------------------------------

  /**
   * Rebuild jobs recovered from the log. Reserved jobs come back ready; delayed jobs keep
   * their absolute deadline (ready at once if it has passed); buried order is kept.
   * Ids continue above maxId. Counters are not restored (as 1.12).
   */
  restore(records: Iterable<JobRecord>, maxId: number): void {
    this.#records.restore(records, this.#tubes, (j) => this.#jobs.set(j.id, j), (j) => this.#addDelayed(j));
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
    if (j.state === "ready") this.latency.readyToReserve.observe(now - j.readySince);
    j.reservedAt = now;
    j.state = "reserved";
    j.owner = c;
    j.deadline = now + j.ttrMs;
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
