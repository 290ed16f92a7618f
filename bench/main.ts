// tubeway benchmark: the same workloads against beanstalkd 1.12 and tubeway on Deno
// and on Bun, on loopback, printed as one table with ratios to beanstalkd.
//
//   deno run -A bench/main.ts [options]        (deno task bench)
//   bun run bench/main.ts [options]
//
// Options:
//   --quick                smoke run with tiny counts, a few seconds in all (also
//                          BENCH_QUICK=1); one server per target. Its figures mean
//                          nothing; it only proves the bench still runs.
//   --only NAME[,NAME]     run only these rows: put-1, put-50, put-50x16,
//                          put-50x16-16k, rd-50x16, e2e-50, mix-50, mem-1m,
//                          conns-10k, tubes-10k; "load" = the first 7, "scale" =
//                          the last 3; "put*" = every name starting with "put"
//   --targets A,B,...      beanstalkd, deno, bun (default: all three), plus
//                            NAME+b       the same with `-b <fresh dir>` (the log on;
//                                         compared with beanstalkd+b)
//                            fixed        a fixed-answer put server: measures the
//                                         load generator's own ceiling
//                            NAME=CMD...  any server command; -l/-p are appended
//   --server-flags T=FLAGS extra flags for target T (repeatable), e.g.
//                          --server-flags 'deno=-z 65536'
//   --duration SECONDS     seconds of load per workload (default 4)
//   --warmup SECONDS       unrecorded load before each timed window (default 1, at
//                          most 0.5 for reserve/delete; lets the Deno/Bun JIT settle)
//   --json FILE            also write the results as JSON
//   --client bun|deno      runtime of the load generator (default: bun if present)
//   --procs N              load generator processes, one per CPU from CPU 1 on
//                          (default: CPUs - 1, at most 4; so 1 on a 2-core machine)
//   --no-pin               do not pin with taskset
//   --nice N               run servers and generators at nice N (e.g. -10 as root,
//                          so other work on the machine disturbs less; default 0)
// Environment: BENCH_QUICK=1 (= --quick), BENCH_BEANSTALKD=PATH (another binary;
// empty = run as if not installed), BENCH_TRANSPORT=node (generator on node:net
// instead of Bun's native sockets).
//
// How it measures: each target is started on 127.0.0.1 (pinned to CPU 0 with
// taskset when present, fd limit raised to 65536); every row gets a fresh server
// (except --quick). The load generator (bench/loadgen.ts, pinned to CPU 1) runs
// closed loops and checks every reply; an error, lost connection, stall or timeout
// marks the row FAILED and it gets no ratio. Server CPU time and RSS come from
// /proc/PID/stat and /proc/PID/status over the measured window; core0/1 is how busy
// each core was (from /proc/stat: loopback TCP work is charged to no process).
// The generator's own CPU is printed; when it used ≥90% of a core, or its core was
// ≥95% busy, the row says SAT and its figure gets a "≥": it is then client-bound.
// On a 2-core machine one generator core tops out around 100-150k non-pipelined
// round trips/s and ~2M pipelined puts/s (measure with --targets fixed).
//
// Workload details: e2e producers keep at most 4 undelivered jobs each (latency =
// put written → RESERVED read, stamped in the body; no backlog can build up); mix
// pipelines the commands that do not depend on a reply; rd drains a tube pre-filled
// with 150k jobs per second of run (a faster server just empties it sooner);
// tubes-10k compares reserve/delete with 10,000 other tubes each watched by an idle
// connection blocked in reserve against a fresh server with no other tube.
//
// Exit status: 0 when every row that ran succeeded, 1 when any FAILED, 2 on bad usage.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect, createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Hist } from "./hist.ts";
import type { RunResult, RunSpec } from "./loadgen.ts";

// deno-lint-ignore no-explicit-any
const proc: any = (globalThis as any).process;
const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const HOST = "127.0.0.1";

// ------------------------------------------------------------------ options

function usage(msg: string): never {
  console.error(`bench: ${msg}\nsee the comment at the top of bench/main.ts for usage`);
  proc.exit(2);
  throw new Error(msg);
}

interface Opts {
  quick: boolean;
  only: string[];
  targets: string[];
  serverFlags: Map<string, string[]>;
  duration: number;
  warmup: number;
  json?: string;
  client?: string;
  procs: number;
  pin: boolean;
  nice: number;
}

function parseArgs(argv: string[]): Opts {
  const o: Opts = {
    quick: proc.env.BENCH_QUICK === "1",
    only: [],
    targets: ["beanstalkd", "deno", "bun"],
    serverFlags: new Map(),
    duration: 4,
    warmup: 1,
    // one generator process per spare core (a 2-core machine: 1, on CPU 1)
    procs: Math.max(1, Math.min((cpus().length || 1) - 1, 4)),
    pin: true,
    nice: 0,
  };
  let durationSet = false;
  let warmupSet = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = () => {
      const v = a.includes("=") && a.startsWith("--") && !a.startsWith("--server-flags=")
        ? a.slice(a.indexOf("=") + 1)
        : argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    const name = a.startsWith("--") && a.includes("=") ? a.slice(0, a.indexOf("=")) : a;
    switch (name) {
      case "--quick":
        o.quick = true;
        break;
      case "--only":
        o.only.push(...val().split(",").filter(Boolean));
        break;
      case "--targets":
        o.targets = val().split(",").filter(Boolean);
        break;
      case "--server-flags": {
        const v = a.startsWith("--server-flags=") ? a.slice("--server-flags=".length) : argv[++i];
        if (!v || !v.includes("=")) usage("--server-flags wants TARGET=FLAGS");
        const t = v.slice(0, v.indexOf("="));
        o.serverFlags.set(t, [
          ...(o.serverFlags.get(t) ?? []),
          ...v.slice(v.indexOf("=") + 1).split(/\s+/).filter(Boolean),
        ]);
        break;
      }
      case "--duration":
        o.duration = Number(val());
        durationSet = true;
        if (!(o.duration > 0)) usage("--duration wants a positive number of seconds");
        break;
      case "--warmup":
        o.warmup = Number(val());
        warmupSet = true;
        if (!(o.warmup >= 0)) usage("--warmup wants a number of seconds");
        break;
      case "--json":
        o.json = val();
        break;
      case "--client":
        o.client = val();
        break;
      case "--procs":
        o.procs = Math.max(1, Math.floor(Number(val())) || 1);
        break;
      case "--nice":
        o.nice = Math.trunc(Number(val()));
        if (!Number.isFinite(o.nice)) usage("--nice wants an integer");
        break;
      case "--no-pin":
        o.pin = false;
        break;
      case "-h":
      case "--help":
        console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\nimport ")[0]);
        proc.exit(0);
        break;
      default:
        usage(`unknown option ${a}`);
    }
  }
  if (o.quick && !durationSet) o.duration = 0.05;
  if (o.quick && !warmupSet) o.warmup = 0;
  return o;
}

const opts = parseArgs(proc.argv.slice(2));
const Q = opts.quick;

// ------------------------------------------------------------------ environment

function which(name: string): string | undefined {
  if (name.includes("/")) return existsSync(name) ? name : undefined;
  for (const dir of (proc.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}
function localBin(name: string): string | undefined {
  const p = join(ROOT, "node_modules", ".bin", name);
  return existsSync(p) ? p : which(name);
}

const DENO = localBin("deno");
const BUN = localBin("bun");
// BENCH_BEANSTALKD=PATH picks another binary ("" or a missing path: run as if not installed)
const BEANSTALKD = proc.env.BENCH_BEANSTALKD !== undefined
  ? (proc.env.BENCH_BEANSTALKD ? which(proc.env.BENCH_BEANSTALKD) : undefined)
  : which("/usr/bin/beanstalkd") ?? which("beanstalkd");
const TASKSET = opts.pin ? which("taskset") : undefined;
const NCPU = cpus().length || 1;
const PIN = TASKSET && NCPU >= 2;
const SERVER_TS = join(ROOT, "server.ts");
const RUNTIME = "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node";
const FD_LIMIT = 65536;

function version(cmd: string | undefined, args: string[]): string {
  if (!cmd) return "absent";
  try {
    const r = spawnSync(cmd, args, { encoding: "utf8" });
    return ((r.stdout || r.stderr || "") as string).split("\n")[0]!.trim();
  } catch {
    return "?";
  }
}

/** argv that runs cmd pinned to `cpu` with a raised fd limit. */
function wrap(argv: string[], cpu: string | null): string[] {
  const sh = [
    "sh",
    "-c",
    `ulimit -n ${FD_LIMIT} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"`,
    "sh",
    ...argv,
  ];
  const niced = opts.nice ? ["nice", "-n", String(opts.nice), ...sh] : sh;
  return PIN && cpu !== null ? [TASKSET!, "-c", cpu, ...niced] : niced;
}

// pin this process (the coordinator, idle during measurements) next to the generator
if (PIN) spawnSync(TASKSET!, ["-a", "-p", "-c", "1", String(proc.pid)], { stdio: "ignore" });

// ------------------------------------------------------------------ /proc

function procCpuMs(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

function procMem(pid: number): { rss: number; hwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "latin1");
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(s)?.[1] ?? NaN) * 1024;
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** Per-CPU jiffies: [busy, total] for each CPU, from /proc/stat. */
function cpuTimes(): [number, number][] {
  try {
    return readFileSync("/proc/stat", "latin1").split("\n").filter((l) => /^cpu\d/.test(l)).map((l) => {
      const f = l.trim().split(/\s+/).slice(1).map(Number);
      // user nice system idle iowait irq softirq steal; steal = time the VM did not run
      const total = f.slice(0, 7).reduce((a, b) => a + b, 0);
      const idle = f[3]! + f[4]!;
      return [total - idle, total];
    });
  } catch {
    return [];
  }
}

/** Milliseconds of process time (user+nice+system, all CPUs) the kernel has counted. */
function allProcessMs(): number {
  try {
    const f = readFileSync("/proc/stat", "latin1").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    return ((f[0]! + f[1]! + f[2]!) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/** Busy fraction of each CPU between two cpuTimes() readings. */
function cpuBusy(a: [number, number][], b: [number, number][]): number[] {
  return b.map(([busy, total], i) => (total - a[i]![1] > 0 ? (busy - a[i]![0]) / (total - a[i]![1]) : NaN));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ targets and servers

interface Target {
  name: string;
  /** Baseline this target is compared with (undefined for baselines). */
  baseline?: string | undefined;
  variant: string;
  argv?: string[] | undefined;
  flags: string[];
  /** Only the put workloads (the fixed-answer server). */
  putsOnly?: boolean;
  missing?: string | undefined;
}

function makeTarget(spec: string): Target {
  if (spec.includes("=")) {
    const name = spec.slice(0, spec.indexOf("="));
    return {
      name,
      variant: "",
      argv: spec.slice(spec.indexOf("=") + 1).split(/\s+/).filter(Boolean),
      flags: [],
      baseline: "beanstalkd",
    };
  }
  const [base, variant = ""] = spec.split("+");
  const flags = [...(opts.serverFlags.get(spec) ?? [])];
  if (variant === "b") flags.push("-b", "{dir}");
  else if (variant) flags.push(...(opts.serverFlags.get(variant) ?? []));
  const baseName = variant ? `beanstalkd+${variant}` : "beanstalkd";
  switch (base) {
    case "beanstalkd":
      return {
        name: spec,
        variant,
        argv: BEANSTALKD ? [BEANSTALKD] : undefined,
        flags,
        missing: BEANSTALKD ? undefined : "beanstalkd is not installed",
      };
    case "deno":
      return {
        name: spec,
        variant,
        baseline: baseName,
        argv: DENO ? [DENO, "run", "-A", SERVER_TS] : undefined,
        flags,
        missing: !DENO ? "deno not found" : !existsSync(SERVER_TS) ? "server.ts does not exist yet" : undefined,
      };
    case "bun":
      return {
        name: spec,
        variant,
        baseline: baseName,
        argv: BUN ? [BUN, "run", SERVER_TS] : undefined,
        flags,
        missing: !BUN ? "bun not found" : !existsSync(SERVER_TS) ? "server.ts does not exist yet" : undefined,
      };
    case "fixed": {
      const rt = BUN ?? DENO;
      return {
        name: spec,
        variant,
        argv: rt
          ? (rt === BUN
            ? [BUN, "run", join(ROOT, "bench/fixed_server.ts")]
            : [rt, "run", "-A", join(ROOT, "bench/fixed_server.ts")])
          : undefined,
        flags,
        putsOnly: true,
        baseline: "beanstalkd",
        missing: rt ? undefined : "neither bun nor deno found",
      };
    }
    default:
      usage(`unknown target ${spec} (beanstalkd, deno, bun, NAME+b, fixed, NAME=CMD)`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, HOST, () => {
      const a = srv.address();
      const port = typeof a === "object" && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

class Server {
  child!: ChildProcess;
  port = 0;
  log = "";
  exited: string | null = null;
  dir?: string;
  constructor(public target: Target) {}

  get pid(): number {
    return this.child.pid!;
  }

  async start(): Promise<void> {
    this.port = await freePort();
    let flags = this.target.flags;
    if (flags.includes("{dir}")) {
      this.dir = mkdtempSync(join(tmpdir(), "tubeway-bench-"));
      flags = flags.map((f) => (f === "{dir}" ? this.dir! : f));
    }
    const argv = wrap([...this.target.argv!, "-l", HOST, "-p", String(this.port), ...flags], "0");
    this.child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (d: Uint8Array) => {
      if (this.log.length < 20000) this.log += new TextDecoder().decode(d);
    };
    this.child.stdout!.on("data", keep);
    this.child.stderr!.on("data", keep);
    this.child.once("exit", (code, sig) => (this.exited = sig ? `killed by ${sig}` : `exited with ${code}`));
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      if (this.exited) {
        throw new Error(`${this.target.name} ${this.exited} before listening: ${this.log.trim().slice(0, 500)}`);
      }
      if (await canConnect(this.port)) return;
      await sleep(20);
    }
    await this.stop();
    throw new Error(`${this.target.name} did not listen within 20 s`);
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => this.child.kill("SIGKILL"), 3000);
        this.child.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
        this.child.kill("SIGTERM");
      });
    }
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  cpuMs(): number {
    return procCpuMs(this.pid);
  }
  mem() {
    return procMem(this.pid);
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: HOST, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

// ------------------------------------------------------------------ load generator processes

// deno-lint-ignore no-explicit-any
type Ev = { id?: number; ev: string; [k: string]: any };

class Gen {
  child: ChildProcess;
  buf = "";
  waiters = new Map<string, (e: Ev) => void>();
  hello: Promise<Ev>;
  dead: string | null = null;
  errLog = "";
  constructor(public index: number, runtime: string) {
    const script = join(ROOT, "bench/loadgen.ts");
    const argv = runtime === "bun" ? [BUN!, "run", script] : [DENO!, "run", "-A", script];
    const cpu = String(1 + (index % Math.max(1, NCPU - 1)));
    const w = wrap(argv, cpu);
    this.child = spawn(w[0]!, w.slice(1), { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout!.on("data", (d: Uint8Array) => this.onData(new TextDecoder().decode(d)));
    this.child.stderr!.on("data", (d: Uint8Array) => {
      if (this.errLog.length < 10000) this.errLog += new TextDecoder().decode(d);
    });
    this.child.once("exit", (code) => {
      this.dead = `load generator exited with ${code}: ${this.errLog.trim().slice(0, 800)}`;
      for (const w of this.waiters.values()) w({ ev: "error", message: this.dead });
      this.waiters.clear();
    });
    this.hello = this.wait(0, "hello");
  }
  onData(s: string) {
    this.buf += s;
    let i;
    while ((i = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (!line.trim()) continue;
      let e: Ev;
      try {
        e = JSON.parse(line);
      } catch {
        continue;
      }
      const key = e.ev === "hello" ? "0:hello" : e.ev === "error" ? `${e.id}:*` : `${e.id}:${e.ev}`;
      const w = this.waiters.get(key) ?? (e.ev === "error" ? undefined : undefined);
      if (w) {
        this.waiters.delete(key);
        w(e);
      } else if (e.ev === "error") {
        // an error answers whatever this id was waiting for
        for (const [k, fn] of this.waiters) {
          if (k.startsWith(`${e.id}:`)) {
            this.waiters.delete(k);
            fn(e);
          }
        }
      }
    }
  }
  wait(id: number, ev: string): Promise<Ev> {
    if (this.dead) return Promise.resolve({ ev: "error", message: this.dead });
    return new Promise((res) => this.waiters.set(`${id}:${ev}`, res));
  }
  send(m: object) {
    this.child.stdin!.write(JSON.stringify(m) + "\n");
  }
  /** Send a request; resolve with the `ev` answer or an error event. */
  request(m: { op: string; id: number; [k: string]: unknown }, ev: string): Promise<Ev> {
    const p = this.wait(m.id, ev);
    this.send(m);
    return p;
  }
  close() {
    try {
      this.send({ op: "exit", id: 0 });
      this.child.stdin!.end();
    } catch { /* gone */ }
    setTimeout(() => this.child.kill("SIGKILL"), 2000).unref?.();
  }
}

let nextId = 1;

class GenError extends Error {}

function check(e: Ev): Ev {
  if (e.ev === "error") throw new GenError(e.message);
  return e;
}

/**
 * Run one workload split over every generator process at once; the server's CPU
 * time is read when the window opens (after warm-up) and after the last generator
 * finishes.
 */
async function runLoad(gens: Gen[], server: Server, spec: RunSpec) {
  const ids = gens.map(() => nextId++);
  const specs = gens.map((_, i) => ({ ...spec, ...splitClients(spec, i, gens.length), sync: true }));
  const done = gens.map((g, i) => g.wait(ids[i]!, "done"));
  const ready = gens.map((g, i) => g.request({ op: "run", id: ids[i]!, spec: specs[i] }, "ready"));
  // a failure before "ready" comes back as an error on the ready wait
  const readyEvs = await Promise.all(ready);
  for (const e of readyEvs) check(e);
  // the window opens at "go", or when the generators report the end of warm-up
  const measuring = spec.warmup ? gens.map((g, i) => g.wait(ids[i]!, "measuring")) : [];
  let cpu0 = server.cpuMs();
  let sys0 = cpuTimes();
  let all0 = allProcessMs();
  let self0 = procCpuMs(proc.pid);
  let t0 = performance.now();
  gens.forEach((g, i) => g.send({ op: "go", id: ids[i] }));
  if (measuring.length) {
    await Promise.race([Promise.all(measuring), Promise.all(done)]);
    cpu0 = server.cpuMs();
    sys0 = cpuTimes();
    all0 = allProcessMs();
    self0 = procCpuMs(proc.pid);
    t0 = performance.now();
  }
  const results = (await Promise.all(done)).map((e) => check(e).result as RunResult);
  const wallMs = performance.now() - t0;
  const srvCpuMs = server.cpuMs() - cpu0;
  const busy = cpuBusy(sys0, cpuTimes());
  const mem = server.mem();
  // process time on the machine that was neither the server, the generators nor us
  const otherMs = allProcessMs() - all0 - srvCpuMs - (procCpuMs(proc.pid) - self0) -
    results.reduce((a, r) => a + r.genCpuMs, 0);
  // merge
  const hist = new Hist();
  let ops = 0, jobs = 0, errors = 0, elapsedMs = 0, genCpuMax = 0;
  const errorSamples: string[] = [];
  const notes: string[] = [];
  results.forEach((r) => {
    hist.merge(Hist.fromJSON(r.hist));
    ops += r.ops;
    jobs += r.jobs;
    errors += r.errors;
    errorSamples.push(...r.errorSamples);
    notes.push(...r.notes);
    elapsedMs = Math.max(elapsedMs, r.elapsedMs);
    genCpuMax = Math.max(genCpuMax, r.genCpuMs / r.elapsedMs);
  });
  if (server.exited) {
    errors++;
    errorSamples.push(`server ${server.exited}: ${server.log.trim().slice(-300)}`);
  }
  return {
    hist,
    ops,
    jobs,
    errors,
    errorSamples,
    notes,
    elapsedMs,
    wallMs,
    srvCpuMs,
    rss: mem.rss,
    hwm: mem.hwm,
    genCpu: genCpuMax,
    busy,
    other: otherMs / wallMs,
  };
}

function splitClients(spec: RunSpec, i: number, n: number): Partial<RunSpec> {
  const share = (total: number) => Math.floor(total / n) + (i < total % n ? 1 : 0);
  const out: Partial<RunSpec> = { clients: share(spec.clients) };
  if (spec.budget >= 0) out.budget = share(spec.budget);
  if (spec.producers !== undefined) out.producers = share(spec.producers);
  if (spec.kind === "e2e" && n > 1) out.tube = `${spec.tube}-${i}`; // latency stamps are per process
  return out;
}

/** Put `count` jobs into `tube` from the first generator (not measured). */
async function prefill(gen: Gen, port: number, tube: string, count: number, body: number): Promise<void> {
  if (count <= 0) return;
  const id = nextId++;
  const spec: RunSpec = {
    kind: "put",
    host: HOST,
    port,
    clients: 16,
    depth: 32,
    body,
    tube,
    duration: 0,
    budget: count,
    sync: false,
  };
  const done = gen.wait(id, "done");
  check(await gen.request({ op: "run", id, spec }, "ready"));
  const r = check(await done).result as RunResult;
  if (r.errors || r.jobs !== count) {
    throw new GenError(`prefill failed: ${r.errorSamples.join("; ") || `${r.jobs}/${count} jobs`}`);
  }
}

async function query(gen: Gen, port: number, cmds: string[]): Promise<string[]> {
  const id = nextId++;
  return check(await gen.request({ op: "query", id, host: HOST, port, cmds }, "replies")).replies;
}

function yamlNum(text: string, key: string): number {
  return Number(new RegExp(`^${key}: (\\d+)`, "m").exec(text)?.[1] ?? NaN);
}

// ------------------------------------------------------------------ rows

interface Row {
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
  rssMiB?: number;
  /** Peak RSS of the server process so far (VmHWM). */
  rssPeakMiB?: number;
  genCpuPct?: number;
  /** Busy % of the server's CPU (0) and of the generator's CPU(s), softirq included. */
  srvCoreBusyPct?: number;
  genCoreBusyPct?: number;
  saturated?: boolean;
  /** CPU that processes other than the server and the generator used in the window (% of a core). */
  otherPct?: number;
  /** Rate the generator's core could sustain at the per-op cost it showed here. */
  genCeiling?: number;
  ratio?: number;
  p99ratio?: number;
  checks?: string;
  notes: string[];
}

interface Rule {
  row: string;
  variant: string;
  text: string;
  minRatio?: number;
  maxP99Ratio?: number;
  maxRatio?: number;
}

/** The targets from the issue; a row passes only if every bound on it holds. */
const RULES: Rule[] = [
  { row: "put-1", variant: "", text: "≥1.0× thr, p99 ≤1.1×", minRatio: 1.0, maxP99Ratio: 1.1 },
  { row: "put-50", variant: "", text: "≥1.2× thr", minRatio: 1.2 },
  { row: "put-50x16", variant: "", text: "≥5× thr, p99 ≤0.5×", minRatio: 5, maxP99Ratio: 0.5 },
  { row: "put-50x16-16k", variant: "", text: "≥5× thr", minRatio: 5 },
  { row: "rd-50x16", variant: "", text: "≥5× thr", minRatio: 5 },
  { row: "e2e-50", variant: "", text: "≥1.2× jobs/s, p99 ≤1.0×", minRatio: 1.2, maxP99Ratio: 1.0 },
  { row: "mem-1m", variant: "", text: "≤1.5× B/job", maxRatio: 1.5 },
  // the log on: tubeway -b vs beanstalkd -b (run with --targets beanstalkd+b,deno+b,bun+b)
  { row: "put-50x16", variant: "b", text: "log on: ≥1.5× beanstalkd -b", minRatio: 1.5 },
];

/** Other processes using more than this share of a core make a row's figures suspect. */
const NOISY = 0.15;

const SCALE = {
  jobs: Q ? 3000 : 1_000_000,
  conns: Q ? 200 : 10_000,
  tubes: Q ? 200 : 10_000,
};

interface Workload {
  row: string;
  title: string;
  group: "load" | "scale";
  putsOnly?: boolean;
  run(ctx: Ctx): Promise<Row[]>;
}

interface Ctx {
  target: Target;
  gens: Gen[];
  server: Server;
}

function base(ctx: Ctx, w: { row: string; title: string }): Row {
  return { row: w.row, title: w.title, target: ctx.target.name, status: "ok", notes: [] };
}

function fromLoad(row: Row, r: Awaited<ReturnType<typeof runLoad>>, unit: string, count: "jobs" | "ops" = "jobs"): Row {
  const n = count === "jobs" ? r.jobs : r.ops;
  row.value = n / (r.elapsedMs / 1000);
  row.unit = unit;
  row.better = "higher";
  row.p50 = r.hist.quantile(0.5);
  row.p99 = r.hist.quantile(0.99);
  row.srvCpuMs = r.srvCpuMs;
  row.srvCpuPct = (100 * r.srvCpuMs) / r.wallMs;
  row.usPerOp = (r.srvCpuMs * 1000) / Math.max(1, r.ops);
  row.rssMiB = r.rss / 1048576;
  row.rssPeakMiB = r.hwm / 1048576;
  row.genCpuPct = 100 * r.genCpu;
  if (PIN && r.busy.length >= 2) {
    const genCores = r.busy.slice(1, 1 + Math.min(opts.procs, NCPU - 1));
    row.srvCoreBusyPct = 100 * r.busy[0]!;
    row.genCoreBusyPct = 100 * Math.max(...genCores);
  }
  row.saturated = r.genCpu >= 0.9 || (row.genCoreBusyPct ?? 0) >= 95;
  // what one generator core could drive at this per-op cost (softirq included when pinned)
  const genShare = row.genCoreBusyPct !== undefined ? row.genCoreBusyPct / 100 : r.genCpu;
  if (genShare > 0 && opts.procs === 1) row.genCeiling = row.value / genShare;
  row.notes.push(...r.notes);
  // tick sampling makes this approximate: only a clear excess is reported
  if (!Q) row.otherPct = 100 * r.other; // --quick windows are shorter than a few clock ticks
  if (!Q && r.other > NOISY) row.notes.push(`other processes took ~${(100 * r.other).toFixed(0)}% of a core meanwhile`);
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

const dur = () => opts.duration;
const spec = (
  port: number,
  s: Omit<RunSpec, "host" | "port" | "sync" | "budget" | "duration"> & Partial<RunSpec>,
): RunSpec => ({
  host: HOST,
  port,
  duration: dur(),
  warmup: s.duration === 0 ? 0 : opts.warmup,
  budget: -1,
  sync: true,
  ...s,
});

/** Jobs to pre-fill for a reserve/delete run: 100k per second of --duration; a faster server drains it early (a shorter window). */
/** reserve/delete rows warm up briefly: the prefill's puts already warmed the server. */
const rdWarmup = () => Math.min(opts.warmup, 0.5);
const rdPrefill = () => (Q ? 4000 : Math.min(2_000_000, Math.ceil((rdWarmup() + dur()) * 150_000)));

/** A put workload: one closed-loop run of `clients` connections with `depth` puts in flight each. */
function putWorkload(row: string, title: string, clients: number, depth: number, body: number): Workload {
  const w: Workload = {
    row,
    title,
    group: "load",
    putsOnly: true,
    run: async (ctx) => [
      fromLoad(
        base(ctx, w),
        await runLoad(ctx.gens, ctx.server, spec(ctx.server.port, { kind: "put", clients, depth, body, tube: row })),
        "puts/s",
      ),
    ],
  };
  return w;
}

const WORKLOADS: Workload[] = [
  putWorkload("put-1", "put, 1 client, no pipelining, 100 B", 1, 1, 100),
  putWorkload("put-50", "put, 50 clients, no pipelining, 100 B", 50, 1, 100),
  putWorkload("put-50x16", "put, 50 clients × 16 in flight, 100 B", 50, 16, 100),
  putWorkload("put-50x16-16k", "put, 50 clients × 16 in flight, 16 KiB", 50, 16, 16384),
  {
    row: "rd-50x16",
    title: "reserve+delete, pre-filled tube, 50 clients × 16 in flight",
    group: "load",
    run: async (ctx) => {
      const n = rdPrefill();
      await prefill(ctx.gens[0]!, ctx.server.port, "rd", n, 100);
      const r = await runLoad(
        ctx.gens,
        ctx.server,
        spec(ctx.server.port, {
          kind: "rd",
          clients: 50,
          depth: 16,
          body: 100,
          tube: "rd",
          budget: n,
          warmup: rdWarmup(),
        }),
      );
      const row = fromLoad(base(ctx, WORKLOADS[4]!), r, "jobs/s");
      if (r.jobs >= n) row.notes.push(`all ${n} pre-filled jobs drained in ${(r.elapsedMs / 1000).toFixed(2)} s`);
      return [row];
    },
  },
  {
    row: "e2e-50",
    title: "25 producers (≤4 undelivered jobs each) → 25 blocking-reserve consumers, put→delivery latency",
    group: "load",
    run: async (ctx) => {
      const r = await runLoad(
        ctx.gens,
        ctx.server,
        spec(ctx.server.port, { kind: "e2e", clients: 50, producers: 25, window: 4, depth: 1, body: 100, tube: "e2e" }),
      );
      return [fromLoad(base(ctx, WORKLOADS[5]!), r, "jobs/s")];
    },
  },
  {
    row: "mix-50",
    title: "mix, 50 clients: put + peek-ready + reserve-with-timeout 0 in one write, then delete + stats-tube",
    group: "load",
    run: async (
      ctx,
    ) => [
      fromLoad(
        base(ctx, WORKLOADS[6]!),
        await runLoad(
          ctx.gens,
          ctx.server,
          spec(ctx.server.port, { kind: "mix", clients: 50, depth: 1, body: 100, tube: "mix" }),
        ),
        "ops/s",
        "ops",
      ),
    ],
  },
  {
    row: "mem-1m",
    title: `${SCALE.jobs.toLocaleString("en")} ready 100-byte jobs: put, memory, drain`,
    group: "scale",
    run: async (ctx) => {
      const w = WORKLOADS[7]!;
      const n = SCALE.jobs;
      await sleep(Q ? 10 : 300);
      const before = ctx.server.mem().rss;
      const put = fromLoad(
        { ...base(ctx, w), row: "mem-1m put" },
        await runLoad(
          ctx.gens,
          ctx.server,
          spec(ctx.server.port, {
            kind: "put",
            clients: 50,
            depth: 16,
            body: 100,
            tube: "mem",
            budget: n,
            duration: 0,
          }),
        ),
        "puts/s",
      );
      put.notes.unshift(`${n.toLocaleString("en")} puts in ${((n / put.value!) || 0).toFixed(2)} s`);
      await sleep(Q ? 10 : 500);
      const after = ctx.server.mem().rss;
      const stats = await query(ctx.gens[0]!, ctx.server.port, ["stats-tube mem"]);
      const ready = yamlNum(stats[0] ?? "", "current-jobs-ready");
      const mem: Row = {
        ...base(ctx, w),
        row: "mem-1m",
        value: (after - before) / n,
        unit: "B/job",
        better: "lower",
        rssMiB: after / 1048576,
        notes: [`RSS ${(before / 1048576).toFixed(1)} → ${(after / 1048576).toFixed(1)} MiB`],
      };
      if (ready !== n) {
        mem.status = "FAILED";
        mem.notes.push(`stats-tube says ${ready} ready jobs, expected ${n}`);
      }
      if (put.status !== "ok") mem.status = "FAILED";
      const drain = fromLoad(
        { ...base(ctx, w), row: "mem-1m drain" },
        await runLoad(
          ctx.gens,
          ctx.server,
          spec(ctx.server.port, { kind: "rd", clients: 50, depth: 16, body: 100, tube: "mem", budget: n, duration: 0 }),
        ),
        "jobs/s",
      );
      drain.notes.unshift(`${n.toLocaleString("en")} reserve+delete in ${((n / drain.value!) || 0).toFixed(2)} s`);
      return [put, mem, drain];
    },
  },
  {
    row: "conns-10k",
    title: `${SCALE.conns.toLocaleString("en")} idle connections held`,
    group: "scale",
    run: async (ctx) => {
      const row: Row = { ...base(ctx, WORKLOADS[8]!), better: "lower", unit: "B/conn" };
      const n = SCALE.conns;
      await sleep(Q ? 10 : 300);
      const before = ctx.server.mem().rss;
      const cpu0 = ctx.server.cpuMs();
      const id = nextId++;
      const tag = `conns${id}`;
      const held = check(
        await ctx.gens[0]!.request(
          { op: "hold", id, host: HOST, port: ctx.server.port, conns: n, tag, setup: [] },
          "held",
        ),
      );
      await sleep(Q ? 10 : 500);
      const after = ctx.server.mem().rss;
      const stats = await query(ctx.gens[0]!, ctx.server.port, ["stats"]);
      const cur = yamlNum(stats[0] ?? "", "current-connections");
      const rel = check(await ctx.gens[0]!.request({ op: "release", id: nextId++, tag }, "released"));
      row.value = (after - before) / n;
      row.rssMiB = after / 1048576;
      row.srvCpuMs = ctx.server.cpuMs() - cpu0;
      row.notes.push(
        `${n} connected in ${(held.ms / 1000).toFixed(2)} s; RSS ${(before / 1048576).toFixed(1)} → ${
          (after / 1048576).toFixed(1)
        } MiB`,
      );
      if (!(cur >= n + 1)) {
        row.status = "FAILED";
        row.notes.push(`stats says current-connections ${cur}, expected ≥ ${n + 1}`);
      }
      if (rel.errors.length) {
        row.status = "FAILED";
        row.notes.push(...rel.errors);
      }
      return [row];
    },
  },
  {
    row: "tubes-10k",
    title: `reserve+delete with ${
      SCALE.tubes.toLocaleString("en")
    } other tubes watched (idle conns blocked in reserve) vs with 1 tube`,
    group: "scale",
    run: async (ctx) => {
      const w = WORKLOADS[9]!;
      const n = SCALE.tubes;
      const d = Q ? dur() : Math.max(1, dur() / 2);
      const jobs = Q ? 4000 : Math.min(1_000_000, Math.ceil((rdWarmup() + d) * 150_000));
      // fill first: with many tubes a put may cost more (it does on beanstalkd)
      await prefill(ctx.gens[0]!, ctx.server.port, "td", jobs, 100);
      await sleep(Q ? 10 : 300);
      const before = ctx.server.mem().rss;
      const id = nextId++;
      const tag = `tubes${id}`;
      const held = check(
        await ctx.gens[0]!.request(
          {
            op: "hold",
            id,
            host: HOST,
            port: ctx.server.port,
            conns: n,
            tag,
            setup: [["watch t{i}", "WATCHING 2"], ["ignore default", "WATCHING 1"]],
            tail: "reserve",
          },
          "held",
        ),
      );
      await sleep(Q ? 10 : 500);
      const after = ctx.server.mem().rss;
      const stats = await query(ctx.gens[0]!, ctx.server.port, ["stats"]);
      const tubes = yamlNum(stats[0] ?? "", "current-tubes");
      const waiting = yamlNum(stats[0] ?? "", "current-waiting");
      const s = spec(ctx.server.port, {
        kind: "rd",
        clients: 50,
        depth: 16,
        body: 100,
        tube: "td",
        budget: jobs,
        duration: d,
        warmup: rdWarmup(),
      });
      const many = fromLoad(
        { ...base(ctx, w), row: `tubes-10k @${n}` },
        await runLoad(ctx.gens, ctx.server, s),
        "jobs/s",
      );
      const rel = check(await ctx.gens[0]!.request({ op: "release", id: nextId++, tag }, "released"));
      many.notes.push(
        `${n} watchers set up in ${(held.ms / 1000).toFixed(2)} s, ${
          ((after - before) / n).toFixed(0)
        } B RSS per tube+watcher`,
      );
      if (!(tubes >= n + 1) || !(waiting >= n)) {
        many.status = "FAILED";
        many.notes.push(`stats says current-tubes ${tubes}, current-waiting ${waiting}; expected ≥ ${n + 1}, ≥ ${n}`);
      }
      if (rel.errors.length) {
        many.status = "FAILED";
        many.notes.push(...rel.errors);
      }
      // does the server notice that the blocked watchers went away?
      await sleep(Q ? 50 : 1000);
      const left = yamlNum((await query(ctx.gens[0]!, ctx.server.port, ["stats"]))[0] ?? "", "current-connections");
      if (left > 2) {
        many.notes.push(`${left - 1} connections still counted ${Q ? 0.05 : 1} s after the ${n} watchers closed`);
      }
      // the 1-tube run on a fresh server, filled the same way
      const fresh = new Server(ctx.target);
      let one: Row;
      try {
        await fresh.start();
        await prefill(ctx.gens[0]!, fresh.port, "td", jobs, 100);
        one = fromLoad(
          { ...base(ctx, w), row: "tubes-10k @1" },
          await runLoad(ctx.gens, fresh, { ...s, port: fresh.port }),
          "jobs/s",
        );
        if (fresh.exited) {
          one.status = "FAILED";
          one.notes.push(`server ${fresh.exited}`);
        }
      } finally {
        await fresh.stop();
      }
      if (one.status === "ok" && many.status === "ok") {
        const k = many.value! / one.value!;
        many.checks = `${k.toFixed(2)}× of the 1-tube rate: ${k >= 0.8 ? "pass" : "MISS"} (≥0.8)`;
      }
      return [many, one];
    },
  },
];

// ------------------------------------------------------------------ formatting

function si(v: number | undefined, digits = 3): string {
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

function table(rows: string[][]): string {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i < 2 || i === r.length - 1 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join("  ").trimEnd();
  const sep = w.map((n) => "-".repeat(n)).join("  ");
  return [line(rows[0]!), sep, ...rows.slice(1).map(line)].join("\n");
}

// ------------------------------------------------------------------ main

async function main() {
  const targets = opts.targets.map(makeTarget);
  const wanted = (row: string, group: string) =>
    opts.only.length === 0 ||
    opts.only.some((o) => o === group || row === o || (o.endsWith("*") && row.startsWith(o.slice(0, -1))));
  const workloads = WORKLOADS.filter((w) => wanted(w.row, w.group));
  if (!workloads.length) usage(`--only ${opts.only.join(",")} matches no row`);

  const clientRt = opts.client ?? (BUN ? "bun" : RUNTIME === "deno" && DENO ? "deno" : DENO ? "deno" : undefined);
  if (!clientRt || (clientRt === "bun" && !BUN) || (clientRt === "deno" && !DENO)) {
    usage(`no runtime for the load generator (${opts.client ?? "bun/deno"})`);
  }

  console.log(`tubeway bench — ${new Date().toISOString()} — ${NCPU} CPUs — coordinator on ${RUNTIME}`);
  console.log(
    `servers: beanstalkd ${version(BEANSTALKD, ["-v"]).replace(/^beanstalkd /, "")}, deno ${
      version(DENO, ["--version"]).replace(/^deno /, "")
    }, bun ${version(BUN, ["--version"])}` +
      ` | load generator: ${opts.procs}× ${clientRt}${PIN ? "" : " (not pinned: no taskset or 1 CPU)"}` +
      ` | ${
        PIN
          ? "server on CPU 0, generator on CPU " +
            (NCPU > 2 && opts.procs > 1 ? `1-${Math.min(NCPU - 1, opts.procs)}` : "1")
          : ""
      }` +
      ` | ${opts.duration} s per workload after ${opts.warmup} s warm-up${Q ? " (quick)" : ""}`,
  );
  const notes: string[] = [];
  if (!BEANSTALKD) notes.push("beanstalkd is not installed (apt-get install -y beanstalkd): running without ratios");
  for (const t of targets) if (t.missing) notes.push(`${t.name}: skipped, ${t.missing}`);

  // other load on the machine makes every figure noisy: say so
  const idle0 = cpuTimes();
  await sleep(Q ? 100 : 1000);
  const quiet = cpuBusy(idle0, cpuTimes());
  if (Q) notes.push("--quick: tiny counts and windows; the figures mean nothing");
  else if (quiet.some((b) => b > 0.1)) {
    notes.push(
      `machine not idle before the run (CPU busy ${
        quiet.map((b) => (100 * b).toFixed(0) + "%").join("/")
      }): other processes compete with the measurement`,
    );
  }

  const gens = Array.from({ length: opts.procs }, (_, i) => new Gen(i, clientRt!));
  const hellos = await Promise.all(
    gens.map((g) =>
      Promise.race([g.hello, sleep(30000).then(() => ({ ev: "error", message: "load generator did not start" }) as Ev)])
    ),
  );
  for (const h of hellos) if (h.ev !== "hello") usage(`load generator failed: ${h.message}`);

  const rows: Row[] = [];
  const t0 = performance.now();
  for (const target of targets) {
    if (target.missing) continue;
    let shared: Server | undefined;
    for (const w of workloads) {
      if (target.putsOnly && !w.putsOnly) continue;
      let server: Server | undefined;
      const rowStart = performance.now();
      try {
        if (Q) {
          if (!shared) {
            shared = new Server(target);
            await shared.start();
          }
          server = shared;
        } else {
          server = new Server(target);
          await server.start();
        }
        const got = await w.run({ target, gens, server });
        if (server.exited) {
          for (const r of got) {
            r.status = "FAILED";
            r.notes.push(`server ${server.exited}`);
          }
        }
        rows.push(...got);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        rows.push({ row: w.row, title: w.title, target: target.name, status: "FAILED", notes: [msg.slice(0, 400)] });
        if (server?.exited) {
          rows[rows.length - 1]!.notes.push(`server ${server.exited}: ${server.log.trim().slice(-300)}`);
        }
        // a generator left in a bad state would poison the next rows: replace it
        if (!(e instanceof GenError) || gens.some((g) => g.dead)) {
          for (let i = 0; i < gens.length; i++) {
            if (gens[i]!.dead) gens[i] = new Gen(i, clientRt!);
          }
          await Promise.all(gens.map((g) => g.hello));
        }
      } finally {
        if (!Q) await server?.stop();
      }
      const last = rows[rows.length - 1];
      proc.stderr.write(
        `  ${target.name.padEnd(12)} ${w.row.padEnd(14)} ${last?.status ?? ""} ${
          last?.value !== undefined ? si(last.value) + " " + (last.unit ?? "") : ""
        } (${((performance.now() - rowStart) / 1000).toFixed(1)} s)\n`,
      );
    }
    await shared?.stop();
  }
  for (const g of gens) g.close();

  // ratios against the baseline of the same variant, same row
  const byKey = new Map(rows.map((r) => [`${r.target}|${r.row}`, r]));
  const tmap = new Map(targets.map((t) => [t.name, t]));
  for (const r of rows) {
    const t = tmap.get(r.target)!;
    const b = t.baseline ? byKey.get(`${t.baseline}|${r.row}`) : undefined;
    if (!b || b.status !== "ok" || r.status !== "ok") continue;
    if (r.value !== undefined && b.value) r.ratio = r.value / b.value;
    if (r.p99 !== undefined && b.p99) r.p99ratio = r.p99 / b.p99;
    const rule = RULES.find((x) => x.row === r.row && x.variant === t.variant);
    if (rule && t.baseline && !t.putsOnly) {
      const ok = (rule.minRatio === undefined || (r.ratio ?? 0) >= rule.minRatio) &&
        (rule.maxRatio === undefined || (r.ratio ?? Infinity) <= rule.maxRatio) &&
        (rule.maxP99Ratio === undefined || (r.p99ratio ?? Infinity) <= rule.maxP99Ratio);
      // a client-bound figure is a floor: a MISS by a saturated row, or a pass
      // against a saturated baseline, may be the generator's doing
      const noisy = (r.otherPct ?? 0) > 100 * NOISY || (b.otherPct ?? 0) > 100 * NOISY;
      const verdict = noisy
        ? `${ok ? "pass" : "MISS"}? (other load on the machine: inconclusive)`
        : ok
        ? (b.saturated && rule.minRatio !== undefined ? "pass? (baseline client-bound: inconclusive)" : "pass")
        : (r.saturated ? "MISS? (generator saturated: inconclusive)" : "MISS");
      r.checks = `${rule.text}: ${verdict}`;
    }
  }
  for (const r of rows) {
    if (tmap.get(r.target)!.putsOnly && r.genCeiling) {
      r.notes.unshift(`generator ceiling ≈ ${si(r.genCeiling)} ${r.unit} on one core`);
    }
  }
  // rules whose target could not be judged
  for (const r of rows) {
    const t = tmap.get(r.target)!;
    const rule = RULES.find((x) => x.row === r.row && x.variant === t.variant);
    if (rule && t.baseline && !t.putsOnly && !r.checks) {
      r.checks = `${rule.text}: ${r.status !== "ok" ? "MISS (failed)" : "n/a (no baseline)"}`;
    }
  }

  const header = [
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
    "gen CPU",
    "core0/1",
    "target / notes",
  ];
  const body = rows.map((r) => [
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
    r.ratio === undefined ? "-" : `${r.ratio.toFixed(2)}×`,
    r.p99ratio === undefined ? "-" : `${r.p99ratio.toFixed(2)}×`,
    r.genCpuPct === undefined ? "-" : `${r.genCpuPct.toFixed(0)}%${r.saturated ? " SAT" : ""}`,
    r.srvCoreBusyPct === undefined || !Number.isFinite(r.srvCoreBusyPct + r.genCoreBusyPct!)
      ? "-"
      : `${r.srvCoreBusyPct.toFixed(0)}/${r.genCoreBusyPct!.toFixed(0)}%`,
    [r.checks, ...r.notes].filter(Boolean).join("; "),
  ]);
  console.log("");
  console.log(table([header, ...body]));
  console.log("");
  console.log(
    "result: throughput over the measured window (jobs/s; ops/s for mix), or bytes per job/connection for the scale rows. " +
      "p50/p99: per-command latency (e2e: put → delivery). srv CPU: server user+sys seconds in the window and % of one core; " +
      "µs/op: server CPU per command. RSS: server VmRSS at the end. ×bstalkd / p99×: ratio to beanstalkd in this run " +
      "(same variant). gen CPU: load generator's CPU as % of one core. core0/1: how busy the server's core and the " +
      "generator's core were, loopback softirq included (the kernel's TCP work is charged to no process). " +
      "SAT (and ≥ before the figure): the generator used ≥90% of a core or its core was ≥95% busy — the figure " +
      "is then client-bound, a floor for the server.",
  );
  const sat = rows.filter((r) => r.saturated);
  if (sat.length) {
    notes.push(
      `load generator (or its core) saturated on: ${
        sat.map((r) => `${r.target}/${r.row}`).join(", ")
      } — those figures are lower bounds for the server`,
    );
  }
  const noisyRows = rows.filter((r) => (r.otherPct ?? 0) > 100 * NOISY);
  if (noisyRows.length) {
    notes.push(
      `${noisyRows.length} of ${rows.length} rows ran while other processes used the CPUs; ` +
        "their figures and verdicts are suspect: rerun on an idle machine",
    );
  }
  for (const r of rows.filter((r) => r.status === "FAILED")) {
    notes.push(`FAILED ${r.target}/${r.row}: ${r.notes.join("; ")}`);
  }
  for (const n of notes) console.log(`note: ${n}`);
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  if (opts.json) {
    writeFileSync(
      opts.json,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          cpus: NCPU,
          pinned: !!PIN,
          duration: opts.duration,
          quick: Q,
          client: clientRt,
          procs: opts.procs,
          versions: {
            beanstalkd: version(BEANSTALKD, ["-v"]),
            deno: version(DENO, ["--version"]),
            bun: version(BUN, ["--version"]),
          },
          rules: RULES,
          rows,
          notes,
        },
        null,
        2,
      ) + "\n",
    );
  }
  proc.exit(rows.some((r) => r.status === "FAILED") ? 1 : 0);
}

await main();
