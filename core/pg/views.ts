// What the engine's rows look like as the answers of core/engine.ts: stats-job,
// stats-tube, the dashboard's job listings. Pure functions of a row.
import type { JobOut, JobSnapshot, JobState, JobStats, ListState, TubeStats } from "../engine.ts";
import type { Row } from "./sql.ts";
import type { PgTube } from "./client.ts";

const STATE_NAMES: JobState[] = ["ready", "reserved", "delayed", "buried"];

/** A found or reserved job from a row with id and body. */
export function jobOut(row: Row): JobOut {
  return { id: Number(row.id), body: row.body as Uint8Array };
}

/** Whole seconds (truncated) of a number of ms. */
function seconds(ms: unknown): number {
  return Math.trunc(Number(ms) / 1000);
}

/** An error's message, for log lines. */
export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** stats-job of job `id` from its statsJob row. */
export function jobStatsOf(id: number, r: Row): JobStats {
  const st: JobStats = {
    id,
    tube: r.tube as string,
    state: STATE_NAMES[Number(r.state)]!,
    pri: Number(r.pri),
    age: seconds(r.age_ms),
    delay: seconds(r.delay_ms),
    ttr: seconds(r.ttr_ms),
    timeLeft: r.left_ms === null ? 0 : Math.max(0, seconds(r.left_ms)),
    file: 0,
    reserves: Number(r.reserves),
    timeouts: Number(r.timeouts),
    releases: Number(r.releases),
    buries: Number(r.buries),
    kicks: Number(r.kicks),
  };
  // extensions: only on jobs that have them
  if (r.dlq_from != null) st.deadLetterFrom = r.dlq_from as string;
  if (r.ukey != null) st.key = r.ukey as string;
  return st;
}

/** One job of a listJobs row. */
export function jobSnapshotOf(r: Row, state: ListState): JobSnapshot {
  const body = r.body as Uint8Array;
  return {
    id: Number(r.id),
    pri: Number(r.pri),
    ageMs: Number(r.age_ms),
    delayMs: Number(r.delay_ms),
    ttrMs: Number(r.ttr_ms),
    timeLeftMs: state === "delayed" ? Number(r.left_ms) : 0,
    reserves: Number(r.reserves),
    timeouts: Number(r.timeouts),
    releases: Number(r.releases),
    buries: Number(r.buries),
    kicks: Number(r.kicks),
    body: body.subarray(0, body.length - 2),
  };
}

/** stats-tube from the tube's row and this node's references; undefined when neither has it. */
export function tubeStatsOf(name: string, row: Row | undefined, here: PgTube | undefined): TubeStats | undefined {
  const policy = row?.dlq_max == null ? undefined : {
    maxAttempts: Number(row.dlq_max),
    deadTube: row.dlq_tube as string,
    backoffBaseSec: Number(row.backoff_base),
    backoffCapSec: Number(row.backoff_cap),
  };
  const limits = row?.max_reserved == null ? undefined : {
    concurrency: Number(row.max_reserved),
    rateCount: Number(row.rate_count),
    rateWindowSec: Number(row.rate_window_ms) / 1000,
  };
  if (!here && !policy && !limits && (!row || Number(row.jobs) === 0)) return undefined;
  const n = (k: string) => (row ? Number(row[k]) : 0);
  const left = Math.max(0, n("pause_left_ms"));
  const stats: TubeStats = {
    name,
    urgent: n("urgent"),
    ready: n("ready"),
    reserved: n("reserved"),
    delayed: n("delayed"),
    buried: n("buried"),
    totalJobs: n("total_jobs"),
    using: here?.using ?? 0,
    watching: here?.watching ?? 0,
    waiting: here?.waiting ?? 0,
    cmdDelete: n("cmd_delete"),
    cmdPauseTube: n("cmd_pause"),
    pause: left > 0 ? Math.trunc(n("pause_ms") / 1000) : 0,
    pauseTimeLeft: left > 0 ? Math.trunc(left / 1000) : 0,
  };
  if (policy) stats.policy = policy; // extensions: only on tubes that have one
  if (limits) stats.limits = limits;
  return stats;
}
