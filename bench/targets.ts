// The servers a bench run measures: beanstalkd, tubeway on Deno and on Bun, the
// fixed-answer "ceiling" server of each runtime, and any of them in a log mode.
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { ROOT, type Tools } from "./host.ts";
import { DENO_V8_FLAGS } from "../adapters/deno_flags.ts";
import { PG_URL_ENV } from "./psql.ts";

/**
 * Log modes: `NAME+b` runs with `-b <fresh dir>`, `NAME+bf0` adds `-f 0` (fsync before
 * every ack); `NAME+pg` keeps the jobs in PostgreSQL (BENCH_PG_URL, a fresh schema per
 * server; tubeway only).
 */
const VARIANT_FLAGS: Record<string, string[]> = {
  b: ["-b", "{dir}"],
  bf0: ["-b", "{dir}", "-f", "0"],
  pg: ["--pg", "{pg}", "--pg-schema", "{schema}"],
  pg3: ["--pg", "{pg}", "--pg-schema", "{schema}"],
};

/** Nodes a log mode starts (on one schema; the load spread over them, bench/rows.ts nodePorts). */
const VARIANT_NODES: Record<string, number> = { pg3: 3 };

/** The rows each log mode runs: the workloads of issue 12 (the rest would only repeat the plain rows). */
const VARIANT_ROWS: Record<string, string[]> = {
  b: ["put-50", "put-50x16"],
  bf0: ["put-1", "put-50", "put-50x16", "e2e-50"],
  pg: ["put-1", "put-50", "put-50x16", "e2e-50", "wake-1"],
  pg3: ["put-50", "e2e-50", "wake-1", "put-50-sustained", "e2e-50-sustained"],
};

export { PG_URL_ENV };

/** What a fixed-answer server can answer: puts (and use/watch/ignore for setup). */
export const CEILING_ROWS = ["put-1", "put-50", "put-50x16", "put-50x16-16k"];

export interface Target {
  name: string;
  /** Variant suffix: "" (no log), "b" or "bf0". */
  variant: string;
  argv?: string[] | undefined;
  flags: string[];
  /** Baseline this target is compared with (beanstalkd in the same mode); undefined for baselines. */
  baseline?: string | undefined;
  /** The fixed-answer server of the same runtime (for tubeway targets without a log). */
  ceiling?: string | undefined;
  /** The same runtime without the log (for log-mode tubeway targets). */
  noLog?: string | undefined;
  /** A fixed-answer server: a reference point, judged by no rule. */
  isCeiling: boolean;
  /** Runtime of a tubeway or ceiling target ("" for beanstalkd and commands). */
  runtime: "deno" | "bun" | "";
  /** pgbench with the engine's statements (bench/pgbench.ts), not a server. */
  pgbench?: { clients: number; batch: number } | undefined;
  /** Servers (nodes) it starts: NAME+pg3 starts 3 on one schema. */
  nodes?: number | undefined;
  /** Rows this target runs; undefined = all. */
  rows?: string[] | undefined;
  /** A server that is already running (NAME@PORT/PID): measured as it is, never started or stopped. */
  attach?: { port: number; pid: number } | undefined;
  missing?: string | undefined;
}

function runtimeArgv(t: Tools, rt: "deno" | "bun", script: string): string[] | undefined {
  if (rt === "bun") return t.bun ? [t.bun, "run", script] : undefined;
  return t.deno ? [t.deno, "run", `--v8-flags=${DENO_V8_FLAGS}`, "-A", script] : undefined;
}

export function makeTarget(spec: string, t: Tools, serverFlags: Map<string, string[]>): Target | string {
  const at = /^([\w-]+)@(\d+)\/(\d+)$/.exec(spec);
  if (at) {
    // for checking figures against another load generator on the very same server
    const [, name = "", port, pid] = at;
    return {
      name,
      variant: "",
      flags: [],
      isCeiling: false,
      runtime: "",
      attach: { port: Number(port), pid: Number(pid) },
    };
  }
  if (spec.includes("=")) {
    const name = spec.slice(0, spec.indexOf("="));
    return {
      name,
      variant: "",
      argv: spec.slice(spec.indexOf("=") + 1).split(/\s+/).filter(Boolean),
      flags: [],
      baseline: "beanstalkd",
      isCeiling: false,
      runtime: "",
    };
  }
  const [base = "", variant = ""] = spec.split("+");
  if (variant && !VARIANT_FLAGS[variant]) return `unknown mode +${variant} in ${spec} (+b, +bf0, +pg, +pg3)`;
  const pg = variant === "pg" || variant === "pg3";
  if (pg && base !== "deno" && base !== "bun") return `+${variant} is tubeway's (deno+pg, bun+pg3, ...), not ${base}'s`;
  const flags = [...(VARIANT_FLAGS[variant] ?? []), ...(serverFlags.get(spec) ?? [])];
  const rows = variant ? VARIANT_ROWS[variant] : undefined;
  // +pg acknowledges after COMMIT: beanstalkd's durable mode (-b -f 0) is its peer.
  const baseline = pg ? "beanstalkd+bf0" : variant ? `beanstalkd+${variant}` : "beanstalkd";
  const serverTs = join(ROOT, "server.ts");
  switch (base) {
    case "beanstalkd":
      return {
        name: spec,
        variant,
        argv: t.beanstalkd ? [t.beanstalkd] : undefined,
        flags,
        isCeiling: false,
        runtime: "",
        rows,
        missing: t.beanstalkd ? undefined : "beanstalkd is not installed",
      };
    case "deno":
    case "bun": {
      const argv = runtimeArgv(t, base, serverTs);
      return {
        name: spec,
        variant,
        baseline,
        ceiling: variant ? undefined : `fixed-${base}`,
        noLog: variant ? base : undefined,
        argv,
        flags,
        isCeiling: false,
        runtime: base,
        rows,
        nodes: VARIANT_NODES[variant],
        missing: !argv
          ? `${base} not found`
          : !existsSync(serverTs)
          ? "server.ts does not exist"
          : pg && !process.env[PG_URL_ENV]
          ? `${PG_URL_ENV} is not set (a PostgreSQL database for +pg)`
          : undefined,
      };
    }
    case "fixed":
    case "fixed-bun":
    case "fixed-deno": {
      if (variant) return `${base} has no log mode`;
      const rt = base === "fixed-deno" ? "deno" : "bun";
      const argv = runtimeArgv(t, rt, join(ROOT, "bench/fixed_server.ts"));
      return {
        name: spec,
        variant,
        argv,
        flags,
        baseline: "beanstalkd",
        isCeiling: true,
        runtime: rt,
        rows: CEILING_ROWS,
        missing: argv ? undefined : `${rt} not found`,
      };
    }
    default:
      return `unknown target ${spec} (beanstalkd, deno, bun, fixed-deno, fixed-bun, NAME+b, NAME+bf0, NAME+pg, NAME=CMD, NAME@PORT/PID)`;
  }
}
