// Turning rows into the report: ratios to beanstalkd in the same mode, to the same
// runtime's fixed-answer ceiling and to the same runtime without the log; the
// verdict of each rule; the table, its legend and the notes.
import { NOISY, type Row, type Rule, RULES } from "./rows.ts";
import type { Target } from "./targets.ts";

/** Fill ratio, p99ratio, ceilRatio, noLogRatio and checks of every row from the same run. */
export function judge(rows: Row[], targets: Target[]): void {
  const byKey = new Map(rows.map((r) => [`${r.target}|${r.row}`, r]));
  const tmap = new Map(targets.map((t) => [t.name, t]));
  const okRow = (target: string | undefined, row: string) => {
    const b = target ? byKey.get(`${target}|${row}`) : undefined;
    return b && b.status === "ok" ? b : undefined;
  };
  for (const r of rows) {
    const t = tmap.get(r.target)!;
    if (r.status !== "ok" || r.value === undefined) continue;
    const b = okRow(t.baseline, r.row);
    if (b?.value) r.ratio = r.value / b.value;
    if (b?.p99 && r.p99 !== undefined) r.p99ratio = r.p99 / b.p99;
    const c = okRow(t.ceiling, r.row);
    if (c?.value) r.ceilRatio = r.value / c.value;
    const n = okRow(t.noLog, r.row);
    if (n?.value) r.noLogRatio = r.value / n.value;
    if (t.noLog && r.noLogRatio !== undefined) {
      r.notes.unshift(`${r.noLogRatio.toFixed(2)}× ${t.noLog} without the log`);
    }
    const rule = ruleFor(r, t);
    if (rule) r.checks = `${rule.text}: ${verdict(r, rule, b, c)}`;
  }
  for (const r of rows) {
    const t = tmap.get(r.target)!;
    const rule = ruleFor(r, t);
    if (rule && !r.checks) r.checks = `${rule.text}: ${r.status !== "ok" ? "MISS (failed)" : "n/a (no reference row)"}`;
  }
}

function ruleFor(r: Row, t: Target): Rule | undefined {
  if (t.isCeiling || !t.baseline || !t.runtime) return undefined;
  return RULES.find((x) => x.row === r.row && x.variant === t.variant && (!x.runtime || x.runtime === t.runtime));
}

function verdict(r: Row, rule: Rule, b: Row | undefined, c: Row | undefined): string {
  const needBase = rule.minRatio !== undefined || rule.maxRatio !== undefined || rule.maxP99Ratio !== undefined;
  if ((needBase && !b) || (rule.minCeil !== undefined && !c) || (rule.minNoLog !== undefined && !r.noLogRatio)) {
    return "n/a (no reference row)";
  }
  const ok = (rule.minRatio === undefined || (r.ratio ?? 0) >= rule.minRatio) &&
    (rule.maxRatio === undefined || (r.ratio ?? Infinity) <= rule.maxRatio) &&
    (rule.maxP99Ratio === undefined || (r.p99ratio ?? Infinity) <= rule.maxP99Ratio) &&
    (rule.minCeil === undefined || (r.ceilRatio ?? 0) >= rule.minCeil) &&
    (rule.minNoLog === undefined || (r.noLogRatio ?? 0) >= rule.minNoLog);
  const refs = [b, c].filter((x): x is Row => !!x);
  // a client-bound figure is a floor: a MISS by a saturated row, or a pass
  // against a saturated reference, may be the generator's doing
  if ([r, ...refs].some((x) => (x.otherPct ?? 0) > 100 * NOISY)) {
    return `${ok ? "pass" : "MISS"}? (other load on the machine: inconclusive)`;
  }
  if (ok) return refs.some((x) => x.saturated) ? "pass? (reference client-bound: inconclusive)" : "pass";
  return r.saturated ? "MISS? (generator saturated: inconclusive)" : "MISS";
}

// ------------------------------------------------------------------ formatting

export function si(v: number | undefined, digits = 3): string {
  if (v === undefined || !Number.isFinite(v)) return "-";
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toPrecision(digits) + "M";
  if (a >= 1e4) return (v / 1e3).toPrecision(digits) + "k";
  if (a >= 100) return v.toFixed(0);
  return v.toPrecision(digits);
}

function us(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return "-";
  if (v >= 1e6) return (v / 1e6).toFixed(2) + "s";
  if (v >= 1e3) return (v / 1e3).toPrecision(3) + "ms";
  return v.toPrecision(3) + "µs";
}

const times = (v: number | undefined) => (v === undefined ? "-" : `${v.toFixed(2)}×`);

function table(rows: string[][]): string {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i < 2 || i === r.length - 1 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join("  ").trimEnd();
  const sep = w.map((n) => "-".repeat(n)).join("  ");
  return [line(rows[0]!), sep, ...rows.slice(1).map(line)].join("\n");
}

const HEADER = [
  "row",
  "target",
  "result",
  "p50",
  "p99",
  "srv CPU",
  "µs/op",
  "RSS",
  "×bstalkd",
  "p99×",
  "×ceil",
  "gen CPU",
  "core0/1",
  "target / notes",
];

function cells(r: Row): string[] {
  return [
    r.row,
    r.target,
    r.status === "ok"
      ? `${r.saturated && r.better === "higher" ? "≥" : ""}${si(r.value)} ${r.unit ?? ""}`.trim()
      : r.status,
    us(r.p50),
    us(r.p99),
    r.srvCpuMs === undefined
      ? "-"
      : `${(r.srvCpuMs / 1000).toFixed(2)}s` + (r.srvCpuPct !== undefined ? ` ${r.srvCpuPct.toFixed(0)}%` : ""),
    r.usPerOp === undefined ? "-" : r.usPerOp.toFixed(2),
    r.rssMiB === undefined || !Number.isFinite(r.rssMiB) ? "-" : `${r.rssMiB.toFixed(r.rssMiB < 100 ? 1 : 0)}M`,
    times(r.ratio),
    times(r.p99ratio),
    times(r.ceilRatio),
    r.genCpuPct === undefined ? "-" : `${r.genCpuPct.toFixed(0)}%${r.saturated ? " SAT" : ""}`,
    r.srvCoreBusyPct === undefined || !Number.isFinite(r.srvCoreBusyPct + r.genCoreBusyPct!)
      ? "-"
      : `${r.srvCoreBusyPct.toFixed(0)}/${r.genCoreBusyPct!.toFixed(0)}%`,
    [r.checks, ...r.notes].filter(Boolean).join("; "),
  ];
}

const LEGEND = "result: throughput over the measured window (jobs/s; ops/s for mix), or bytes per job/connection " +
  "for the scale rows. p50/p99: per-command latency (e2e: put → delivery). srv CPU: server user+sys seconds in " +
  "the window and % of one core; µs/op: server CPU per command. RSS: server VmRSS at the end. ×bstalkd / p99×: " +
  "ratio to beanstalkd in the same mode (+b: -b, +bf0: -b -f 0) in this run. ×ceil: ratio to the fixed-answer " +
  "server of the same runtime (fixed-deno, fixed-bun: no queue, every put answered INSERTED 1) in this run. " +
  "gen CPU: all load generator processes together, % of one core. core0/1: how busy the server's core and the " +
  "generator's core were, loopback softirq included (the kernel's TCP work is charged to no process). SAT (and ≥ " +
  "before the figure): the generators used ≥90% of their core(s) or their core was ≥95% busy: the figure is then " +
  "client-bound, a floor for the server.";

/** The report as text: table, legend, notes. */
export function render(rows: Row[], notes: string[]): string {
  const out = ["", table([HEADER, ...rows.map(cells)]), "", LEGEND];
  const all = [...notes];
  const sat = rows.filter((r) => r.saturated);
  if (sat.length) {
    all.push(
      `load generator (or its core) saturated on: ${sat.map((r) => `${r.target}/${r.row}`).join(", ")}` +
        " — those figures are lower bounds for the server",
    );
  }
  const noisy = rows.filter((r) => (r.otherPct ?? 0) > 100 * NOISY);
  if (noisy.length) {
    all.push(
      `${noisy.length} of ${rows.length} rows ran while other processes used the CPUs; ` +
        "their figures and verdicts are suspect: rerun on an idle machine",
    );
  }
  for (const r of rows.filter((r) => r.status === "FAILED")) {
    all.push(`FAILED ${r.target}/${r.row}: ${r.notes.join("; ")}`);
  }
  for (const n of all) out.push(`note: ${n}`);
  return out.join("\n");
}
