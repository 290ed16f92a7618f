// What PostgreSQL itself allows for the rows of the +pg targets: pgbench (Debian's
// postgresql package) running the engine's batched statements on a schema a tubeway
// node made (the same table, indexes and autovacuum settings), with no node in between.
// Target `pgbench[:CLIENTS[:BATCH]]` (default 6 clients, the slots of three nodes, and
// 25 jobs per statement): put-50 is one transaction of a put statement and its counts;
// e2e-50 is the engine's best case of the cycle, two transactions per BATCH jobs: puts
// and a claim (FOR UPDATE SKIP LOCKED) in one, the delete of the claimed jobs in the
// next, as a turn with puts and claims and a later turn with deletes would do.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresCpuMs, proc } from "./host.ts";
import type { Row, RunCfg, Workload } from "./rows.ts";
import { Server } from "./server.ts";
import { makeTarget, type Target } from "./targets.ts";
import { PG_URL_ENV, postmasterPid, psql } from "./psql.ts";

export const PGBENCH_ROWS = ["put-50", "e2e-50"];

/** pgbench[:CLIENTS[:BATCH]] */
export function pgbenchTarget(spec: string): Target | undefined {
  const m = /^pgbench(?::(\d+))?(?::(\d+))?$/.exec(spec);
  if (!m) return undefined;
  const have = spawnSync("pgbench", ["--version"], { encoding: "utf8" }).status === 0;
  return {
    name: spec,
    variant: "pgbench",
    flags: [],
    isCeiling: true, // a reference point, judged by no rule
    runtime: "",
    rows: PGBENCH_ROWS,
    pgbench: { clients: Number(m[1] ?? 6), batch: Number(m[2] ?? 25) },
    missing: !have
      ? "pgbench is not installed (apt-get install -y postgresql)"
      : !proc.env[PG_URL_ENV]
      ? `${PG_URL_ENV} is not set`
      : undefined,
  };
}

function scripts(S: string, batch: number): { put: string; cycle: string } {
  const counts = (n: string) =>
    `insert into ${S}.tube_counts as x (tube, node, slot, jobs, total_jobs) values ('pgbench', -:client_id - 1, 0, ${n}, ${n})
  on conflict (tube, node, slot) do update set jobs = x.jobs + excluded.jobs, total_jobs = x.total_jobs + excluded.total_jobs;`;
  const put = `insert into ${S}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, body)
  select nextval('${S}.pgbench_ids'), 'pgbench', 0, 0, 0, 60000, now(), now(), '\\x${"61".repeat(100)}'::bytea
  from generate_series(1, ${batch});`;
  const claim = `with h as (select id from ${S}.jobs where state = 0 and tube = 'pgbench' order by pri, id
    limit ${batch} for update skip locked)
  update ${S}.jobs j set state = 1, node = -:client_id - 1, conn = 1, deadline = now() + j.ttr_ms * interval '1 millisecond',
    reserves = j.reserves + 1 from h where j.id = h.id;`;
  const del = `with d as (delete from ${S}.jobs where state = 1 and node = -:client_id - 1 and conn = 1 returning tube)
  insert into ${S}.tube_counts as x (tube, node, slot, jobs, cmd_delete) select tube, -:client_id - 1, 0, -count(*), count(*)
    from d group by tube
  on conflict (tube, node, slot) do update set jobs = x.jobs + excluded.jobs, cmd_delete = x.cmd_delete + excluded.cmd_delete;`;
  return {
    put: `begin;\n${counts(String(batch))}\n${put}\ncommit;\n`,
    cycle: `begin;\n${counts(String(batch))}\n${put}\n${claim}\ncommit;\nbegin;\n${del}\ncommit;\n`,
  };
}

/** One pgbench run of `seconds`; its transactions (scripts) per second and mean latency. */
function pgbench(
  file: string,
  clients: number,
  seconds: number,
): { tps: number; latMs: number; scripts: number; pgCpuMs: number; out: string } {
  const pid = postmasterPid();
  const pgCpu = () => pid === undefined ? NaN : postgresCpuMs(pid);
  const pg0 = pgCpu();
  const r = spawnSync(
    "pgbench",
    [
      "-n",
      "-c",
      String(clients),
      "-j",
      String(Math.min(clients, 2)),
      "-T",
      String(Math.max(1, Math.round(seconds))),
      "-f",
      file,
      proc.env[PG_URL_ENV]!,
    ],
    { encoding: "utf8", timeout: (seconds + 60) * 1000 },
  );
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN);
  const latMs = Number(/latency average = ([\d.]+) ms/.exec(out)?.[1] ?? NaN);
  const scripts = Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? NaN);
  // the backends' connects and exits are counted too: a few ms in a run of seconds
  return { tps, latMs, scripts, pgCpuMs: pgCpu() - pg0, out };
}

/** The row `w` of a pgbench target: a schema made by a tubeway node, then pgbench on it. */
export async function pgbenchRows(cfg: RunCfg, target: Target, w: Workload): Promise<Row[]> {
  const { clients, batch } = target.pgbench!;
  const node = makeTarget("deno+pg", cfg.tools, new Map());
  if (typeof node === "string") throw new Error(node);
  const server = new Server(node, cfg.tools);
  server.kept = true;
  await server.start(); // makes the schema
  await server.stop();
  const S = server.schema!;
  psql(`create sequence ${S}.pgbench_ids`);
  const dir = mkdtempSync(join(tmpdir(), "tubeway-pgbench-"));
  try {
    const sc = scripts(S, batch);
    const isPut = w.row.startsWith("put");
    const file = join(dir, "script.sql");
    writeFileSync(file, isPut ? sc.put : sc.cycle);
    const rows: Row[] = [];
    {
      const r = pgbench(file, clients, cfg.quick ? 1 : cfg.duration);
      const row: Row = {
        row: w.row,
        title: w.title,
        target: target.name,
        status: Number.isFinite(r.tps) ? "ok" : "FAILED",
        value: r.tps * batch,
        unit: "jobs/s",
        better: "higher",
        notes: [
          `pgbench -c ${clients}, ${batch} jobs per statement, ${
            isPut ? "one transaction" : "two transactions"
          } per ${batch} jobs` +
          (Number.isFinite(r.latMs) ? `, ${r.latMs.toFixed(2)} ms per script` : ""),
        ],
      };
      if (row.status !== "ok") row.notes.push(r.out.trim().slice(-400));
      else if (r.scripts > 0 && Number.isFinite(r.pgCpuMs)) {
        row.pgUsPerJob = (r.pgCpuMs * 1000) / (r.scripts * batch);
        row.notes.push(`PostgreSQL ${(r.pgCpuMs / 1000).toFixed(2)}s CPU: ${row.pgUsPerJob.toFixed(1)} µs per job`);
      }
      const f = psql(
        `select n_dead_tup, autovacuum_count from pg_stat_user_tables where schemaname = '${S}' and relname = 'jobs'`,
      );
      if (f) row.notes.push(`jobs table: dead ${f[0]}, autovacuums ${f[1]}`);
      rows.push(row);
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    psql(`drop schema ${S} cascade`);
  }
}
