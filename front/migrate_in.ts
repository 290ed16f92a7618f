// `tubeway migrate -b DIR`: the jobs of a stopped node's log directory into PostgreSQL
// (front/migrate.ts says how).
import { errorText } from "../core/files.ts";
import type { JobRecord } from "../core/memory/wal.ts";
import { insertFlow } from "./migrate_flow.ts";
import type { Sql } from "../core/pg/sql.ts";
import { sqlState } from "../core/pg/sql.ts";
import { BURIED, DELAYED, migrate, READY } from "../core/pg/schema.ts";
import { type DirJobs, jobsOfDir } from "../core/memory/beanstalkd_log/export.ts";
import type { RetryPolicy } from "../core/engine.ts";
import {
  BATCH_BYTES,
  BATCH_JOBS,
  counts,
  dbFailure,
  fail,
  liveNodes,
  type MigrateEnv,
  type MigrateOutcome,
} from "./migrate.ts";

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
      refused = await env.sql.transaction((tx) => copyIn(env, tx, schema, merge, read, jobs, now));
    } catch (e) {
      return clash(e, dir, schema) ?? dbFailure(env, e, true);
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
 * In the transaction: the jobs, the policies and the id sequence, unless nodes serve the
 * schema or (without --merge) it holds jobs already; then why not, and nothing is written.
 */
async function copyIn(
  env: MigrateEnv,
  tx: Sql,
  schema: string,
  merge: boolean,
  read: DirJobs,
  jobs: readonly JobRecord[],
  now: number,
): Promise<string | undefined> {
  // puts and deletes of any node wait until this commits; readers go on
  await tx.query(`lock table ${schema}.jobs in exclusive mode`);
  const live = await liveNodes(tx, schema);
  if (live > 0) {
    return `${live} tubeway node(s) are serving schema ${schema} at ${env.target}: stop them first ` +
      `(they hold id blocks the migrated ids could collide with)`;
  }
  const [had] = await tx.query(`select count(*)::float8 as n from ${schema}.jobs`);
  if (Number(had?.n ?? 0) > 0 && !merge) {
    return `schema ${schema} at ${env.target} already holds ${had!.n} jobs: give an empty schema ` +
      `(--pg-schema), or --merge to add these`;
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
  return undefined;
}

/** A job id or a put-unique key in both the directory and the schema (a unique violation): refused. */
function clash(e: unknown, dir: string, schema: string): MigrateOutcome | undefined {
  if (sqlState(e) !== "23505") return undefined;
  const detail = (e as { detail?: string }).detail || errorText(e);
  const what = (e as { constraint_name?: string }).constraint_name === "jobs_ukey" ? "a put-unique key" : "a job id";
  return fail("refused", `${what} is in both ${dir} and schema ${schema}: ${detail}`);
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
