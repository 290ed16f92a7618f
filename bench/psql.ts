// The database of the +pg targets through psql (Debian's postgresql-client): the
// sustained rows' table figures, pgbench's schema, dropping a run's schemas.
import { spawnSync } from "node:child_process";
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
