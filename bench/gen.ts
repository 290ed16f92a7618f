// The coordinator's side of the load generator processes (bench/native/, or
// bench/loadgen.ts where there is no C compiler): start them pinned to the generator
// core(s), talk lines with them (JSON back from both), split one workload over all of
// them and merge what they measured with the server's /proc counters.
import { type ChildProcess, spawn } from "node:child_process";
import { Hist } from "./hist.ts";
import { postmasterPid } from "./psql.ts";
import {
  allProcessMs,
  cpuBusy,
  cpuTimes,
  HOST,
  postgresCpuMs,
  proc,
  procCpuMs,
  ROOT,
  type Tools,
  wrap,
} from "./host.ts";
import type { RunResult, RunSpec } from "./loadgen_run.ts";
import type { Server } from "./server.ts";

// deno-lint-ignore no-explicit-any
export type Ev = { id?: number; ev: string; [k: string]: any };

export class GenError extends Error {}

export function check(e: Ev): Ev {
  if (e.ev === "error") throw new GenError(e.message);
  return e;
}

/** The CPUs the generators run on: every CPU but the server's (0). */
export function genCpus(t: Tools): string {
  return t.ncpu > 2 ? `1-${t.ncpu - 1}` : "1";
}

/** The generator program: the native one (bench/native, its binary) or bench/loadgen.ts on a runtime. */
export type GenProgram = { kind: "native"; path: string } | { kind: "bun" | "deno" };

function genArgv(t: Tools, p: GenProgram): string[] {
  if (p.kind === "native") return [p.path];
  const script = `${ROOT}/bench/loadgen.ts`;
  return p.kind === "bun" ? [t.bun!, "run", script] : [t.deno!, "run", "-A", script];
}

/**
 * A message as the native generator reads it: one line of tab-separated key=value
 * fields, the run's spec flattened into it, lists as repeated cmd= (and want=) keys,
 * null (any reply) as an empty want. (Parsing JSON in C would be more code than all
 * of this.) It answers in JSON like loadgen.ts.
 */
function nativeLine(m: Record<string, unknown>): string {
  const f: [string, unknown][] = [];
  for (const [k, v] of Object.entries(m)) {
    if (k === "spec") f.push(...Object.entries(v as object));
    else if (k === "cmds") { for (const c of v as string[]) f.push(["cmd", c]); }
    else if (k === "setup") {
      for (const [c, w] of v as [string, string | null][]) f.push(["cmd", c], ["want", w ?? ""]);
    } else f.push([k, v]);
  }
  return f.filter(([, v]) => v !== undefined).map(([k, v]) => {
    const s = typeof v === "boolean" ? (v ? "1" : "0") : String(v);
    if (/[\t\n]/.test(s)) throw new GenError(`${k}: tabs and newlines cannot reach the native generator`);
    return `${k}=${s}`;
  }).join("\t") + "\n";
}

export class Gen {
  child: ChildProcess;
  buf = "";
  waiters = new Map<string, (e: Ev) => void>();
  hello: Promise<Ev>;
  dead: string | null = null;
  errLog = "";
  constructor(t: Tools, private program: GenProgram) {
    // every generator may use every generator CPU: the kernel balances them
    const w = wrap(t, genArgv(t, program), genCpus(t));
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
      const key = e.ev === "hello" ? "0:hello" : `${e.id}:${e.ev}`;
      const w = this.waiters.get(key);
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
  send(m: Record<string, unknown>) {
    this.child.stdin!.write(this.program.kind === "native" ? nativeLine(m) : JSON.stringify(m) + "\n");
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

/** The generator processes of a run, and the request ids they share. */
export class Pool {
  gens: Gen[];
  private lastId = 0;
  constructor(private tools: Tools, private program: GenProgram, procs: number) {
    this.gens = Array.from({ length: procs }, () => new Gen(tools, program));
  }
  nextId(): number {
    return ++this.lastId;
  }
  get first(): Gen {
    return this.gens[0]!;
  }
  /** Replace generators that died (a generator left in a bad state would poison the next rows). */
  async heal(): Promise<void> {
    this.gens = this.gens.map((g) => (g.dead ? new Gen(this.tools, this.program) : g));
    await Promise.all(this.gens.map((g) => g.hello));
  }
  close(): void {
    for (const g of this.gens) g.close();
  }
}

export type LoadResult = Awaited<ReturnType<typeof runLoad>>;

/**
 * Run one workload split over every generator process at once; the server's CPU
 * time is read when the window opens (after warm-up) and after the last generator
 * finishes.
 */
/** The CPU of the +pg targets' database so far (NaN when it is not on this machine). */
function pgCpu(): number {
  const pid = postmasterPid();
  return pid === undefined ? NaN : postgresCpuMs(pid);
}

export async function runLoad(pool: Pool, server: Server, spec: RunSpec) {
  // a generator with no connection would only add a process to the scheduler
  const gens = pool.gens.slice(0, Math.max(1, Math.min(pool.gens.length, spec.clients)));
  const ids = gens.map(() => pool.nextId());
  const specs = gens.map((_, i) => ({ ...spec, ...splitClients(spec, i, gens.length), sync: true }));
  const done = gens.map((g, i) => g.wait(ids[i]!, "done"));
  const ready = gens.map((g, i) => g.request({ op: "run", id: ids[i]!, spec: specs[i] }, "ready"));
  // a failure before "ready" comes back as an error on the ready wait
  for (const e of await Promise.all(ready)) check(e);
  // the window opens at "go", or when the generators report the end of warm-up
  const measuring = spec.warmup ? gens.map((g, i) => g.wait(ids[i]!, "measuring")) : [];
  const mark = () => ({
    cpu: server.cpuMs(),
    sys: cpuTimes(),
    all: allProcessMs(),
    self: procCpuMs(proc.pid),
    pg: pgCpu(),
    t: performance.now(),
  });
  let m0 = mark();
  gens.forEach((g, i) => g.send({ op: "go", id: ids[i] }));
  if (measuring.length) {
    await Promise.race([Promise.all(measuring), Promise.all(done)]);
    m0 = mark();
  }
  const results = (await Promise.all(done)).map((e) => check(e).result as RunResult);
  const wallMs = performance.now() - m0.t;
  const srvCpuMs = server.cpuMs() - m0.cpu;
  const pgCpuMs = pgCpu() - m0.pg;
  const busy = cpuBusy(m0.sys, cpuTimes());
  const mem = server.mem();
  const genCpuMs = results.reduce((a, r) => a + r.genCpuMs, 0);
  // process time on the machine that was neither the server, the generators nor us
  const otherMs = allProcessMs() - m0.all - srvCpuMs - (procCpuMs(proc.pid) - m0.self) - genCpuMs;
  const hist = new Hist();
  let ops = 0, jobs = 0, errors = 0, elapsedMs = 0;
  const errorSamples: string[] = [];
  const notes: string[] = [];
  for (const r of results) {
    hist.merge(Hist.fromJSON(r.hist));
    ops += r.ops;
    jobs += r.jobs;
    errors += r.errors;
    errorSamples.push(...r.errorSamples);
    notes.push(...r.notes);
    elapsedMs = Math.max(elapsedMs, r.elapsedMs);
  }
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
    /** The database's processes' CPU in the window (a +pg target's other half). */
    pgCpuMs,
    rss: mem.rss,
    hwm: mem.hwm,
    /** All generators together, in cores (they share the generator CPU(s)). */
    genCpu: genCpuMs / wallMs,
    busy,
    other: otherMs / wallMs,
  };
}

function splitClients(spec: RunSpec, i: number, n: number): Partial<RunSpec> {
  const share = (total: number) => Math.floor(total / n) + (i < total % n ? 1 : 0);
  /** Where process i's share of `total` starts. */
  const from = (total: number) => i * Math.floor(total / n) + Math.min(i, total % n);
  const out: Partial<RunSpec> = { clients: share(spec.clients) };
  if (spec.budget >= 0) out.budget = share(spec.budget);
  if (spec.producers !== undefined) out.producers = share(spec.producers);
  if (spec.ports && n > 1) {
    // each process gets its share of the producers' ports, then of the others'
    const all = spec.ports.split(",");
    const per = Array.from({ length: spec.clients }, (_, k) => all[k % all.length]!);
    const np = spec.kind === "e2e" ? (spec.producers ?? Math.floor(spec.clients / 2)) : 0;
    const prod = per.slice(0, np), rest = per.slice(np);
    const mine = [
      ...prod.slice(from(np), from(np) + share(np)),
      ...rest.slice(from(rest.length), from(rest.length) + share(rest.length)),
    ];
    out.ports = mine.join(",");
    out.clients = mine.length;
  }
  if (spec.kind === "e2e" && n > 1) out.tube = `${spec.tube}-${i}`; // latency stamps are per process
  return out;
}

/** Put `count` jobs into `tube` from the first generator (not measured). */
export async function prefill(pool: Pool, port: number, tube: string, count: number, body: number): Promise<void> {
  if (count <= 0) return;
  const id = pool.nextId();
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
  const done = pool.first.wait(id, "done");
  check(await pool.first.request({ op: "run", id, spec }, "ready"));
  const r = check(await done).result as RunResult;
  if (r.errors || r.jobs !== count) {
    throw new GenError(`prefill failed: ${r.errorSamples.join("; ") || `${r.jobs}/${count} jobs`}`);
  }
}

export async function query(pool: Pool, port: number, cmds: string[]): Promise<string[]> {
  const id = pool.nextId();
  return check(await pool.first.request({ op: "query", id, host: HOST, port, cmds }, "replies")).replies;
}

export function yamlNum(text: string, key: string): number {
  return Number(new RegExp(`^${key}: (\\d+)`, "m").exec(text)?.[1] ?? NaN);
}
