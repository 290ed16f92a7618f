// The load generator: one process (pinned by bench/main.ts to its own CPU) that
// drives many beanstalkd connections from a single event loop. bench/main.ts talks
// to it with JSON lines on stdin/stdout (see Msg below); it is not meant to be run
// by hand. Each connection is a closed loop: it keeps `depth` commands in flight,
// and every reply is parsed from the raw bytes and checked against what the command
// must answer. Replies that arrive in one read are answered with one write.
//
// Latency of a command = time its reply was read minus time the write that carried
// it was issued (performance.now()). For the end-to-end workload it is the time
// from the put's write to the RESERVED reply that delivered the job, carried in the
// job body.
import { type Conn, connect, defaultTransport, type Transport } from "./conn.ts";
import { Hist } from "./hist.ts";
import { bytes, filler, K, latin1, parse, putCmd, repeat } from "./proto.ts";
import { readFileSync } from "node:fs";

// ------------------------------------------------------------------ types

export interface RunSpec {
  kind: "put" | "rd" | "e2e" | "mix";
  host: string;
  port: number;
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

function selfCpuMs(): number {
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

const CRLF = bytes("\r\n");
const C_RESERVE = bytes("reserve\r\n");
const C_DELETE = bytes("delete ");
const C_PEEK_READY = bytes("peek-ready\r\n");
const C_RWT0 = bytes("reserve-with-timeout 0\r\n");

class Run {
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

type Driver = {
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

class Client {
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
    let buf = chunk;
    if (this.rest) {
      const r = this.rest;
      buf = new Uint8Array(r.length + chunk.length);
      buf.set(r, 0);
      buf.set(chunk, r.length);
      this.rest = null;
    }
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

// ------------------------------------------------------------------ drivers

function bad(c: Client, what: string, buf: Uint8Array, lineAt: number, lineEnd: number) {
  c.run.fail(c, `${what}: got ${JSON.stringify(latin1(buf, lineAt, lineEnd))}`);
}

/** put, closed loop with `depth` in flight. */
const putDriver: Driver = {
  start(c, now) {
    c.puts += c.run.take(c.run.spec.depth, now);
    if (c.puts === 0) c.finishIfIdle();
  },
  reply(c, kind, _a, _n, buf, _b, lineAt, lineEnd, now) {
    if (kind !== K.INSERTED) return bad(c, "put expected INSERTED", buf, lineAt, lineEnd);
    const r = c.run;
    r.ops++;
    r.jobs++;
    if (r.take(1, now) === 1) c.puts++;
    else if (c.inflight === 0 && c.puts === 0) c.finishIfIdle();
  },
};

/** reserve + delete with `depth` commands in flight. */
const rdDriver: Driver = {
  start(c, now) {
    const k = c.run.take(c.run.spec.depth, now);
    for (let i = 0; i < k; i++) c.add(C_RESERVE);
    if (k === 0) c.finishIfIdle();
  },
  reply(c, kind, a, n, buf, _b, lineAt, lineEnd, now) {
    const r = c.run;
    r.ops++;
    if (kind === K.RESERVED) {
      if (n !== r.spec.body) return bad(c, `reserve expected a ${r.spec.body}-byte body`, buf, lineAt, lineEnd);
      c.addDelete(a);
    } else if (kind === K.DELETED) {
      r.jobs++;
      if (r.take(1, now) === 1) c.add(C_RESERVE);
      else if (c.inflight === 0 && c.olen === 0) c.finishIfIdle();
    } else return bad(c, "reserve/delete", buf, lineAt, lineEnd);
  },
};

/**
 * Producers put timestamped jobs one at a time, each keeping at most `window` of its
 * jobs undelivered (so no backlog builds up and the latency is the server's, not a
 * queue's); consumers block in reserve, then send delete+reserve in one write.
 * Body: "<put time in 0.1 µs>:<producer index>xxxx…".
 */
function stampedPut(c: Client, bodyLen: number) {
  const stamp = `${Math.round(performance.now() * 10000)}:${c.idx}`;
  c.add(bytes(`put 0 0 60 ${bodyLen}\r\n`), 1);
  c.ensure(bodyLen + 2);
  for (let i = 0; i < stamp.length; i++) c.ob[c.olen++] = stamp.charCodeAt(i);
  for (let i = stamp.length; i < bodyLen; i++) c.ob[c.olen++] = 120; // 'x'
  c.add(CRLF, 0);
  c.undelivered++;
}

/** Let producer p put its next job if it may; returns true when it queued one. */
function producerStep(p: Client, now: number): boolean {
  const r = p.run;
  if (p.done || p.inflight > 0 || p.olen > 0) return false;
  if (!r.stopped && now < r.deadline && p.undelivered >= (r.spec.window ?? 4)) return false; // parked
  if (r.take(1, now) === 1) {
    stampedPut(p, r.spec.body);
    return true;
  }
  p.finishIfIdle();
  if (p.done) {
    r.producersActive--;
    e2eMaybeDone(r);
  }
  return false;
}

const e2eDriver: Driver = {
  start(c, now) {
    if (c.producer) producerStep(c, now);
    else {
      c.rtt = false;
      c.add(C_RESERVE);
    }
  },
  reply(c, kind, a, n, buf, bodyAt, lineAt, lineEnd, now) {
    const r = c.run;
    if (c.producer) {
      if (kind !== K.INSERTED) return bad(c, "put expected INSERTED", buf, lineAt, lineEnd);
      r.ops++;
      r.produced++;
      producerStep(c, now);
      return;
    }
    if (kind === K.RESERVED) {
      if (n !== r.spec.body) return bad(c, `reserve expected a ${r.spec.body}-byte body`, buf, lineAt, lineEnd);
      let v = 0;
      let i = bodyAt;
      const end = bodyAt + n;
      for (; i < end; i++) {
        const d = buf[i]! - 48;
        if (d < 0 || d > 9) break;
        v = v * 10 + d;
      }
      let pi = 0;
      let j = i + 1;
      for (; j < end; j++) {
        const d = buf[j]! - 48;
        if (d < 0 || d > 9) break;
        pi = pi * 10 + d;
      }
      const p = r.clients[pi];
      if (i === bodyAt || buf[i] !== 58 || j === i + 1 || !p?.producer) {
        return bad(c, "job body carries no timestamp:producer", buf, lineAt, lineEnd);
      }
      r.hist.add((now - v / 10000) * 1000);
      r.ops++;
      r.jobs++;
      r.delivered++;
      c.addDelete(a);
      c.add(C_RESERVE);
      p.undelivered--;
      if (producerStep(p, now)) p.flush();
      e2eMaybeDone(r);
    } else if (kind === K.DELETED) {
      r.ops++;
    } else return bad(c, "consumer reserve/delete", buf, lineAt, lineEnd);
  },
};

function e2eMaybeDone(r: Run) {
  if (r.producersActive === 0 && r.delivered >= r.produced) r.finish();
}

/**
 * A worker-like cycle in two round trips: put + peek-ready + reserve-with-timeout 0
 * in one write (none depends on another's reply), then delete (when a job was
 * reserved) + stats-tube in the next.
 */
function mixFirst(c: Client) {
  c.add(c.run.putOne);
  c.add(C_PEEK_READY);
  c.add(C_RWT0);
  c.step = 0;
}

const mixDriver: Driver = {
  start(c, now) {
    if (c.run.take(1, now) === 1) mixFirst(c);
    else c.finishIfIdle();
  },
  reply(c, kind, a, n, buf, bodyAt, lineAt, lineEnd, now) {
    const r = c.run;
    r.ops++;
    switch (c.step) {
      case 0:
        if (kind !== K.INSERTED) return bad(c, "put expected INSERTED", buf, lineAt, lineEnd);
        c.step = 1;
        return;
      case 1:
        if (kind === K.FOUND) {
          if (n !== r.spec.body) return bad(c, "peek-ready body size", buf, lineAt, lineEnd);
        } else if (kind !== K.NOT_FOUND) return bad(c, "peek-ready expected FOUND/NOT_FOUND", buf, lineAt, lineEnd);
        c.step = 2;
        return;
      case 2:
        if (kind === K.RESERVED) {
          if (n !== r.spec.body) return bad(c, "reserve body size", buf, lineAt, lineEnd);
          c.addDelete(a);
          c.add(statsTubeCmd(r));
          c.step = 3;
        } else if (kind === K.TIMED_OUT) {
          c.add(statsTubeCmd(r));
          c.step = 4;
        } else return bad(c, "reserve-with-timeout 0 expected RESERVED/TIMED_OUT", buf, lineAt, lineEnd);
        return;
      case 3:
        if (kind !== K.DELETED) return bad(c, "delete expected DELETED", buf, lineAt, lineEnd);
        c.step = 4;
        return;
      case 4:
        if (kind !== K.OK || buf[bodyAt] !== 45 || buf[bodyAt + 1] !== 45 || buf[bodyAt + 2] !== 45) {
          return bad(c, "stats-tube expected OK with YAML", buf, lineAt, lineEnd);
        }
        r.jobs++; // one full cycle
        if (r.take(1, now) === 1) mixFirst(c);
        else c.finishIfIdle();
        return;
    }
  },
};
const statsTubeCache = new Map<string, Uint8Array>();
function statsTubeCmd(r: Run): Uint8Array {
  let b = statsTubeCache.get(r.spec.tube);
  if (!b) statsTubeCache.set(r.spec.tube, b = bytes(`stats-tube ${r.spec.tube}\r\n`));
  return b;
}

const DRIVERS: Record<RunSpec["kind"], Driver> = { put: putDriver, rd: rdDriver, e2e: e2eDriver, mix: mixDriver };

// ------------------------------------------------------------------ setup helpers

/** A connection used for request/reply outside the measured window. */
class Plain {
  rest: Uint8Array | null = null;
  replies: string[] = [];
  waiter: (() => void) | null = null;
  closed: Error | null = null;
  conn!: Conn;
  onData(chunk: Uint8Array) {
    let buf = chunk;
    if (this.rest) {
      const r = this.rest;
      buf = new Uint8Array(r.length + chunk.length);
      buf.set(r, 0);
      buf.set(chunk, r.length);
      this.rest = null;
    }
    const used = parse(buf, (_k, _a, n, b, bodyAt, lineAt, lineEnd) => {
      let s = latin1(b, lineAt, lineEnd);
      if (bodyAt) s += "\r\n" + latin1(b, bodyAt, bodyAt + n);
      this.replies.push(s);
    });
    if (used < 0) this.closed = new Error("malformed reply");
    else if (used < buf.length) this.rest = buf.slice(used);
    this.waiter?.();
  }
  onClose(err?: Error) {
    this.closed = err ?? new Error("closed");
    this.waiter?.();
  }
  async replyCount(k: number, timeoutMs: number): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.replies.length < k) {
      if (this.closed) {
        throw new Error(`connection closed after ${this.replies.length}/${k} replies: ${this.closed.message}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for reply ${this.replies.length + 1}/${k}`);
      await new Promise<void>((res) => {
        const t = setTimeout(res, left);
        this.waiter = () => {
          clearTimeout(t);
          this.waiter = null;
          res();
        };
      });
    }
    return this.replies.splice(0, k);
  }
}

async function plainConnect(host: string, port: number): Promise<Plain> {
  const p = new Plain();
  p.conn = await connect(host, port, p, transport);
  return p;
}

/** Send lines, expect exact reply lines (a null expectation accepts anything). */
async function script(p: Plain, steps: [string, string | null][], timeoutMs = 10000): Promise<void> {
  if (!steps.length) return;
  p.conn.write(bytes(steps.map(([c]) => c + "\r\n").join("")));
  const got = await p.replyCount(steps.length, timeoutMs);
  steps.forEach(([cmd, want], i) => {
    if (want !== null && got[i] !== want) {
      throw new Error(`${cmd}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got[i])}`);
    }
  });
}

/** Open n connections, at most `par` connecting at a time. */
async function openMany<T>(n: number, par: number, open: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      out[i] = await open(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(par, n) }, worker));
  return out;
}

// ------------------------------------------------------------------ ops

async function doRun(id: number, spec: RunSpec) {
  const run = new Run(spec);
  const driver = DRIVERS[spec.kind];
  const tube = spec.tube;
  const setup: [string, string | null][] = tube === "default"
    ? []
    : [[`use ${tube}`, `USING ${tube}`], [`watch ${tube}`, "WATCHING 2"], ["ignore default", "WATCHING 1"]];
  // connect and set up every client
  const clients = await openMany(spec.clients, 64, async (i) => {
    const p = await plainConnect(spec.host, spec.port);
    await script(p, setup);
    const c = new Client(run, driver);
    c.producer = spec.kind === "e2e" && i < (spec.producers ?? Math.floor(spec.clients / 2));
    c.idx = i;
    // hand the socket over to the measuring client
    c.conn = p.conn;
    p.conn.setHandlers(c);
    return c;
  });
  run.clients = clients;
  run.active = clients.length;
  run.producersActive = clients.filter((c) => c.producer).length;
  send({ id, ev: "ready" });
  if (spec.sync) await waitGo(id);

  run.cpu0 = selfCpuMs();
  const finished = new Promise<void>((res) => (run.onFinish = res));
  const start = performance.now();
  run.t0 = start;
  run.tLast = start;
  const warm = (spec.warmup ?? 0) * 1000;
  if (warm > 0) {
    run.measuring = false;
    run.warmEnd = start + warm;
  }
  run.onMeasure = () => send({ id, ev: "measuring" });
  if (spec.duration > 0) run.deadline = start + warm + spec.duration * 1000;
  const hardStop = start + warm + (spec.duration > 0 ? spec.duration * 1000 + 15000 : 600000);
  run.watchdog = setInterval(() => {
    const now = performance.now();
    if (!run.measuring && now >= run.warmEnd) run.startMeasuring(now);
    if (now >= run.deadline) run.stopped = true;
    if (spec.kind === "e2e" && run.producersActive === 0 && now > run.deadline + 5000) {
      run.notes.push(`${run.produced - run.delivered} jobs still undelivered 5 s after the producers stopped`);
      run.finish();
    } else if (now > hardStop || now - run.tLast > STALL_MS) {
      const out = clients.reduce((s, c) => s + c.inflight, 0);
      run.fail(
        null,
        `${now > hardStop ? "timed out" : `no reply for ${STALL_MS / 1000} s`} with ${out} commands unanswered`,
      );
      run.finish();
    }
  }, 50);
  for (const c of clients) {
    driver.start(c, start);
    if (!c.done) c.flush();
  }
  if (run.active <= 0) run.finish();
  await finished;
  if (!run.measuring) run.startMeasuring(performance.now()); // finished during warm-up
  const cpu1 = selfCpuMs();
  const result: RunResult = {
    ops: run.ops,
    jobs: run.jobs,
    elapsedMs: Math.max(run.tLast - run.t0, 0.001),
    hist: run.hist.toJSON(),
    errors: run.errors,
    errorSamples: run.errorSamples,
    genCpuMs: cpu1 - run.cpu0,
    notes: run.notes,
  };
  send({ id, ev: "done", result });
  for (const c of clients) {
    c.done = true;
    c.conn.close();
  }
}

/** A run with commands in flight and no reply for this long has failed. */
const STALL_MS = 15000;

const held = new Map<string, { conns: Plain[]; errors: string[] }>();

async function doHold(
  id: number,
  m: { host: string; port: number; conns: number; tag: string; setup: [string, string | null][]; tail?: string },
) {
  const errors: string[] = [];
  const t0 = performance.now();
  const conns = await openMany(m.conns, 128, async (i) => {
    const p = await plainConnect(m.host, m.port);
    const steps = m.setup.map(([c, w]) =>
      [c.replaceAll("{i}", String(i)), w === null ? null : w.replaceAll("{i}", String(i))] as [string, string | null]
    );
    await script(p, steps);
    if (m.tail) p.conn.write(bytes(m.tail + "\r\n"));
    return p;
  });
  const idle = {
    onData: () => void errors.push("unexpected reply on an idle connection"),
    onClose: (e?: Error) => void (e && errors.push(`idle connection closed: ${e.message}`)),
  };
  for (const p of conns) p.conn.setHandlers(idle);
  held.set(m.tag, { conns, errors });
  send({ id, ev: "held", ms: performance.now() - t0, count: conns.length });
}

function doRelease(id: number, tag: string) {
  const h = held.get(tag);
  held.delete(tag);
  let errors: string[] = [];
  if (h) {
    errors = h.errors.slice(0, 5);
    const quiet = { onData: () => {}, onClose: () => {} };
    for (const p of h.conns) {
      p.conn.setHandlers(quiet);
      p.conn.close();
    }
  }
  send({ id, ev: "released", errors, count: h?.errors.length ?? 0 });
}

async function doQuery(id: number, m: { host: string; port: number; cmds: string[] }) {
  const p = await plainConnect(m.host, m.port);
  p.conn.write(bytes(m.cmds.map((c) => c + "\r\n").join("")));
  const replies = await p.replyCount(m.cmds.length, 10000);
  p.conn.setHandlers({ onData: () => {}, onClose: () => {} });
  p.conn.close();
  send({ id, ev: "replies", replies });
}

// ------------------------------------------------------------------ stdin/stdout

// deno-lint-ignore no-explicit-any
type Msg = { op: string; id: number; [k: string]: any };

// deno-lint-ignore no-explicit-any
const proc: any = (globalThis as any).process;
function send(o: unknown) {
  proc.stdout.write(JSON.stringify(o) + "\n");
}

const goWaiters = new Map<number, () => void>();
const goEarly = new Set<number>();
function waitGo(id: number): Promise<void> {
  if (goEarly.delete(id)) return Promise.resolve();
  return new Promise((res) => goWaiters.set(id, res));
}

function handle(m: Msg) {
  const fail = (e: unknown) => send({ id: m.id, ev: "error", message: e instanceof Error ? e.message : String(e) });
  switch (m.op) {
    case "run":
      doRun(m.id, m.spec).catch(fail);
      break;
    case "go": {
      const w = goWaiters.get(m.id);
      if (w) {
        goWaiters.delete(m.id);
        w();
      } else goEarly.add(m.id);
      break;
    }
    case "hold":
      doHold(m.id, m as never).catch(fail);
      break;
    case "release":
      doRelease(m.id, m.tag);
      break;
    case "query":
      doQuery(m.id, m as never).catch(fail);
      break;
    case "exit":
      proc.exit(0);
      break;
    default:
      fail(new Error(`unknown op ${m.op}`));
  }
}

const transport: Transport = (proc.env.BENCH_TRANSPORT as Transport) || defaultTransport();

let inbuf = "";
proc.stdin.on("data", (d: Uint8Array | string) => {
  inbuf += typeof d === "string" ? d : new TextDecoder().decode(d);
  let i;
  while ((i = inbuf.indexOf("\n")) >= 0) {
    const line = inbuf.slice(0, i);
    inbuf = inbuf.slice(i + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
proc.stdin.on("end", () => proc.exit(0));
send({ ev: "hello", transport, runtime: "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node" });
