// The load rows: closed loops of puts, reserve+delete, producers to blocking
// consumers, and a worker-like mix; each returns one row for the target.
import { prefill, runLoad } from "./gen.ts";
import type { RunSpec } from "./loadgen_run.ts";
import { baseRow, type Ctx, fromLoad, loadSpec, type Workload } from "./rows.ts";

/** reserve/delete rows warm up briefly: the prefill's puts already warmed the server. */
export const rdWarmup = (ctx: Ctx) => Math.min(ctx.cfg.warmup, 0.5);

/** Jobs to pre-fill for a reserve/delete run: 150k per second of run; a faster server drains it early (a shorter window). */
export function rdPrefill(ctx: Ctx): number {
  return ctx.cfg.quick ? 4000 : Math.min(2_000_000, Math.ceil((rdWarmup(ctx) + ctx.cfg.duration) * 150_000));
}

/** One closed-loop run, one row. */
function closedLoop(
  row: string,
  title: string,
  s: Omit<RunSpec, "host" | "port" | "sync" | "budget" | "duration" | "tube">,
  unit: string,
  count: "jobs" | "ops" = "jobs",
): Workload {
  const w: Workload = {
    row,
    title,
    group: "load",
    run: async (ctx) => [
      fromLoad(
        ctx,
        baseRow(ctx, w),
        await runLoad(ctx.pool, ctx.server, loadSpec(ctx, { ...s, tube: row })),
        unit,
        count,
      ),
    ],
  };
  return w;
}

/** A put workload: `clients` connections with `depth` puts in flight each. */
const putWorkload = (row: string, title: string, clients: number, depth: number, body: number) =>
  closedLoop(row, title, { kind: "put", clients, depth, body }, "puts/s");

const rd: Workload = {
  row: "rd-50x16",
  title: "reserve+delete, pre-filled tube, 50 clients × 16 in flight",
  group: "load",
  run: async (ctx) => {
    const n = rdPrefill(ctx);
    await prefill(ctx.pool, ctx.server.port, "rd", n, 100);
    const r = await runLoad(
      ctx.pool,
      ctx.server,
      loadSpec(ctx, { kind: "rd", clients: 50, depth: 16, body: 100, tube: "rd", budget: n, warmup: rdWarmup(ctx) }),
    );
    const row = fromLoad(ctx, baseRow(ctx, rd), r, "jobs/s");
    if (r.jobs >= n) row.notes.push(`all ${n} pre-filled jobs drained in ${(r.elapsedMs / 1000).toFixed(2)} s`);
    return [row];
  },
};

export const LOAD_WORKLOADS: Workload[] = [
  putWorkload("put-1", "put, 1 client, no pipelining, 100 B", 1, 1, 100),
  putWorkload("put-50", "put, 50 clients, 1 in flight each, 100 B", 50, 1, 100),
  putWorkload("put-50x16", "put, 50 clients × 16 in flight, 100 B", 50, 16, 100),
  putWorkload("put-50x16-16k", "put, 50 clients × 16 in flight, 16 KiB", 50, 16, 16384),
  rd,
  closedLoop(
    "e2e-50",
    "25 producers (≤4 undelivered jobs each) → 25 blocking-reserve consumers, put→delivery latency",
    { kind: "e2e", clients: 50, producers: 25, window: 4, depth: 1, body: 100 },
    "jobs/s",
  ),
  closedLoop(
    "mix-50",
    "mix, 50 clients: put + peek-ready + reserve-with-timeout 0 in one write, then delete + stats-tube",
    { kind: "mix", clients: 50, depth: 1, body: 100 },
    "ops/s",
    "ops",
  ),
];
