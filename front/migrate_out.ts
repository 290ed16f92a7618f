// `tubeway migrate --to DIR`: every job of the schema into a new log directory (front/migrate.ts
// says how).
import { errorText } from "../core/files.ts";
import type { JobRecord } from "../core/memory/wal.ts";
import type { Row, Sql } from "../core/pg/sql.ts";
import { type Flow, readFlow, writeFlow } from "./migrate_flow.ts";
import { BURIED, DELAYED, ID_BLOCK, SCHEMA_VERSION } from "../core/pg/schema.ts";
import type { RetryPolicy } from "../core/engine.ts";
import { openBinlog } from "../core/memory/binlog/open.ts";
import { MAX_JOB_SIZE_LIMIT } from "./config.ts";
import { DEFAULT_BINLOG_SIZE, DEFAULT_FSYNC_MS } from "../core/memory/binlog/options.ts";
import { BATCH_JOBS, counts, dbFailure, fail, liveNodes, type MigrateEnv, type MigrateOutcome } from "./migrate.ts";
import { counted } from "../core/memory/beanstalkd_log/read.ts";

/** Write every job of `schema` as a new log directory `dir` (which exists and is empty). */
export async function migrateOut(env: MigrateEnv, schema: string, dir: string): Promise<MigrateOutcome> {
  let names;
  try {
    names = env.files.list(dir);
  } catch (e) {
    return fail("locked", `cannot use ${dir}: ${errorText(e)}`);
  }
  if (names.length > 0) return fail("refused", `${dir} is not empty: give a new or empty directory`);
  let found;
  try {
    const [row] = await env.sql.query(`select to_regclass($1)::text as jobs, to_regclass($2)::text as migrations`, [
      `${schema}.jobs`,
      `${schema}.migrations`,
    ]);
    let version = 0;
    if (row?.migrations) {
      const [v] = await env.sql.query(`select coalesce(max(version), 0)::float8 as v from ${schema}.migrations`);
      version = Number(v?.v ?? 0);
    }
    found = { has: Boolean(row?.jobs), version };
  } catch (e) {
    return dbFailure(env, e, false);
  }
  if (!found.has) return fail("refused", `schema ${schema} at ${env.target} has no tubeway tables`);
  if (found.version > SCHEMA_VERSION) {
    return fail(
      "database",
      `schema ${schema} is at version ${found.version}, newer than this tubeway knows (${SCHEMA_VERSION}): upgrade tubeway`,
    );
  }
  let snap: Snapshot;
  try {
    snap = await env.sql.transaction((tx) => snapshot(tx, schema, found.version));
  } catch (e) {
    return dbFailure(env, e, true);
  }
  const now = env.nowWallMs();
  const jobs = snap.rows.map((r) => recordOf(r, now));
  let maxId = snap.maxId;
  for (const j of jobs) maxId = Math.max(maxId, j.id);
  const written = await writeLog(env, dir, jobs, maxId, snap.policies, snap.flow);
  if (written !== undefined) {
    return written.kind === "failed" && written.why === "failed" ? takeBack(env, dir, written.message) : written;
  }
  const lines = [
    `exported ${counts(jobs)} of schema ${schema} at ${env.target} to ${dir}; start tubeway with -b ${dir}`,
  ];
  if (snap.paused.length > 0) {
    lines.push(`dropped the pauses of ${counted(snap.paused.length, "tube")}: ${snap.paused.join(" ")}`);
  }
  if (snap.reserved > 0) lines.push(`${counted(snap.reserved, "reserved job")} exported ready`);
  if (snap.live > 0) {
    lines.push(
      `${snap.live} tubeway node(s) are serving schema ${schema}: their changes after this snapshot are not in ${dir}`,
    );
  }
  return { kind: "done", lines };
}

/** A job row of the snapshot as a log record, its times measured against this machine's wall clock `now`. */
function recordOf(r: Row, now: number): JobRecord {
  const state = Number(r.state);
  const left = Number(r.left_ms ?? 0);
  const delayed = state === DELAYED && left > 0;
  return {
    id: Number(r.id),
    tube: String(r.tube),
    pri: Number(r.pri),
    delayMs: Number(r.delay_ms),
    ttrMs: Number(r.ttr_ms),
    createdAtMs: Math.round(now - Number(r.age_ms)),
    deadlineAtMs: delayed ? Math.round(now + left) : 0,
    // reserved (or due) jobs come back ready, as after a restart
    state: state === BURIED ? "buried" : delayed ? "delayed" : "ready",
    reserves: Number(r.reserves),
    timeouts: Number(r.timeouts),
    releases: Number(r.releases),
    buries: Number(r.buries),
    kicks: Number(r.kicks),
    body: r.body as Uint8Array,
    ...(r.ukey == null ? {} : { key: String(r.ukey) }),
    ...(r.dlq_from == null ? {} : { from: String(r.dlq_from) }),
  };
}

/**
 * A failed export's files go again (`dir` was empty when it began, so all of them are
 * its own): a partial log would be served by `tubeway -b DIR` as if it were the whole
 * database.
 */
function takeBack(env: MigrateEnv, dir: string, message: string): MigrateOutcome {
  const left: string[] = [];
  let names: string[] = [];
  try {
    names = env.files.list(dir);
  } catch (e) {
    return fail("failed", `${message}; cannot list ${dir} (${errorText(e)}): remove it, it holds part of the jobs`);
  }
  for (const name of names) {
    try {
      env.files.unlink(`${dir}/${name}`);
    } catch {
      left.push(name);
    }
  }
  if (left.length > 0) {
    return fail("failed", `${message}; could not remove ${left.join(" ")}: remove ${dir}, it holds part of the jobs`);
  }
  return fail("failed", `${message}; removed what it wrote, ${dir} is empty again`);
}

interface Snapshot {
  rows: Record<string, unknown>[];
  /** The highest id the sequence may have handed out (a node's whole block). */
  maxId: number;
  paused: string[];
  /** set-dlq's and set-backoff's, by tube (none before migration 3). */
  policies: Map<string, RetryPolicy>;
  /** Limits and schedules (none before migration 4). */
  flow: Flow;
  reserved: number;
  live: number;
}

/** Every job and what goes with it, read in one snapshot. */
async function snapshot(tx: Sql, schema: string, version: number): Promise<Snapshot> {
  await tx.query("set transaction isolation level repeatable read, read only");
  /** The extensions' columns and table exist (migration 3). */
  const extended = version >= 3;
  const rows = await tx.query(
    `select id::float8 as id, tube, state, pri::float8 as pri, delay_ms::float8 as delay_ms, ttr_ms::float8 as ttr_ms,
        (extract(epoch from now() - created_at) * 1000)::float8 as age_ms,
        (extract(epoch from ready_at - now()) * 1000)::float8 as left_ms,
        reserves, timeouts, releases, buries, kicks, body${extended ? ", ukey, dlq_from" : ""}
      from ${schema}.jobs order by state = ${BURIED}, case when state = ${BURIED} then buried_seq end, id`,
  );
  const [seq] = await tx.query(
    `select case when is_called then last_value + ${ID_BLOCK} - 1 else 0 end::float8 as m from ${schema}.job_ids`,
  );
  const paused = await tx.query(`select name from ${schema}.tubes where pause_until > now() order by name`);
  const policies = new Map<string, RetryPolicy>();
  if (extended) {
    const rows = await tx.query(
      `select tube, max_attempts::float8 as m, dead_tube, backoff_base::float8 as b, backoff_cap::float8 as c
        from ${schema}.policies order by seq`,
    );
    for (const r of rows) {
      policies.set(String(r.tube), {
        maxAttempts: Number(r.m),
        deadTube: String(r.dead_tube),
        backoffBaseSec: Number(r.b),
        backoffCapSec: Number(r.c),
      });
    }
  }
  return {
    policies,
    flow: await readFlow(tx, schema, version),
    rows,
    maxId: Number(seq?.m ?? 0),
    paused: paused.map((r) => String(r.name)),
    reserved: rows.filter((r) => Number(r.state) === 1).length,
    live: await liveNodes(tx, schema),
  };
}

/** The jobs through the server's own log writer (so the format is exactly the server's); undefined when written. */
async function writeLog(
  env: MigrateEnv,
  dir: string,
  jobs: readonly JobRecord[],
  maxId: number,
  policies: ReadonlyMap<string, RetryPolicy>,
  flow: Flow,
): Promise<MigrateOutcome | undefined> {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  let opened;
  try {
    opened = openBinlog(
      {
        dir,
        fsyncMs: DEFAULT_FSYNC_MS,
        durableAcks: false,
        maxFileSize: DEFAULT_BINLOG_SIZE,
        maxJobSize: MAX_JOB_SIZE_LIMIT,
        log: env.say,
      },
      env.files,
      { now: () => env.nowWallMs() },
      (id) => byId.get(id),
    );
  } catch (e) {
    return fail("locked", e instanceof Error ? e.message : String(e));
  }
  const wal = opened.wal;
  try {
    for (const [tube, p] of policies) {
      if (!wal.policy(tube, p)) return fail("failed", `cannot write the policy of tube ${tube} into ${dir}`);
    }
    const notWritten = writeFlow(wal, flow);
    if (notWritten) return fail("failed", `cannot write ${notWritten} into ${dir}`);
    let n = 0;
    for (const j of jobs) {
      if (!wal.put(j) || (++n % BATCH_JOBS === 0 && !wal.flush())) {
        return fail("failed", `cannot write job ${j.id} into ${dir} (the messages above say why)`);
      }
    }
    if (!wal.flush() || !wal.raiseIds(maxId) || !(await wal.syncAll())) {
      return fail("failed", `cannot write the jobs to disk in ${dir}`);
    }
  } finally {
    wal.close();
  }
  return undefined;
}
