// `tubeway migrate`: moving the jobs of a stopped single node into PostgreSQL
// (migrate_in.ts), and back (migrate_out.ts); its flags are migrate_args.ts's. Into: the
// jobs tubeway would serve if started on the log directory now (its own log, or
// beanstalkd 1.12's files not imported yet: export.ts's jobsOfDir) go into the schema in
// one transaction, with their ids, tubes, fields, counters, bodies, put-unique keys and
// dead letters' origins, the tubes' retry policies and limits, and the schedules
// (migrate_flow.ts); the id sequence moves past the highest id. Back: every job of the schema, read in one snapshot, is written by the
// binlog writer (core/memory/binlog/) into a new log directory that `tubeway -b DIR`
// serves. Times cross over as durations (a job's age, a delay's time left) measured
// against each side's own clock, never as absolute times, so a database whose clock
// differs from this machine's keeps them. Runtime-neutral: SqlClient and Files come from
// front/migrate_cli.ts. This file: what both directions share.
import type { Files } from "../core/files.ts";
import type { JobRecord } from "../core/memory/wal.ts";
import type { Sql, SqlClient } from "../core/pg/sql.ts";
import { counted } from "../core/memory/beanstalkd_log/read.ts";

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
export const BATCH_JOBS = 1000;
export const BATCH_BYTES = 4 << 20;

export const fail = (why: "locked" | "database" | "refused" | "failed", message: string): MigrateOutcome => ({
  kind: "failed",
  why,
  message,
});

/** A statement failed: the database could not be used at all (connection, login) or the work failed. */
export function dbFailure(env: MigrateEnv, e: unknown, connected: boolean): MigrateOutcome {
  const text = e instanceof Error ? e.message : String(e);
  return connected
    ? fail("failed", `migrate failed at ${env.target}: ${text}`)
    : fail("database", `cannot use PostgreSQL at ${env.target}: ${text}`);
}

/** Live nodes on the schema: their id blocks and reservations would clash with the migrated jobs. */
export async function liveNodes(tx: Sql, schema: string): Promise<number> {
  const [row] = await tx.query(`select count(*)::float8 as n from ${schema}.nodes where lease_until > now()`);
  return Number(row?.n ?? 0);
}

/** "N jobs (r ready, d delayed, b buried)", for the closing lines. */
export function counts(jobs: readonly JobRecord[]): string {
  const n = { ready: 0, delayed: 0, buried: 0 };
  for (const j of jobs) if (j.state === "ready" || j.state === "delayed" || j.state === "buried") n[j.state]++;
  return `${counted(jobs.length, "job")} (${n.ready} ready, ${n.delayed} delayed, ${n.buried} buried)`;
}
