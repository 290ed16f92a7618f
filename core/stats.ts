// The in-memory engine's read-only views: stats-job, stats-tube, the job gauges of
// `stats`, and the tube snapshots and job listings of the metrics port and the
// dashboard, as the plain objects core/engine.ts defines. Nothing here changes state.
import { deadlineBefore, type Job, readyBefore, type Tube } from "./model.ts";
import type { JobList, JobSnapshot, JobStats, ListState, TubeSnapshot, TubeStats } from "./engine.ts";

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
  return {
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
 * in order, without sorting the whole heap: a frontier grows from the root, and the
 * least frontier item is always the next in order. O(k^2) for the small k listed.
 */
export function leastOfHeap<T>(items: readonly T[], less: (a: T, b: T) => boolean, k: number): T[] {
  const out: T[] = [];
  const frontier: number[] = items.length > 0 ? [0] : [];
  while (out.length < k && frontier.length > 0) {
    let best = 0;
    for (let i = 1; i < frontier.length; i++) if (less(items[frontier[i]!]!, items[frontier[best]!]!)) best = i;
    const at = frontier[best]!;
    frontier[best] = frontier[frontier.length - 1]!;
    frontier.pop();
    out.push(items[at]!);
    for (const child of [2 * at + 1, 2 * at + 2]) if (child < items.length) frontier.push(child);
  }
  return out;
}

/** Up to `limit` jobs of t in a state, in the order the queue serves them. */
export function listJobs(t: Tube, state: ListState, limit: number, now: number): JobList {
  const k = Math.max(0, limit);
  let jobs: Job[];
  if (state === "ready") jobs = leastOfHeap(t.ready.items, readyBefore, k);
  else if (state === "delayed") jobs = leastOfHeap(t.delayed.items, deadlineBefore, k);
  else {
    jobs = [];
    for (let j = t.buried.head; j && jobs.length < k; j = j.next) jobs.push(j);
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
