// The in-memory engine's read-only views: stats-job, stats-tube, the job gauges of
// `stats`, and the tube snapshots and job listings of the metrics port and the
// dashboard, as the plain objects core/engine.ts defines. Nothing here changes state.
import { deadlineBefore, type Job, readyBefore, type Tube } from "./model.ts";
import type { JobList, JobSnapshot, JobStats, ListState, TubeSnapshot, TubeStats } from "../engine.ts";
import { heldJobs } from "./limits.ts";

/** stats-job for j at monotonic time now; `file` is the log file holding it (0 without -b). */
export function jobStats(j: Job, now: number, file: number): JobStats {
  const timed = j.state === "reserved" || j.state === "delayed";
  return {
    id: j.id,
    tube: j.tube.name,
    state: j.state,
    pri: j.pri,
    age: Math.trunc((now - j.createdAt) / 1000),
    delay: Math.trunc(j.delayMs / 1000),
    ttr: Math.trunc(j.ttrMs / 1000),
    timeLeft: timed ? Math.trunc((j.deadline - now) / 1000) : 0,
    file,
    reserves: j.reserves,
    timeouts: j.timeouts,
    releases: j.releases,
    buries: j.buries,
    kicks: j.kicks,
  };
}

/** stats-tube for t at monotonic time now; an expired pause shows as 0 until the tick clears it. */
export function tubeStats(t: Tube, now: number): TubeStats {
  const paused = t.unpauseAt > now;
  const st: TubeStats = {
    name: t.name,
    urgent: t.urgent,
    ready: t.ready.size,
    reserved: t.reserved,
    delayed: t.delayed.size,
    buried: t.buried.size,
    totalJobs: t.totalJobs,
    using: t.using,
    watching: t.watching,
    waiting: t.waiting,
    cmdDelete: t.cmdDelete,
    cmdPauseTube: t.cmdPauseTube,
    pause: paused ? Math.trunc(t.pauseMs / 1000) : 0,
    pauseTimeLeft: paused ? Math.trunc((t.unpauseAt - now) / 1000) : 0,
  };
  if (t.policy !== null) st.policy = { ...t.policy };
  if (t.limits !== null) st.limits = t.limits.view;
  return st;
}

/** Ms since the oldest ready job of t became ready; 0 when none is ready. A scan: for scrapes, not commands. */
export function oldestReadyMs(t: Tube, now: number): number {
  let oldest = Infinity;
  for (const j of t.ready.items) if (j.deadline < oldest) oldest = j.deadline; // a ready job's: when it became ready
  return oldest === Infinity ? 0 : Math.max(0, now - oldest);
}

/** One tube for the metrics port and the dashboard. */
export function tubeSnapshot(t: Tube, now: number): TubeSnapshot {
  const paused = t.unpauseAt > now;
  return {
    ...tubeStats(t, now),
    paused,
    pauseLeftMs: paused ? t.unpauseAt - now : 0,
    oldestReadyMs: oldestReadyMs(t, now),
    heldJobs: heldJobs(t),
  };
}

/** The job gauges of `stats`, summed over every tube. */
export function jobGauges(tubes: readonly Tube[]) {
  let urgent = 0, ready = 0, reserved = 0, delayed = 0, buried = 0;
  for (const t of tubes) {
    urgent += t.urgent;
    ready += t.ready.size;
    reserved += t.reserved;
    delayed += t.delayed.size;
    buried += t.buried.size;
  }
  return { urgent, ready, reserved, delayed, buried };
}

/**
 * The k least items of a binary heap stored in an array (children of i at 2i+1, 2i+2),
 * in order, without sorting the whole heap: a frontier grows from the root, kept as a
 * small heap itself, and its least item is always the next in order. O(k log k).
 */
export function leastOfHeap<T>(items: readonly T[], less: (a: T, b: T) => boolean, k: number): T[] {
  const out: T[] = [];
  const frontier: number[] = items.length > 0 ? [0] : [];
  const before = (a: number, b: number) => less(items[frontier[a]!]!, items[frontier[b]!]!);
  const swap = (a: number, b: number) => {
    const x = frontier[a]!;
    frontier[a] = frontier[b]!;
    frontier[b] = x;
  };
  while (out.length < k && frontier.length > 0) {
    const at = frontier[0]!;
    out.push(items[at]!);
    frontier[0] = frontier[frontier.length - 1]!;
    frontier.pop();
    for (let i = 0;;) { // sift down
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < frontier.length && before(l, m)) m = l;
      if (r < frontier.length && before(r, m)) m = r;
      if (m === i) break;
      swap(i, m);
      i = m;
    }
    for (const child of [2 * at + 1, 2 * at + 2]) {
      if (child >= items.length) continue;
      frontier.push(child);
      for (let i = frontier.length - 1; i > 0 && before(i, (i - 1) >> 1); i = (i - 1) >> 1) swap(i, (i - 1) >> 1);
    }
  }
  return out;
}

/**
 * Up to `limit` jobs of t in a state, in the order the queue serves them, after the
 * first `offset`. O((offset + limit) log) for ready and delayed, O(offset + limit) buried.
 */
export function listJobs(t: Tube, state: ListState, limit: number, now: number, offset = 0): JobList {
  const k = Math.max(0, limit);
  const skip = Math.max(0, offset);
  let jobs: Job[];
  if (state === "ready") jobs = leastOfHeap(t.ready.items, readyBefore, skip + k).slice(skip);
  else if (state === "delayed") jobs = leastOfHeap(t.delayed.items, deadlineBefore, skip + k).slice(skip);
  else {
    jobs = [];
    let i = 0;
    for (let j = t.buried.head; j && jobs.length < k; j = j.next) if (i++ >= skip) jobs.push(j);
  }
  const total = state === "ready" ? t.ready.size : state === "delayed" ? t.delayed.size : t.buried.size;
  return { tube: t.name, state, total, jobs: jobs.map((j) => jobSnapshot(j, now)) };
}

function jobSnapshot(j: Job, now: number): JobSnapshot {
  return {
    id: j.id,
    pri: j.pri,
    ageMs: now - j.createdAt,
    delayMs: j.delayMs,
    ttrMs: j.ttrMs,
    timeLeftMs: j.state === "delayed" ? Math.max(0, j.deadline - now) : 0,
    reserves: j.reserves,
    timeouts: j.timeouts,
    releases: j.releases,
    buries: j.buries,
    kicks: j.kicks,
    body: j.body.subarray(0, j.size),
  };
}
