// `tubeway migrate`: moving the jobs of a stopped single node into PostgreSQL, and
// back. Into: the jobs tubeway would serve if started on the log directory now (its
// own log, or beanstalkd 1.12's files not imported yet: export.ts's jobsOfDir) go
// into the schema in one transaction, with their ids, tubes, fields, counters,
// bodies, put-unique keys and dead letters' origins, the tubes' retry policies and
// limits, and the schedules (migrate_flow.ts); the id sequence moves past the highest id. Back: every job of the schema,
// read in one snapshot, is written by the binlog writer (core/memory/binlog/) into a new
// log directory that `tubeway -b DIR` serves. Times cross over as durations (a job's
// age, a delay's time left) measured against each side's own clock, never as
// absolute times, so a database whose clock differs from this machine's keeps them.
// Runtime-neutral: SqlClient and Files come from front/migrate_cli.ts.
import type { Files } from "../core/files.ts";
import { errorText } from "../core/files.ts";
import type { JobRecord } from "../core/memory/wal.ts";
import type { Sql, SqlClient } from "../core/pg/sql.ts";
import { sqlState } from "../core/pg/sql.ts";
import { BURIED, DELAYED, ID_BLOCK, migrate, READY, SCHEMA_NAME, SCHEMA_VERSION } from "../core/pg/schema.ts";
import { jobsOfDir } from "../core/memory/beanstalkd_log/export.ts";
import { counted } from "../core/memory/beanstalkd_log/read.ts";
import type { RetryPolicy } from "../core/engine.ts";
import { openBinlog } from "../core/memory/binlog/open.ts";
import { MAX_JOB_SIZE_LIMIT } from "./config.ts";
import { DEFAULT_BINLOG_SIZE, DEFAULT_FSYNC_MS } from "../core/memory/binlog/options.ts";
import { type Flow, insertFlow, readFlow, writeFlow } from "./migrate_flow.ts";

export const MIGRATE_USAGE = `Use: tubeway migrate -b DIR [--pg URL] [--pg-schema S] [--merge]
     tubeway migrate --to DIR [--pg URL] [--pg-schema S]

With -b: copies the jobs of the log directory DIR (tubeway's, or one that
beanstalkd 1.12 wrote, as tubeway -b DIR would take it over; the server
stopped) into PostgreSQL, for tubeway --pg. DIR keeps its jobs.
With --to: writes every job of the schema as a new tubeway log directory DIR
(created if missing, must be empty), for tubeway -b DIR.

Kept: ids (new ids go above them), tubes, bodies, priorities, delays (time
left), TTRs, ages, the five counters, states; reserved jobs become ready, as
after a restart; the tubes' retry policies and limits, and the schedules with
their last runs. Not kept: connections and their reservations, tube pauses,
the cmd-* and total-jobs counters (as after a restart).

 --pg URL        the database (default: TUBEWAY_PG_URL, then the PG* variables)
 --pg-schema S   the schema of tubeway's tables (default: tubeway)
 --merge         with -b: add to a schema that already holds jobs (no id may
                 be in both)

Exit: 0 done, 5 usage, 10 DIR missing or in use, 69 database unusable,
1 refused (the target holds jobs, nodes are serving the schema) or failed.
`;

export type MigrateArgs =
  | { kind: "in"; dir: string; url: string | undefined; schema: string; merge: boolean }
  | { kind: "out"; dir: string; url: string | undefined; schema: string }
  | { kind: "help" }
  | { kind: "error"; message: string };

/** The flags after `migrate`; `envUrl` is TUBEWAY_PG_URL. Values attached (`-bDIR`, `--pg=URL`) or next. */
export function parseMigrateArgs(args: readonly string[], envUrl: string | undefined): MigrateArgs {
  let dir: string | undefined;
  let to: string | undefined;
  let url = envUrl || undefined;
  let schema = "tubeway";
  let merge = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const value = (): string | undefined => eq > 0 ? a.slice(eq + 1) : i + 1 < args.length ? args[++i] : undefined;
    if (a === "-h" || a === "--help") return { kind: "help" };
    if (a.startsWith("-b") && a.length > 2) dir = a.slice(2);
    else if (name === "-b" || name === "--to" || name === "--pg" || name === "--pg-schema") {
      const v = value();
      if (v === undefined) return { kind: "error", message: `${name} needs a value` };
      if (name === "-b") dir = v;
      else if (name === "--to") to = v;
      else if (name === "--pg") url = v;
      else schema = v;
    } else if (a === "--merge") merge = true;
    else return { kind: "error", message: a.startsWith("-") ? `unknown flag: ${a}` : `unexpected argument: ${a}` };
  }
  if (!SCHEMA_NAME.test(schema)) {
    return { kind: "error", message: `--pg-schema wants a lower-case SQL name (letters, digits, _), not ${schema}` };
  }
  if (dir !== undefined && to !== undefined) return { kind: "error", message: "give -b DIR or --to DIR, not both" };
  if (dir === undefined && to === undefined) {
    return { kind: "error", message: "give -b DIR (into the database) or --to DIR (out of it)" };
  }
  if (to !== undefined) {
    if (merge) return { kind: "error", message: "--merge is for -b DIR only" };
    return { kind: "out", dir: to, url, schema };
  }
  return { kind: "in", dir: dir!, url, schema, merge };
}

/**
 * How it ended. `why`: locked (DIR missing or in use: exit 10), database (cannot be
 * used: 69), refused (the target holds data, nodes serve the schema) or failed (1).
 */
export type MigrateOutcome =
  | { kind: "done"; lines: string[] }
  | { kind: "failed"; why: "locked" | "database" | "refused" | "failed"; message: string };

export interface MigrateEnv {
  files: Files;
  sql: SqlClient;
  /** Where the database is, for messages (no password). */
  target: string;
  /** Problems found on the way (damaged records), as they are found. */
  say: (m: string) => void;
  /** This machine's wall clock, ms. */
  nowWallMs: () => number;
}

/** Jobs per insert statement, and body bytes per statement (whichever comes first). */
const BATCH_JOBS = 1000;
const BATCH_BYTES = 4 << 20;

const fail = (why: "locked" | "database" | "refused" | "failed", message: string): MigrateOutcome => ({
  kind: "failed",
  why,
  message,
});

/** A statement failed: the database could not be used at all (connection, login) or the work failed. */
function dbFailure(env: MigrateEnv, e: unknown, connected: boolean): MigrateOutcome {
  const text = e instanceof Error ? e.message : String(e);
  return connected
    ? fail("failed", `migrate failed at ${env.target}: ${text}`)
    : fail("database", `cannot use PostgreSQL at ${env.target}: ${text}`);
}

/** Live nodes on the schema: their id blocks and reservations would clash with the migrated jobs. */
async function liveNodes(tx: Sql, schema: string): Promise<number> {
  const [row] = await tx.query(`select count(*)::float8 as n from ${schema}.nodes where lease_until > now()`);
  return Number(row?.n ?? 0);
}

function counts(jobs: readonly JobRecord[]): string {
  const n = { ready: 0, delayed: 0, buried: 0 };
  for (const j of jobs) if (j.state === "ready" || j.state === "delayed" || j.state === "buried") n[j.state]++;
  return `${counted(jobs.length, "job")} (${n.ready} ready, ${n.delayed} delayed, ${n.buried} buried)`;
}

/** Copy the jobs of log directory `dir` into `schema`. */
export async function migrateIn(
  env: MigrateEnv,
  dir: string,
  schema: string,
  merge: boolean,
): Promise<MigrateOutcome> {
  let lock;
  try {
    lock = env.files.lock(dir);
  } catch (e) {
    return fail("locked", e instanceof Error ? e.message : String(e));
  }
  try {
    for (const note of lock.notes ?? []) env.say(note);
    let read;
    try {
      read = jobsOfDir(dir, env.files, env.say);
    } catch (e) {
      return fail("locked", `failed to read wal dir ${dir}: ${errorText(e)}`);
    }
    if ("error" in read) return fail("failed", read.error);
    const now = env.nowWallMs();
    // a delayed job whose time has passed is ready, as tubeway would show it
    const jobs = read.jobs.map((j) =>
      j.state === "delayed" && j.deadlineAtMs <= now ? { ...j, state: "ready" as const } : j
    );
    try {
      await migrate(env.sql, schema);
    } catch (e) {
      return dbFailure(env, e, false);
    }
    let refused: string | undefined;
    try {
      await env.sql.transaction(async (tx) => {
        // puts and deletes of any node wait until this commits; readers go on
        await tx.query(`lock table ${schema}.jobs in exclusive mode`);
        const live = await liveNodes(tx, schema);
        if (live > 0) {
          refused = `${live} tubeway node(s) are serving schema ${schema} at ${env.target}: stop them first ` +
            `(they hold id blocks the migrated ids could collide with)`;
          return;
        }
        const [had] = await tx.query(`select count(*)::float8 as n from ${schema}.jobs`);
        if (Number(had?.n ?? 0) > 0 && !merge) {
          refused = `schema ${schema} at ${env.target} already holds ${had!.n} jobs: give an empty schema ` +
            `(--pg-schema), or --merge to add these`;
          return;
        }
        await insertJobs(tx, schema, jobs, now);
        // read.policies holds the log's PolicyRecords (core/memory/binlog/codec.ts): RetryPolicy's fields
        await insertPolicies(tx, schema, read.policies as ReadonlyMap<string, RetryPolicy>);
        await insertFlow(tx, schema, read);
        if (read.maxId > 0) {
          // the next block starts past every migrated id (after setval(v), nextval gives v + ID_BLOCK),
          // and never before the next one the sequence would have given
          await tx.query(
            `select setval('${schema}.job_ids', greatest($1::int8,
              (select case when is_called then last_value else 0 end from ${schema}.job_ids)))`,
            [read.maxId],
          );
        }
      });
    } catch (e) {
      if (sqlState(e) === "23505" && (e as { constraint_name?: string }).constraint_name === "jobs_ukey") {
        const detail = (e as { detail?: string }).detail ?? "";
        return fail("refused", `a put-unique key is in both ${dir} and schema ${schema}: ${detail || errorText(e)}`);
      }
      if (sqlState(e) === "23505") {
        const detail = (e as { detail?: string }).detail ?? "";
        return fail("refused", `a job id is in both ${dir} and schema ${schema}: ${detail || errorText(e)}`);
      }
      return dbFailure(env, e, true);
    }
    if (refused) return fail("refused", refused);
    return {
      kind: "done",
      lines: [
        ...read.lines,
        `migrated ${counts(jobs)} from ${dir} into schema ${schema} at ${env.target}; ` +
        `new ids go above ${read.maxId}; start tubeway with --pg`,
      ],
    };
  } finally {
    lock.release();
  }
}

/**
 * The log's retry policies (set-dlq, set-backoff) into the policies table; with
 * --merge, the directory's policy of a tube replaces the schema's.
 */
async function insertPolicies(tx: Sql, schema: string, policies: ReadonlyMap<string, RetryPolicy>): Promise<void> {
  if (policies.size === 0) return;
  const ps = [...policies];
  await tx.query(
    `insert into ${schema}.policies as x (tube, max_attempts, dead_tube, backoff_base, backoff_cap)
      select * from unnest($1::text[], $2::int8[], $3::text[], $4::int8[], $5::int8[])
    on conflict (tube) do update set max_attempts = excluded.max_attempts, dead_tube = excluded.dead_tube,
      backoff_base = excluded.backoff_base, backoff_cap = excluded.backoff_cap`,
    [
      ps.map(([t]) => t),
      ps.map(([, p]) => p.maxAttempts),
      ps.map(([, p]) => p.deadTube),
      ps.map(([, p]) => p.backoffBaseSec),
      ps.map(([, p]) => p.backoffCapSec),
    ],
  );
}

/** Insert `jobs` (ids ascending, buried last in bury order) with their tubes' count rows. */
async function insertJobs(tx: Sql, schema: string, jobs: readonly JobRecord[], now: number): Promise<void> {
  if (jobs.length === 0) return;
  // a node life of its own, ended already, owns the migrated jobs' count rows
  const [node] = await tx.query(
    `insert into ${schema}.nodes (lease_until) values (now() - interval '1 second') returning id::float8 as id`,
  );
  const nodeId = Number(node!.id);
  const buried = jobs.filter((j) => j.state === "buried").length;
  const seqs = buried === 0 ? [] : (await tx.query(
    `select nextval('${schema}.bury_seq')::float8 as v from generate_series(1, $1::int4)`,
    [buried],
  )).map((r) => Number(r.v));
  // tubes in the order first seen (as a restarted single node lists them), with their job counts
  const perTube = new Map<string, number>();
  for (const j of jobs) perTube.set(j.tube, (perTube.get(j.tube) ?? 0) + 1);
  // pipelined, in this order (their seq: list order)
  await Promise.all(
    [...perTube].map(([tube, n]) =>
      tx.query(`insert into ${schema}.tube_counts (tube, node, slot, jobs) values ($1, $2, 0, $3)`, [tube, nodeId, n])
    ),
  );
  let b = 0;
  for (let start = 0; start < jobs.length;) {
    let end = start;
    let bytes = 0;
    while (end < jobs.length && end - start < BATCH_JOBS && (end === start || bytes < BATCH_BYTES)) {
      bytes += jobs[end]!.body!.length;
      end++;
    }
    const batch = jobs.slice(start, end);
    const bodies = new Uint8Array(bytes);
    const offsets: number[] = [];
    let at = 0;
    for (const j of batch) {
      bodies.set(j.body!, at);
      offsets.push(at + 1); // substring() counts from 1
      at += j.body!.length;
    }
    const col = <T>(f: (j: JobRecord) => T) => batch.map(f);
    await tx.query(
      `insert into ${schema}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, buried_seq,
          reserves, timeouts, releases, buries, kicks, body, ukey, dlq_from)
        select id, tube, state, pri, d, ttr, now() - age * interval '1 millisecond',
          now() + lft * interval '1 millisecond', bseq, r, t, rl, bu, k, substring($15::bytea from o for l), uk, df
        from unnest($1::int8[], $2::text[], $3::int2[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::int8[],
          $9::int8[], $10::int4[], $11::int4[], $12::int4[], $13::int4[], $14::int4[], $16::int4[], $17::int4[],
          $18::text[], $19::text[])
          as u(id, tube, state, pri, d, ttr, age, lft, bseq, r, t, rl, bu, k, o, l, uk, df)`,
      [
        col((j) => j.id),
        col((j) => j.tube),
        col((j) => j.state === "buried" ? BURIED : j.state === "delayed" ? DELAYED : READY),
        col((j) => j.pri),
        col((j) => j.delayMs),
        col((j) => j.ttrMs),
        col((j) => Math.max(0, Math.round(now - j.createdAtMs))),
        col((j) => j.state === "delayed" ? Math.max(0, Math.round(j.deadlineAtMs - now)) : 0),
        col((j) => j.state === "buried" ? seqs[b++]! : null),
        col((j) => j.reserves),
        col((j) => j.timeouts),
        col((j) => j.releases),
        col((j) => j.buries),
        col((j) => j.kicks),
        bodies,
        offsets,
        col((j) => j.body!.length),
        col((j) => j.key ?? null),
        col((j) => j.from ?? null),
      ],
    );
    start = end;
  }
}

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
  const jobs = snap.rows.map((r): JobRecord => {
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
  });
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
