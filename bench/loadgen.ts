// The load generator: one process (pinned by bench/main.ts to the generator CPU(s))
// that drives many beanstalkd connections from a single event loop. bench/main.ts
// talks to it with JSON lines on stdin/stdout (see Msg below); it is not meant to be
// run by hand. Several of them may share the connections of one workload. The
// measuring loop is in loadgen_run.ts, the workloads in loadgen_drivers.ts.
import { type Conn, connect, defaultTransport, type Transport } from "./conn.ts";
import { bytes, joinRest, latin1, parse } from "./proto.ts";
import { Client, Run, type RunResult, type RunSpec, selfCpuMs } from "./loadgen_run.ts";
import { DRIVERS } from "./loadgen_drivers.ts";

export type { RunResult, RunSpec } from "./loadgen_run.ts";

// ------------------------------------------------------------------ setup helpers

/** A connection used for request/reply outside the measured window. */
class Plain {
  rest: Uint8Array | null = null;
  replies: string[] = [];
  waiter: (() => void) | null = null;
  closed: Error | null = null;
  conn!: Conn;
  onData(chunk: Uint8Array) {
    const buf = joinRest(this.rest, chunk);
    this.rest = null;
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
  if (spec.alsoWatch) setup.push([`watch ${spec.alsoWatch}`, "WATCHING 2"]);
  // connect and set up every client
  const clients = await openMany(spec.clients, 64, async (i) => {
    const ports = spec.ports ? spec.ports.split(",").map(Number) : [spec.port];
    const p = await plainConnect(spec.host, ports[i % ports.length]!);
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
