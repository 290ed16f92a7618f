// Read-only JSON views for the dashboard: the server overview (stats, drain state,
// every tube's counts) and one tube's jobs in a state. Bodies are sent as data (text
// when they are printable UTF-8, hex otherwise, truncated); the page shows them with
// textContent, never as HTML.
import type { Queue } from "../../core/queue.ts";
import { deadlineBefore, type Job, readyBefore } from "../../core/model.ts";
import { CMD_KEYS, tubeStats } from "../../core/stats.ts";
import { oldestReadyMs } from "./metrics.ts";

/** Most tubes an overview lists (the busiest first); metrics have them all. */
export const MAX_TUBES_SHOWN = 1000;
/** Most jobs one listing returns, and how much of each body. */
export const MAX_JOBS_SHOWN = 100;
export const BODY_PREVIEW_BYTES = 512;

export interface OverviewSource {
  queue: Queue;
  startedAtMs: number;
  version: string;
  /** Write actions are possible (a token is configured). */
  writable: boolean;
}

export function overview(src: OverviewSource) {
  const q = src.queue;
  const now = q.clock.now();
  const g = q.gauges();
  const all = q.tubeList();
  const tubes = (all.length > MAX_TUBES_SHOWN ? [...all].sort((a, b) => b.jobs - a.jobs) : [...all])
    .slice(0, MAX_TUBES_SHOWN)
    .map((t) => ({ ...tubeStats(t, now), oldestReadyS: oldestReadyMs(t, now) / 1000 }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const commands: Record<string, number> = {};
  CMD_KEYS.forEach((k, i) => (commands[k] = q.counters.cmd[i]!));
  return {
    version: src.version,
    uptimeS: Math.floor((now - src.startedAtMs) / 1000),
    draining: q.draining,
    writable: src.writable,
    jobs: { urgent: g.urgent, ready: g.ready, reserved: g.reserved, delayed: g.delayed, buried: g.buried },
    connections: { current: g.connections, producers: g.producers, workers: g.workers, waiting: g.waiting },
    totalJobs: q.counters.totalJobs,
    jobTimeouts: q.counters.jobTimeouts,
    totalConnections: q.counters.totalConnections,
    tubeCount: all.length,
    tubes,
    commands,
  };
}

/**
 * The k least items of a binary heap stored in an array (children of i at 2i+1, 2i+2),
 * in order, without sorting the whole heap: a frontier grows from the root, and the
 * least frontier item is always the next in order. O(k^2) for the small k shown.
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

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A body preview: printable UTF-8 as text, anything else as hex; never more than BODY_PREVIEW_BYTES. */
export function bodyPreview(body: Uint8Array): { text: string } | { hex: string } {
  const head = body.subarray(0, BODY_PREVIEW_BYTES);
  try {
    const text = utf8.decode(head);
    // deno-lint-ignore no-control-regex
    if (!/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(text)) return { text };
  } catch { /* not UTF-8 (or cut inside a character): hex */ }
  return { hex: Array.from(head, (b) => b.toString(16).padStart(2, "0")).join("") };
}

export type ListState = "ready" | "delayed" | "buried";

/** Up to `limit` jobs of a tube in a state, in the order the queue serves them; undefined if no such tube. */
export function tubeJobs(q: Queue, name: string, state: ListState, limit: number) {
  const t = q.tubeList().find((x) => x.name === name);
  if (!t) return undefined;
  const k = Math.max(1, Math.min(limit, MAX_JOBS_SHOWN));
  let jobs: Job[];
  if (state === "ready") jobs = leastOfHeap(t.ready.items, readyBefore, k);
  else if (state === "delayed") jobs = leastOfHeap(t.delayed.items, deadlineBefore, k);
  else {
    jobs = [];
    for (let j = t.buried.head; j && jobs.length < k; j = j.next) jobs.push(j);
  }
  const now = q.clock.now();
  const total = state === "ready" ? t.ready.size : state === "delayed" ? t.delayed.size : t.buried.size;
  return {
    tube: t.name,
    state,
    total,
    jobs: jobs.map((j) => {
      const body = j.body.subarray(0, j.size);
      return {
        id: j.id,
        pri: j.pri,
        ageS: Math.floor((now - j.createdAt) / 1000),
        delayS: Math.floor(j.delayMs / 1000),
        ttrS: Math.floor(j.ttrMs / 1000),
        timeLeftS: state === "delayed" ? Math.max(0, Math.ceil((j.deadline - now) / 1000)) : 0,
        reserves: j.reserves,
        timeouts: j.timeouts,
        buries: j.buries,
        kicks: j.kicks,
        size: j.size,
        truncated: j.size > BODY_PREVIEW_BYTES,
        ...bodyPreview(body),
      };
    }),
  };
}
