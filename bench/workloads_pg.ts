// The rows of the PostgreSQL engine (docs/pg.md#measured): the wake-up latency across
// nodes, and the sustained rows: put-50 and e2e-50 for --seconds on one server (one
// schema), reported per window with the jobs table's dead tuples, so that the rate over
// minutes and vacuum's effect on it show.
import { spawnSync } from "node:child_process";
import { runLoad } from "./gen.ts";
import { proc } from "./host.ts";
import { baseRow, type Ctx, fromLoad, loadSpec, type Row, type Workload } from "./rows.ts";
import { psql } from "./psql.ts";

/** put on the first node, one worker blocked in reserve on the second: put → RESERVED, one job at a time. */
export const wake: Workload = {
  row: "wake-1",
  title: "wake-up: 1 producer (node A) → 1 worker blocked in reserve (node B), one job at a time, put→RESERVED",
  group: "pg",
  run: async (ctx) => [
    fromLoad(
      ctx,
      baseRow(ctx, wake),
      await runLoad(
        ctx.pool,
        ctx.server,
        loadSpec(ctx, { kind: "e2e", clients: 2, producers: 1, window: 1, depth: 1, body: 100, tube: "wake" }),
      ),
      "jobs/s",
    ),
  ],
};

/** The jobs table's live and dead tuples and its vacuums so far (pg_stat_user_tables), as a note. */
function tableNote(schema: string | undefined): string {
  if (!schema) return "";
  const f = psql(
    `select n_live_tup, n_dead_tup, autovacuum_count + vacuum_count, pg_total_relation_size(relid)
     from pg_stat_user_tables where schemaname = '${schema}' and relname = 'jobs'`,
  );
  if (!f || f.length < 4) return "jobs table: (psql could not tell)";
  const mib = (Number(f[3]) / 1048576).toFixed(0);
  return `jobs table: live ${f[0]}, dead ${f[1]}, vacuums ${f[2]}, ${mib} MiB with indexes`;
}

/** Seconds of load and of each window of the sustained rows (--seconds, --window). */
export interface Sustain {
  seconds: number;
  window: number;
}

/** A closed loop for `sustain.seconds` on one server, one row per window. */
function sustained(
  row: string,
  title: string,
  s: { kind: "put" | "e2e"; clients: number; producers?: number; window?: number },
  sustain: Sustain,
): Workload {
  const w: Workload = {
    row,
    title,
    group: "pg",
    run: async (ctx: Ctx) => {
      const rows: Row[] = [];
      const windows = Math.max(1, Math.round(sustain.seconds / sustain.window));
      for (let i = 0; i < windows; i++) {
        const spec = loadSpec(ctx, { ...s, depth: 1, body: 100, tube: row, duration: sustain.window });
        if (i > 0) spec.warmup = 0; // the same server: warm after the first window
        const r = fromLoad(ctx, baseRow(ctx, w), await runLoad(ctx.pool, ctx.server, spec), "jobs/s");
        const from = i * sustain.window;
        r.row = `${row} ${from}-${from + sustain.window}s`;
        r.notes.push(tableNote(ctx.server.schema), `load average ${loadavg()}`);
        rows.push(r);
        proc.stderr.write(`    ${r.row}: ${r.value?.toFixed(0)} ${r.unit}; ${r.notes.filter(Boolean).join("; ")}\n`);
        if (r.status !== "ok") break;
      }
      return rows;
    },
  };
  return w;
}

function loadavg(): string {
  const r = spawnSync("cat", ["/proc/loadavg"], { encoding: "utf8" });
  return (r.stdout ?? "").split(" ").slice(0, 3).join(" ");
}

export function pgWorkloads(sustain: Sustain | undefined): Workload[] {
  const out = [wake];
  if (!sustain) return out;
  out.push(
    sustained(
      "put-50-sustained",
      "put, 50 clients, 1 in flight each, sustained",
      { kind: "put", clients: 50 },
      sustain,
    ),
    sustained(
      "e2e-50-sustained",
      "25 producers → 25 blocking-reserve consumers (≤4 undelivered jobs each), sustained",
      { kind: "e2e", clients: 50, producers: 25, window: 4 },
      sustain,
    ),
  );
  return out;
}
