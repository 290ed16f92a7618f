// The agreement check: does `deno task bench` measure the server, not its generator?
// It runs our generator (bench/main.ts on an attached server) and an independent
// one (a beanstalkd load generator written in C, given by path; never part of this
// project) against the same server program, back to back, alternating which goes
// first, each run on a fresh server pinned to CPU 0, and prints each one's median
// with its spread and the median of the same-moment ratios ours/C. On a shared machine single runs move by 15% or more: read the
// spread before the ratio.
//
//   bun run bench/agree.ts --cbench PATH [--servers beanstalkd,bun] [--rows put-1,put-50,rd-50x16]
//                          [--rounds 4] [--seconds 3] [--warmup 1] [--ours native] [--procs 1] [--nice N]
//
// --ours takes a list of our generators (main.ts --client: native, bun, deno) and
// --procs a list of process counts (e.g. 2,1): each pair is one more generator of
// ours (named e.g. native×1). The C generator is pinned to CPU 1, the server to CPU 0.
// --nice N runs the server and both generators at nice N (as root, -10 makes the
// other work of a shared machine disturb the comparison less).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { findTools, proc, ROOT, sleep, type Tools } from "./host.ts";
import { Server } from "./server.ts";
import { makeTarget } from "./targets.ts";

interface Sample {
  value: number;
  p99: number;
  genCpu: number;
  /** CPU per command (µs) of the server and of the generator: they hold under a busy machine better than rates. */
  srvUs: number;
  genUs: number;
}

/** The C generator's command line for one of our rows, and which of its figures is our `value`. */
function cArgs(row: string, seconds: number, warmup: number): { args: string[]; key: string } | undefined {
  const common = ["--size", "100", "--seconds", String(seconds + warmup), "--warmup", String(warmup)];
  switch (row) {
    case "put-1":
      return { args: ["--workload", "put", "--conns", "1", "--depth", "1", ...common], key: "ops_per_s" };
    case "put-50":
      return { args: ["--workload", "put", "--conns", "50", "--depth", "1", ...common], key: "ops_per_s" };
    case "put-50x16":
      return { args: ["--workload", "put", "--conns", "50", "--depth", "16", ...common], key: "ops_per_s" };
    case "rd-50x16": {
      // the same pre-fill as ours (150k jobs per second of run); reserve+delete = 1 job
      const n = Math.ceil((Math.min(warmup, 0.5) + seconds) * 150_000);
      const args = ["--workload", "reserve", "--conns", "50", "--depth", "16", "--prefill", String(n)];
      return {
        args: [...args, "--size", "100", "--seconds", String(seconds + Math.min(warmup, 0.5)), "--warmup", "0.5"],
        key: "jobs_per_s",
      };
    }
    case "e2e-50":
      // ours: 25 producers with at most 4 undelivered jobs each
      return {
        args: ["--workload", "pubsub", "--conns", "50", "--depth", "1", "--backlog", "100", ...common],
        key: "ops_per_s",
      };
  }
  return undefined;
}

function runC(t: Tools, cbench: string, row: string, port: number, pid: number, o: Opts): Sample | string {
  const c = cArgs(row, o.seconds, o.warmup)!;
  const argv = [cbench, "--port", String(port), "--server-pid", String(pid), ...c.args];
  const niced = t.nice ? ["nice", "-n", String(t.nice), ...argv] : argv;
  const full = t.pin ? [t.taskset!, "-c", "1", ...niced] : niced;
  const r = spawnSync(full[0]!, full.slice(1), { encoding: "utf8", timeout: 300_000 });
  const line = (r.stdout ?? "").split("\n").find((l) => l.startsWith("workload="));
  if (!line) return `C generator: ${(r.stderr ?? "").trim().slice(-300) || `exit ${r.status}`}`;
  const kv = new Map(line.split(" ").map((f) => f.split("=") as [string, string]));
  if (kv.get("errors") !== "0") return `C generator reported errors: ${line}`;
  const ops = Number(kv.get("ops_per_s"));
  const cpu = (key: string) => (1e6 * Number(kv.get(key))) / ops;
  return {
    value: Number(kv.get(c.key)),
    p99: Number(kv.get("p99_us")),
    genCpu: Number(kv.get("cli_cpu")),
    srvUs: cpu("srv_cpu"),
    genUs: cpu("cli_cpu"),
  };
}

function runOurs(t: Tools, row: string, port: number, pid: number, gen: string, o: Opts): Sample | string {
  const [client, procs] = gen.split("×");
  const dir = mkdtempSync(join(tmpdir(), "tubeway-agree-"));
  try {
    const json = join(dir, "out.json");
    const args = ["run", join(ROOT, "bench/main.ts"), "--targets", `srv@${port}/${pid}`, "--only", row];
    args.push("--duration", String(o.seconds), "--warmup", String(o.warmup), "--client", client!, "--procs", procs!);
    if (t.nice) args.push("--nice", String(t.nice));
    const r = spawnSync(t.bun!, [...args, "--json", json], { encoding: "utf8", timeout: 300_000 });
    if (r.status !== 0) return `our generator: ${(r.stdout + r.stderr).trim().slice(-400)}`;
    const got = JSON.parse(readFileSync(json, "utf8")).rows[0];
    return { value: got.value, p99: got.p99, genCpu: got.genCpuPct / 100, srvUs: got.usPerOp, genUs: got.genUsPerOp };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
/** (max - min) / median, as a percentage: how far apart the runs of one generator were. */
const spread = (xs: number[]) => (100 * (Math.max(...xs) - Math.min(...xs))) / median(xs);
const k = (v: number) => (v >= 1e4 ? `${(v / 1e3).toFixed(1)}k` : v.toFixed(0));

interface Opts {
  cbench: string;
  servers: string[];
  rows: string[];
  rounds: number;
  seconds: number;
  warmup: number;
  procs: number[];
  ours: string[];
}

async function main() {
  const { values } = parseArgs({
    args: proc.argv.slice(2),
    options: {
      cbench: { type: "string" },
      servers: { type: "string", default: "beanstalkd,bun" },
      rows: { type: "string", default: "put-1,put-50,rd-50x16" },
      rounds: { type: "string", default: "4" },
      seconds: { type: "string", default: "3" },
      warmup: { type: "string", default: "1" },
      procs: { type: "string", default: "1" },
      ours: { type: "string", default: "native" },
      nice: { type: "string", default: "0" },
    },
  });
  const cbench = values.cbench;
  if (!cbench) {
    console.error("agree: --cbench PATH (the C load generator's binary) is required; see bench/README.md");
    return proc.exit(2);
  }
  const o: Opts = {
    cbench,
    servers: values.servers.split(","),
    rows: values.rows.split(","),
    rounds: Number(values.rounds),
    seconds: Number(values.seconds),
    warmup: Number(values.warmup),
    procs: values.procs.split(",").map(Number),
    ours: values.ours.split(","),
  };
  for (const row of o.rows) if (!cArgs(row, 1, 1)) throw new Error(`no C workload for row ${row}`);
  const t = findTools(true, Number(values.nice));
  const gens = ["C", ...o.ours.flatMap((c) => o.procs.map((p) => `${c}×${p}`))];
  console.log(
    `agreement check: ${o.rounds} rounds of ${o.seconds} s (+${o.warmup} s warm-up), generators ${gens}` +
      (t.nice ? `, nice ${t.nice}` : ""),
  );
  for (const name of o.servers) {
    const target = makeTarget(name, t, new Map());
    if (typeof target === "string" || target.missing) throw new Error(`cannot run ${name}`);
    for (const row of o.rows) {
      const got = new Map<string, (Sample | undefined)[]>(gens.map((g) => [g, []]));
      for (let round = 0; round < o.rounds; round++) {
        // alternate who goes first: a drift in the machine's load then hits both alike
        const order = round % 2 ? [...gens].reverse() : gens;
        for (const g of order) {
          // a fresh server of the same program for every run: our generator leaves its jobs
          // behind (the C one drains its tube), and a server holding a million jobs is slower
          const server = new Server(target, t);
          await server.start();
          try {
            const s = g === "C"
              ? runC(t, o.cbench, row, server.port, server.pid, o)
              : runOurs(t, row, server.port, server.pid, g, o);
            if (typeof s === "string") console.log(`  ${name} ${row} ${g}: ${s}`);
            got.get(g)![round] = typeof s === "string" ? undefined : s;
          } finally {
            await server.stop();
          }
          await sleep(200);
        }
      }
      report(name, row, gens, got);
    }
  }
}

function report(server: string, row: string, gens: string[], got: Map<string, (Sample | undefined)[]>) {
  const c = got.get("C")!;
  for (const g of gens) {
    const s = got.get(g)!.filter((x): x is Sample => !!x);
    if (!s.length) continue;
    const v = s.map((x) => x.value);
    let line = `${server.padEnd(11)} ${row.padEnd(10)} ${g.padEnd(9)} median ${k(median(v)).padStart(7)}/s` +
      ` spread ${spread(v).toFixed(0).padStart(3)}%  runs ${v.map(k).join(" ")}` +
      `  p99 ${median(s.map((x) => x.p99)).toFixed(0)} µs  gen CPU ${median(s.map((x) => x.genCpu)).toFixed(2)}` +
      `  µs/cmd srv ${median(s.map((x) => x.srvUs)).toFixed(2)} gen ${median(s.map((x) => x.genUs)).toFixed(2)}`;
    if (g !== "C") {
      // ratio of runs made back to back in the same round
      const ratios = got.get(g)!.flatMap((x, i) => (x && c[i] ? [x.value / c[i]!.value] : []));
      if (ratios.length) {
        line += `  ours/C same-round: median ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${
          Math.max(...ratios).toFixed(2)
        })`;
      }
    }
    console.log(line);
  }
}

await main();
