// Read-only JSON views for the dashboard: the server overview (stats, drain state,
// every tube's counts) and one tube's jobs in a state. Bodies are sent as data (text
// when they are printable UTF-8, hex otherwise, truncated); the page shows them with
// textContent, never as HTML.
import type { DatabaseHealth, Engine, ListState } from "../../core/engine.ts";
import { CMD_KEYS, type Counters } from "../counters.ts";

export type { ListState };

/** Most tubes an overview lists (the busiest first); metrics have them all. */
export const MAX_TUBES_SHOWN = 1000;
/** Most jobs one listing returns, and how much of each body. */
export const MAX_JOBS_SHOWN = 100;
export const BODY_PREVIEW_BYTES = 512;

export interface OverviewSource {
  engine: Engine;
  counters: Counters;
  startedAtMs: number;
  version: string;
  /** Write actions are possible (a token is configured). */
  writable: boolean;
}

export async function overview(src: OverviewSource) {
  const e = src.engine;
  const now = e.clock.now();
  const g = await e.stats();
  const c = src.counters;
  const all = await e.tubes(await e.tubeNames());
  const tubes = (all.length > MAX_TUBES_SHOWN ? [...all].sort((a, b) => jobsOf(b) - jobsOf(a)) : all)
    .slice(0, MAX_TUBES_SHOWN)
    .map(({ paused: _p, pauseLeftMs: _l, oldestReadyMs, ...stats }) => ({
      ...stats,
      oldestReadyS: oldestReadyMs / 1000,
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const commands: Record<string, number> = {};
  CMD_KEYS.forEach((k, i) => (commands[k] = c.cmd[i]!));
  return {
    version: src.version,
    uptimeS: Math.floor((now - src.startedAtMs) / 1000),
    /** The wall clock, Unix seconds (due times are shown from it). */
    nowSec: Math.floor(e.clock.wallMs() / 1000),
    draining: g.draining,
    writable: src.writable,
    jobs: { urgent: g.urgent, ready: g.ready, reserved: g.reserved, delayed: g.delayed, buried: g.buried },
    connections: { current: c.connections, producers: c.producers, workers: c.workers, waiting: g.waiting },
    totalJobs: g.totalJobs,
    jobTimeouts: g.jobTimeouts,
    totalConnections: c.totalConnections,
    tubeCount: all.length,
    tubes,
    commands,
    // recurring jobs (an engine without them: none)
    schedules: (await e.listSchedules?.()) ?? [],
    // only for an engine over a database (--pg)
    database: await database(e.metrics().database),
  };
}

/** The database and the cluster's live nodes (null when the nodes table cannot be read now). */
async function database(db: DatabaseHealth | undefined) {
  if (!db) return undefined;
  const nodes = await db.nodes().catch(() => null);
  return {
    available: db.available,
    reason: db.reason,
    node: db.node,
    leaseRemainingS: Math.round(db.leaseRemainingMs) / 1000,
    pool: { inUse: db.poolInUse, size: db.poolSize },
    transactions: db.transactions,
    retries: db.retries,
    errors: db.errors,
    nodes: nodes &&
      nodes.map((n) => ({
        id: n.id,
        host: n.host,
        pid: n.pid,
        leaseRemainingS: Math.round(n.leaseRemainingMs) / 1000,
        self: n.self,
      })),
  };
}

/** Jobs of a tube in any state. */
function jobsOf(t: { ready: number; reserved: number; delayed: number; buried: number }): number {
  return t.ready + t.reserved + t.delayed + t.buried;
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

/** Up to `limit` jobs of a tube in a state, in the order the engine serves them; undefined if no such tube. */
export async function tubeJobs(e: Engine, name: string, state: ListState, limit: number) {
  const list = await e.listJobs(name, state, Math.max(1, Math.min(limit, MAX_JOBS_SHOWN)));
  if (!list) return undefined;
  return {
    tube: list.tube,
    state,
    total: list.total,
    jobs: list.jobs.map((j) => ({
      id: j.id,
      pri: j.pri,
      ageS: Math.floor(j.ageMs / 1000),
      delayS: Math.floor(j.delayMs / 1000),
      ttrS: Math.floor(j.ttrMs / 1000),
      timeLeftS: Math.ceil(j.timeLeftMs / 1000),
      reserves: j.reserves,
      timeouts: j.timeouts,
      buries: j.buries,
      kicks: j.kicks,
      size: j.body.length,
      truncated: j.body.length > BODY_PREVIEW_BYTES,
      ...bodyPreview(j.body),
    })),
  };
}
