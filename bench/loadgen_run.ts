// The load generator's measuring side: one Run per workload (its budget, deadline,
// warm-up and histogram) and one Client per connection, a closed loop that keeps
// its commands in flight, parses every reply from the raw bytes and answers all the
// replies of one read with one write.
//
// Latency of a command = time its reply was read minus time the write that carried
// it was issued (performance.now()). For the end-to-end workload it is the time
// from the put's write to the RESERVED reply that delivered the job, carried in the
// job body.
import type { Conn } from "./conn.ts";
import { Hist } from "./hist.ts";
import { bytes, filler, joinRest, K, latin1, parse, putCmd, repeat } from "./proto.ts";
import { readFileSync } from "node:fs";

// ------------------------------------------------------------------ types

export interface RunSpec {
  kind: "put" | "rd" | "e2e" | "mix";
  host: string;
  port: number;
  /** Several nodes: connection i goes to ports[i % ports.length] (a comma-separated list for the native generator). */
  ports?: string | undefined;
  clients: number;
  /** Commands in flight per connection (put/rd). */
  depth: number;
  /** Body size in bytes. */
  body: number;
  tube: string;
  /** Seconds of load; 0 = until the budget is spent. */
  duration: number;
  /** Jobs to put (put) or to reserve (rd); -1 = no limit. */
  budget: number;
  /** e2e: how many of the clients are producers (the rest consume). */
  producers?: number;
  /** e2e: most jobs one producer may have put but not yet seen delivered. */
  window?: number;
  /** Wait for {"op":"go"} after connecting and setting up. */
  sync: boolean;
  /** Seconds of unrecorded load before the measured window (JIT warm-up). */
  warmup?: number;
  /** A second tube every client also watches (beside-limit: one held back by its limit). */
  alsoWatch?: string;
}

export interface RunResult {
  ops: number;
  /** Jobs completed (put: inserted, rd: deleted, e2e: delivered, mix: cycles). */
  jobs: number;
  elapsedMs: number;
  hist: ReturnType<Hist["toJSON"]>;
  errors: number;
  errorSamples: string[];
  genCpuMs: number;
  notes: string[];
}

// ------------------------------------------------------------------ CPU

export function selfCpuMs(): number {
  try {
    const s = readFileSync("/proc/self/stat", "latin1");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime+stime, USER_HZ = 100
  } catch {
    // deno-lint-ignore no-explicit-any
    const p: any = (globalThis as any).process;
    if (p?.cpuUsage) {
      const u = p.cpuUsage();
      return (u.user + u.system) / 1000;
    }
    return NaN;
  }
}

// ------------------------------------------------------------------ run state

export const CRLF = bytes("\r\n");
export const C_RESERVE = bytes("reserve\r\n");
export const C_DELETE = bytes("delete ");
export const C_PEEK_READY = bytes("peek-ready\r\n");
export const C_RWT0 = bytes("reserve-with-timeout 0\r\n");

export class Run {
  hist = new Hist();
  ops = 0;
  jobs = 0;
  errors = 0;
  errorSamples: string[] = [];
  notes: string[] = [];
  deadline = Infinity;
  budget = Infinity;
  stopped = false;
  t0 = 0;
  tLast = 0;
  /** False during warm-up; the window (counts, latencies, CPU) starts when it turns true. */
  measuring = true;
  warmEnd = 0;
  cpu0 = 0;
  onMeasure: () => void = () => {};
  delivered = 0;
  active = 0;
  finished = false;
  putBatches: Uint8Array[] = [];
  putOne: Uint8Array;
  produced = 0;
  producersActive = 0;
  clients: Client[] = [];
  onFinish: () => void = () => {};
  watchdog: ReturnType<typeof setInterval> | undefined;

  constructor(public spec: RunSpec) {
    this.putOne = putCmd(filler(spec.body));
    for (let k = 0; k <= Math.max(spec.depth, 1); k++) this.putBatches.push(repeat(this.putOne, k));
    if (spec.budget >= 0) this.budget = spec.budget;
  }

  /** How many new jobs may be started now (deadline and budget). */
  take(k: number, now: number): number {
    if (this.stopped) return 0;
    if (now >= this.deadline) {
      this.stopped = true;
      return 0;
    }
    if (k > this.budget) k = this.budget;
    this.budget -= k;
    if (this.budget <= 0 && k === 0) this.stopped = true;
    return k;
  }

  /** End of warm-up: forget what was counted so far. */
  startMeasuring(now: number) {
    this.measuring = true;
    this.ops = 0;
    this.jobs = 0;
    this.hist = new Hist();
    this.t0 = now;
    this.tLast = now;
    this.cpu0 = selfCpuMs();
    this.onMeasure();
  }

  fail(c: Client | null, msg: string) {
    this.errors++;
    if (this.errorSamples.length < 5) this.errorSamples.push(msg);
    if (c && !c.done) {
      c.done = true;
      c.conn?.close();
      this.clientDone();
    }
  }

  clientDone() {
    this.active--;
    if (this.active <= 0) this.finish();
  }

  finish() {
    if (this.finished) return;
    this.finished = true;
    if (this.watchdog) clearInterval(this.watchdog);
    this.onFinish();
  }
}

export type Driver = {
  start(c: Client, now: number): void;
  reply(
    c: Client,
    kind: K,
    a: number,
    n: number,
    buf: Uint8Array,
    bodyAt: number,
    lineAt: number,
    lineEnd: number,
    now: number,
  ): void;
};

// ------------------------------------------------------------------ client

let cur: Client;
let curNow = 0;

function dispatch(kind: K, a: number, n: number, buf: Uint8Array, bodyAt: number, lineAt: number, lineEnd: number) {
  const c = cur;
  if (!c.run.measuring && curNow >= c.run.warmEnd) c.run.startMeasuring(curNow);
  c.inflight--;
  const sent = c.times[c.th]!;
  c.th = (c.th + 1) & c.tmask;
  if (c.rtt) c.run.hist.add((curNow - sent) * 1000);
  c.run.tLast = curNow;
  c.driver.reply(c, kind, a, n, buf, bodyAt, lineAt, lineEnd, curNow);
}

export class Client {
  conn!: Conn;
  rest: Uint8Array | null = null;
  // FIFO of send times (one per command in flight)
  times = new Float64Array(64);
  tmask = 63;
  th = 0;
  tt = 0;
  inflight = 0;
  // output being assembled during one read
  puts = 0;
  ob = new Uint8Array(4096);
  olen = 0;
  ocmds = 0;
  done = false;
  rtt = true;
  // per-workload state
  step = 0;
  producer = false;
  idx = 0;
  undelivered = 0;

  constructor(public run: Run, public driver: Driver) {}

  onData(chunk: Uint8Array) {
    if (this.done) return;
    const now = performance.now();
    const buf = joinRest(this.rest, chunk);
    this.rest = null;
    cur = this;
    curNow = now;
    const used = parse(buf, dispatch);
    if (this.done) return;
    if (used < 0) {
      const at = -1 - used;
      this.run.fail(this, `malformed reply: ${JSON.stringify(latin1(buf, at, Math.min(buf.length, at + 60)))}`);
      return;
    }
    if (used < buf.length) this.rest = buf.slice(used);
    this.flush();
  }

  onClose(err?: Error) {
    if (this.done || !err) return;
    this.run.fail(this, `connection lost: ${err.message}`);
  }

  /** Queue raw command bytes (ncmds commands). */
  add(b: Uint8Array, ncmds = 1) {
    this.ensure(b.length);
    this.ob.set(b, this.olen);
    this.olen += b.length;
    this.ocmds += ncmds;
  }

  addNum(v: number) {
    this.ensure(20);
    const s = String(v);
    for (let i = 0; i < s.length; i++) this.ob[this.olen++] = s.charCodeAt(i);
  }

  addDelete(id: number) {
    this.add(C_DELETE, 1);
    this.addNum(id);
    this.add(CRLF, 0);
  }

  ensure(k: number) {
    if (this.olen + k <= this.ob.length) return;
    const nb = new Uint8Array(Math.max(this.ob.length * 2, this.olen + k));
    nb.set(this.ob.subarray(0, this.olen));
    this.ob = nb;
  }

  pushTimes(k: number, t: number) {
    const need = this.inflight + k;
    if (need > this.times.length) {
      let size = this.times.length;
      while (size < need) size *= 2;
      const nt = new Float64Array(size);
      for (let i = 0; i < this.inflight; i++) nt[i] = this.times[(this.th + i) & this.tmask]!;
      this.times = nt;
      this.tmask = size - 1;
      this.th = 0;
      this.tt = this.inflight;
    }
    for (let i = 0; i < k; i++) {
      this.times[this.tt] = t;
      this.tt = (this.tt + 1) & this.tmask;
    }
    this.inflight = need;
  }

  flush() {
    if (this.puts === 0 && this.olen === 0) return;
    const t = performance.now();
    let n = this.ocmds;
    if (this.olen === 0) {
      // pure puts: write a cached batch without copying
      const k = this.puts;
      n = k;
      this.puts = 0;
      this.ocmds = 0;
      this.pushTimes(n, t);
      const batches = this.run.putBatches;
      if (k < batches.length) this.conn.write(batches[k]!);
      else for (let i = 0; i < k; i++) this.conn.write(this.run.putOne);
      return;
    }
    for (; this.puts > 0; this.puts--) this.add(this.run.putOne, 1);
    n = this.ocmds;
    const out = this.ob.slice(0, this.olen);
    this.olen = 0;
    this.ocmds = 0;
    this.pushTimes(n, t);
    this.conn.write(out);
  }

  finishIfIdle() {
    if (!this.done && this.inflight === 0 && this.puts === 0 && this.olen === 0) {
      this.done = true;
      this.run.clientDone();
    }
  }
}
