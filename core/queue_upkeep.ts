// The queue's work off the put/reserve/delete path: the one timer's tick, kick and
// kick-job, reserve-job, pause-tube, connections coming and going, and the stats views. Free functions over the
// queue's parts (QueueParts, built once by Queue), so the hot path keeps its direct fields.
import { Client, type Heap, type Job, type Tube, type WaitEnd } from "./model.ts";
import type { Waits } from "./waits.ts";
import type { Clock } from "./clock.ts";
import { type Counters, type Gauges, jobGauges, type JobStats, jobStats, type TubeStats, tubeStats } from "./stats.ts";
import type { Tubes } from "./tubes.ts";
import type { JobRecord, JobState, Wal } from "./wal.ts";
import type { JobTable } from "./job_table.ts";

/** Outcome of a command the log can refuse: the reply word, or a server error. */
export type Refusal = "NOT_FOUND" | "INTERNAL_ERROR";

/** Connections by kind, for the `stats` gauges. */
export interface Presence {
  connections: number;
  producers: number;
  workers: number;
}

/** The queue's state and helpers these functions share with it (the same objects, not copies). */
export interface QueueParts {
  readonly clock: Clock;
  readonly wal: Wal;
  readonly logging: boolean;
  readonly counters: Counters;
  readonly presence: Presence;
  readonly jobs: JobTable<Job>;
  readonly tubes: Tubes;
  /** Every delayed job, for promotion; every reserved job, for TTR expiry. */
  readonly delayed: Heap<Job>;
  readonly ttr: Heap<Job>;
  readonly waits: Waits;
  unlink(j: Job): void;
  reserveFor(c: Client, j: Job, now: number): void;
  markWorker(c: Client): void;
  serve(tubes: Tube[]): void;
  schedule(atMs: number): void;
  logUpdate(j: Job, state: JobState | "deleted", now: number, change?: (rec: JobRecord) => void): boolean;
}

/** A new connection: it uses and watches the default tube. */
export function join(q: QueueParts, onWake: (result: Job | WaitEnd) => void): Client {
  const c = new Client(q.tubes.default, onWake);
  q.tubes.default.using++;
  q.tubes.default.watching++;
  q.presence.connections++;
  q.counters.totalConnections++;
  return c;
}

/** A connection closed: its reservations go straight back to ready (no counters move). */
export function leave(q: QueueParts, c: Client): void {
  if (c.isWaiting) q.waits.end(c);
  const touched: Tube[] = [];
  const now = q.clock.now();
  for (let j = c.reserved.head; j; j = c.reserved.head) {
    q.unlink(j);
    j.tube.pushReady(j, now);
    if (!touched.includes(j.tube)) touched.push(j.tube);
  }
  c.use.using--;
  q.tubes.dropIfUnused(c.use);
  for (const t of c.watching) {
    t.watching--;
    q.tubes.dropIfUnused(t);
  }
  c.watching.length = 0;
  q.presence.connections--;
  if (c.producer) q.presence.producers--;
  if (c.worker) q.presence.workers--;
  q.serve(touched);
}

/** reserve-job: any ready, delayed or buried job in any tube, ignoring pauses and drain. */
export function reserveJob(q: QueueParts, c: Client, id: number): Job | undefined {
  const j = q.jobs.get(id);
  if (!j || j.state === "reserved") return undefined;
  q.unlink(j);
  q.reserveFor(c, j, q.clock.now());
  q.markWorker(c);
  return j;
}

/** kick on the used tube: buried jobs if it has any (never delayed ones in the same call), else delayed. */
export function kick(q: QueueParts, c: Client, bound: number): number | "INTERNAL_ERROR" {
  const t = c.use;
  const fromBuried = t.buried.size > 0;
  let n = 0;
  while (n < bound) {
    const j = fromBuried ? t.buried.head : t.delayed.peek();
    if (!j) break;
    if (!kickOne(q, j)) return n > 0 ? n : "INTERNAL_ERROR";
    n++;
  }
  if (n > 0 && t.waiting > 0) q.serve([t]);
  return n;
}

/** kick-job: a buried or delayed job in any tube. */
export function kickJob(q: QueueParts, id: number): "KICKED" | Refusal {
  const j = q.jobs.get(id);
  if (!j || (j.state !== "buried" && j.state !== "delayed")) return "NOT_FOUND";
  if (!kickOne(q, j)) return "INTERNAL_ERROR";
  if (j.tube.waiting > 0) q.serve([j.tube]);
  return "KICKED";
}

function kickOne(q: QueueParts, j: Job): boolean {
  const now = q.clock.now();
  if (q.logging && !q.logUpdate(j, "ready", now, (rec) => rec.kicks++)) return false;
  q.unlink(j);
  j.kicks++;
  j.tube.pushReady(j, now);
  return true;
}

/** pause-tube; 0 s unpauses at once and serves waiting clients. False if no such tube. */
export function pauseTube(q: QueueParts, name: string, delaySec: number): boolean {
  const t = q.tubes.get(name);
  if (!t) return false;
  t.cmdPauseTube++;
  if (delaySec === 0) {
    t.pauseMs = t.unpauseAt = 0;
    q.tubes.paused.delete(t);
    q.serve([t]);
  } else {
    t.pauseMs = delaySec * 1000;
    t.unpauseAt = q.clock.now() + t.pauseMs;
    q.tubes.paused.add(t);
    q.schedule(t.unpauseAt);
  }
  return true;
}

/**
 * Do everything that is due: promote delayed jobs, expire TTRs, end pauses, wake
 * waiting clients. Returns when the next thing falls due (monotonic ms, or Infinity).
 */
export function tick(q: QueueParts): number {
  const now = q.clock.now();
  const touched = new Set<Tube>();
  for (let j = q.delayed.peek(); j && j.deadline <= now; j = q.delayed.peek()) {
    q.unlink(j);
    j.tube.pushReady(j, now);
    touched.add(j.tube);
  }
  // Released at now >= deadline: 1.12 can miss a job whose timer fires in the same
  // microsecond as its deadline and leave it reserved indefinitely (#262, #380).
  for (let j = q.ttr.peek(); j && j.deadline <= now; j = q.ttr.peek()) {
    q.unlink(j);
    j.timeouts++;
    q.counters.jobTimeouts++;
    j.tube.pushReady(j, now);
    touched.add(j.tube);
  }
  for (const t of q.tubes.paused) {
    if (t.unpauseAt <= now) {
      t.pauseMs = t.unpauseAt = 0;
      q.tubes.paused.delete(t);
      touched.add(t);
    }
  }
  if (touched.size > 0) q.serve([...touched]);
  const walIn = q.logging ? q.wal.tick(now) : undefined;
  q.waits.wakeDue(now);
  return walIn === undefined ? nextDue(q) : Math.min(nextDue(q), now + walIn);
}

/** When tick() next has work (monotonic ms), or Infinity. */
export function nextDue(q: QueueParts): number {
  let t = Infinity;
  const d = q.delayed.peek();
  if (d) t = d.deadline;
  const r = q.ttr.peek();
  if (r && r.deadline < t) t = r.deadline;
  const w = q.waits.nextWake();
  if (w < t) t = w;
  for (const p of q.tubes.paused) if (p.unpauseAt < t) t = p.unpauseAt;
  return t;
}

/** The gauges of `stats`. */
export function gauges(q: QueueParts): Gauges {
  return {
    ...jobGauges(q.tubes.all()),
    tubes: q.tubes.size,
    connections: q.presence.connections,
    producers: q.presence.producers,
    workers: q.presence.workers,
    waiting: q.waits.count,
  };
}

export function statsJob(q: QueueParts, id: number): JobStats | undefined {
  const j = q.jobs.get(id);
  return j && jobStats(j, q.clock.now(), q.wal.fileOf(id));
}

export function statsTube(q: QueueParts, name: string): TubeStats | undefined {
  const t = q.tubes.get(name);
  return t && tubeStats(t, q.clock.now());
}
