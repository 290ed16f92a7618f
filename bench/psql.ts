// The database of the +pg targets through psql (Debian's postgresql-client): the
// sustained rows' table figures, pgbench's schema, dropping a run's schemas.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { proc } from "./host.ts";

/** The database of the +pg targets (docs/pg.md): acknowledged means committed, as with -f 0. */
export const PG_URL_ENV = "BENCH_PG_URL";

/** Run `sqlText` through psql; the first row's |-separated fields, or undefined when it failed. */
export function psql(sqlText: string): string[] | undefined {
  const url = proc.env[PG_URL_ENV];
  if (!url) return undefined;
  const r = spawnSync("psql", [url, "-XAtqc", sqlText], { encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) return undefined;
  return r.stdout.trim().split("\n")[0]!.split("|");
}

const memo: { url?: string | undefined; pid?: number | undefined } = {};

/**
 * The PID of the database server's postmaster when it runs on this machine (the first
 * line of postmaster.pid in its data directory; needs a superuser), else undefined.
 */
export function postmasterPid(): number | undefined {
  if (memo.url === proc.env[PG_URL_ENV]) return memo.pid;
  memo.url = proc.env[PG_URL_ENV];
  memo.pid = undefined;
  const dir = psql("show data_directory")?.[0];
  if (!dir) return undefined;
  try {
    const pid = Number(readFileSync(`${dir}/postmaster.pid`, "latin1").split("\n")[0]);
    if (pid > 0) memo.pid = pid;
  } catch {
    // not on this machine, or not ours to read
  }
  return memo.pid;
}
