// A row of the report: what one workload measured on one target, and the targets of
// issues 9 and 12 that judge it (against beanstalkd in the same mode, the same
// runtime's fixed-answer ceiling, or the same runtime without the log).
import type { LoadResult, Pool } from "./gen.ts";
import { HOST, type Tools } from "./host.ts";
import type { RunSpec } from "./loadgen_run.ts";
import type { Server } from "./server.ts";
import type { Target } from "./targets.ts";

export interface Row {
  row: string;
  title: string;
  target: string;
  status: "ok" | "FAILED" | "skipped";
  /** Headline figure and its unit. */
  value?: number;
  unit?: string;
  /** "higher" when a larger value is better (rates), "lower" for costs (B/job). */
  better?: "higher" | "lower";
  p50?: number;
  p99?: number;
  srvCpuMs?: number;
  srvCpuPct?: number;
  usPerOp?: number;
  /** A +pg row: the database's CPU per command and per job (pgbench rows: per job). */
  pgUsPerOp?: number;
  pgUsPerJob?: number;
  /** Generator CPU per command, µs (all generator processes). */
  genUsPerOp?: number;
  rssMiB?: number;
  /** Peak RSS of the server process so far (VmHWM). */
  rssPeakMiB?: number;
  /** CPU of all generator processes together, % of one core. */
  genCpuPct?: number;
  /** Busy % of the server's CPU (0) and of the generator's CPU(s), softirq included. */
  srvCoreBusyPct?: number;
  genCoreBusyPct?: number;
  saturated?: boolean;
  /** CPU that processes other than the server and the generator used in the window (% of a core). */
  otherPct?: number;
  /** Ratios to beanstalkd (same mode), to the same runtime's ceiling, to the same runtime without the log. */
  ratio?: number;
  p99ratio?: number;
  ceilRatio?: number;
  noLogRatio?: number;
  checks?: string;
  notes: string[];
}

export interface Rule {
  row: string;
  variant: string;
  /** Only for this runtime (both when absent). */
  runtime?: "deno" | "bun";
  text: string;
  minRatio?: number;
  maxRatio?: number;
  maxP99Ratio?: number;
  /** Against the fixed-answer server of the same runtime. */
  minCeil?: number;
  /** Against the same runtime without the log. */
  minNoLog?: number;
}

/** The targets of issue 9 (no log) and issue 12 (log modes); a row passes only if every bound on it holds. */
export const RULES: Rule[] = [
  { row: "put-1", variant: "", text: "≥0.95× ceiling", minCeil: 0.95 },
  { row: "put-50", variant: "", runtime: "deno", text: "≥0.9× ceiling, p99 ≤1.0×", minCeil: 0.9, maxP99Ratio: 1 },
  {
    row: "put-50",
    variant: "",
    runtime: "bun",
    text: "≥0.9× ceiling, ≥1.2× thr, p99 ≤1.0×",
    minCeil: 0.9,
    minRatio: 1.2,
    maxP99Ratio: 1,
  },
  { row: "e2e-50", variant: "", runtime: "deno", text: "≥0.9× jobs/s, p99 ≤1.0×", minRatio: 0.9, maxP99Ratio: 1 },
  { row: "e2e-50", variant: "", runtime: "bun", text: "≥1.2× jobs/s, p99 ≤1.0×", minRatio: 1.2, maxP99Ratio: 1 },
  { row: "put-50x16", variant: "", text: "≥5× thr, p99 ≤0.5×", minRatio: 5, maxP99Ratio: 0.5 },
  { row: "rd-50x16", variant: "", text: "≥5× thr, p99 ≤0.5×", minRatio: 5, maxP99Ratio: 0.5 },
  { row: "put-50x16-16k", variant: "", text: "≥2× thr", minRatio: 2 },
  { row: "mem-1m", variant: "", text: "≤1.0× B/job (issue 21)", maxRatio: 1 },
  {
    row: "put-50",
    variant: "b",
    text: "≥1.0× thr, p99 ≤1.0×, ≥0.8× no-log",
    minRatio: 1,
    maxP99Ratio: 1,
    minNoLog: 0.8,
  },
  { row: "put-50", variant: "bf0", text: "≥5× thr", minRatio: 5 },
  { row: "put-1", variant: "bf0", text: "≥1.0× thr", minRatio: 1 },
  { row: "put-50x16", variant: "b", text: "≥1.5× thr", minRatio: 1.5 },
  { row: "put-50x16", variant: "bf0", text: "≥5× thr", minRatio: 5 },
];

/** Other processes using more than this share of a core make a row's figures suspect. */
export const NOISY = 0.15;

/** What every workload gets: the run's settings, the generators, the target and its fresh server. */
export interface Ctx {
  cfg: RunCfg;
  pool: Pool;
  target: Target;
  server: Server;
}

export interface RunCfg {
  quick: boolean;
  /** The sustained rows (--seconds, --window); undefined: not run. */
  sustain?: { seconds: number; window: number } | undefined;
  duration: number;
  warmup: number;
  tools: Tools;
}

export interface Workload {
  row: string;
  title: string;
  group: "load" | "scale" | "pg";
  run(ctx: Ctx): Promise<Row[]>;
}

export function baseRow(ctx: Ctx, w: { row: string; title: string }): Row {
  return { row: w.row, title: w.title, target: ctx.target.name, status: "ok", notes: [] };
}

/** Generator CPUs: every CPU but the server's when pinned, else all of them. */
function genCores(t: Tools): number {
  return t.pin ? t.ncpu - 1 : t.ncpu;
}

export function fromLoad(ctx: Ctx, row: Row, r: LoadResult, unit: string, count: "jobs" | "ops" = "jobs"): Row {
  const { quick, tools } = ctx.cfg;
  const n = count === "jobs" ? r.jobs : r.ops;
  row.value = n / (r.elapsedMs / 1000);
  row.unit = unit;
  row.better = "higher";
  row.p50 = r.hist.quantile(0.5);
  row.p99 = r.hist.quantile(0.99);
  row.srvCpuMs = r.srvCpuMs;
  row.srvCpuPct = (100 * r.srvCpuMs) / r.wallMs;
  row.usPerOp = (r.srvCpuMs * 1000) / Math.max(1, r.ops);
  row.genUsPerOp = (r.genCpu * r.wallMs * 1000) / Math.max(1, r.ops);
  row.rssMiB = r.rss / 1048576;
  row.rssPeakMiB = r.hwm / 1048576;
  row.genCpuPct = 100 * r.genCpu;
  if (tools.pin && r.busy.length >= 2) {
    row.srvCoreBusyPct = 100 * r.busy[0]!;
    row.genCoreBusyPct = 100 * Math.max(...r.busy.slice(1));
  }
  row.saturated = r.genCpu >= 0.9 * genCores(tools) || (row.genCoreBusyPct ?? 0) >= 95;
  row.notes.push(...r.notes);
  // tick sampling makes this approximate: only a clear excess is reported
  // over PostgreSQL the database is half of the server: its CPU is the row's, not "other"
  const overPg = ctx.target.variant.startsWith("pg") && Number.isFinite(r.pgCpuMs);
  const other = overPg ? r.other - r.pgCpuMs / r.wallMs : r.other;
  if (overPg) {
    row.pgUsPerOp = (r.pgCpuMs * 1000) / Math.max(1, r.ops);
    row.pgUsPerJob = (r.pgCpuMs * 1000) / Math.max(1, r.jobs);
    row.notes.push(
      `PostgreSQL ${(r.pgCpuMs / 1000).toFixed(2)}s CPU: ${row.pgUsPerOp.toFixed(1)} µs per command, ${
        row.pgUsPerJob.toFixed(1)
      } per job`,
    );
  }
  if (!quick) row.otherPct = 100 * other; // --quick windows are shorter than a few clock ticks
  if (!quick && other > NOISY) {
    row.notes.push(`other processes took ~${(100 * other).toFixed(0)}% of a core meanwhile`);
  }
  if (r.errors) {
    row.status = "FAILED";
    row.notes.push(`${r.errors} error(s): ${r.errorSamples.slice(0, 3).join(" | ")}`);
  }
  if (n === 0 && row.status === "ok") {
    row.status = "FAILED";
    row.notes.push("no work completed");
  }
  return row;
}

/** A closed-loop spec with the run's duration and warm-up unless `s` says otherwise. */
export function loadSpec(
  ctx: Ctx,
  s: Omit<RunSpec, "host" | "port" | "sync" | "budget" | "duration"> & Partial<RunSpec>,
): RunSpec {
  return {
    host: HOST,
    port: ctx.server.port,
    ports: nodePorts(ctx.server.ports, s.kind, s.clients, s.producers),
    duration: ctx.cfg.duration,
    warmup: s.duration === 0 ? 0 : ctx.cfg.warmup,
    budget: -1,
    sync: true,
    ...s,
  };
}

/**
 * Several nodes (`NAME+pg3`): which node each connection goes to. e2e: the producers on
 * the first node, the consumers on the others in turn; otherwise every node in turn.
 * One node: undefined (all on `port`).
 */
export function nodePorts(ports: number[], kind: string, clients: number, producers?: number): string | undefined {
  if (ports.length < 2) return undefined;
  if (kind !== "e2e") return ports.join(",");
  const p = producers ?? Math.floor(clients / 2);
  const rest = ports.slice(1);
  return Array.from({ length: clients }, (_, i) => (i < p ? ports[0]! : rest[(i - p) % rest.length]!)).join(",");
}
