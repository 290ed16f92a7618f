// A protocol fuzzer for black-box tests: many short-lived connections send mutated
// commands (wrong lengths, NULs, huge numbers, over-long lines, bodies of the wrong
// size) in random chunks, and end in every way a client can: quit, half-close, reset
// (RST), a disconnect in the middle of a body, or never reading at all.
//
// After each batch, a control client (connected before the first batch, holding a
// reserved job in a tube of its own) must still be answered, its job intact, and a
// fresh client must be answered within the hang limit. Everything is seeded, so a
// failure names the seed and batch that reproduce it.
import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { dial, openSocket, type Wire } from "./wire.ts";

/** A small seeded PRNG (xorshift32): the same seed gives the same inputs. */
export class Rng {
  #x: number;
  constructor(seed: number) {
    this.#x = (seed >>> 0) || 0x9e3779b9;
  }
  next(): number {
    let x = this.#x;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#x = x >>> 0;
    return this.#x / 2 ** 32;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const NUMBERS = [
  "0",
  "1",
  "2",
  "7",
  "-1",
  "4294967295",
  "4294967296",
  "18446744073709551615",
  "18446744073709551616",
  "99999999999999999999999999",
  "+5",
  "0x10",
  "1e3",
  "",
  "007",
];

const VERBS = (
  "put peek peek-ready peek-delayed peek-buried reserve-with-timeout reserve-job delete release bury kick kick-job " +
  "touch stats-job stats-tube stats use watch ignore list-tubes-watched list-tube-used list-tubes pause-tube"
).split(" ");

/** One fuzzed input, as bytes: a command line and, for put, what follows it. */
export function fuzzInput(rng: Rng, maxJobSize: number): Uint8Array {
  const num = () => (rng.chance(0.6) ? String(rng.int(40)) : rng.pick(NUMBERS));
  const tube = () =>
    rng.chance(0.8)
      ? rng.pick(["default", "fz", "fz.a", "fz-b", "fz_c"])
      : rng.pick(["", "-bad", "a b", "x".repeat(200), "x".repeat(201), "t$(x)", "é"]);
  const verb = rng.pick(VERBS);
  let line: string;
  let body: Uint8Array | undefined;
  switch (verb) {
    case "put": {
      const n = rng.chance(0.1) ? rng.pick([maxJobSize, maxJobSize + 1, 0]) : rng.int(300);
      line = `put ${num()} ${rng.chance(0.9) ? "0" : num()} ${num()} ${rng.chance(0.85) ? n : num()}`;
      // The body: right, a few bytes short or long, without its CRLF, or with NULs.
      const len = rng.chance(0.7) ? n : Math.max(0, n + rng.int(9) - 4);
      const b = new Uint8Array(len + 2);
      for (let i = 0; i < len; i++) b[i] = rng.chance(0.05) ? 0 : 97 + rng.int(26);
      b[len] = 13;
      b[len + 1] = 10;
      if (rng.chance(0.05)) b[len] = 0;
      body = rng.chance(0.03) ? b.subarray(0, rng.int(b.length)) : b;
      break;
    }
    case "release":
      line = `${verb} ${num()} ${num()} ${num()}`;
      break;
    case "bury":
    case "pause-tube":
      line = verb === "bury" ? `bury ${num()} ${num()}` : `pause-tube ${tube()} ${num()}`;
      break;
    case "use":
    case "watch":
    case "ignore":
    case "stats-tube":
      line = `${verb} ${tube()}`;
      break;
    case "reserve-with-timeout":
      line = `${verb} ${rng.pick(["0", "0", "0", "1", "-1", "x", "18446744073709551616"])}`;
      break;
    case "stats":
    case "peek-ready":
    case "peek-delayed":
    case "peek-buried":
    case "list-tubes-watched":
    case "list-tube-used":
    case "list-tubes":
      line = verb;
      break;
    default:
      line = `${verb} ${num()}`;
  }
  line = mutate(rng, line);
  const head = Buffer.from(line + (rng.chance(0.97) ? "\r\n" : rng.pick(["\n", "\r", "\r\r\n", ""])), "latin1");
  if (!body) return head;
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** Damage a command line a little, sometimes. */
function mutate(rng: Rng, line: string): string {
  if (rng.chance(0.6)) return line;
  const at = rng.int(line.length + 1);
  switch (rng.int(8)) {
    case 0:
      return line.slice(0, at) + "\0" + line.slice(at);
    case 1:
      return line.slice(0, at) + line.slice(at + 1);
    case 2:
      return line.slice(0, at) + " " + line.slice(at);
    case 3:
      return line.slice(0, at) + String.fromCharCode(rng.int(256)) + line.slice(at);
    case 4:
      return line.toUpperCase();
    case 5:
      return line + " " + "9".repeat(rng.int(30));
    case 6:
      return line.slice(0, at); // truncated
    default:
      return "z".repeat(200 + rng.int(400)); // over-long line (224 is the limit)
  }
}

/** How a fuzzing connection ends. */
const ENDINGS = ["quit", "half-close", "reset", "reset-at-once", "mid-body", "drop", "never-read"] as const;

export interface FuzzOptions {
  seed: number;
  /** Total inputs to send (commands, each with its body when it is a put). */
  inputs: number;
  /** Inputs per connection (at most). */
  perConnection?: number;
  /** Connections open at once. */
  parallel?: number;
  /** Server's -z. */
  maxJobSize?: number;
  /** A fresh client must be answered within this long after each batch. */
  hangMs?: number;
  /** Called after each batch (e.g. to check that the server process is alive). */
  afterBatch?: (batch: number) => void;
}

export interface FuzzResult {
  inputs: number;
  connections: number;
  batches: number;
  endings: Record<string, number>;
}

/**
 * Drive the server at addr until opts.inputs have been sent. Throws (naming seed and
 * batch) when the server stops answering, hangs, or the control job changes.
 */
export async function fuzz(addr: { host: string; port: number }, opts: FuzzOptions): Promise<FuzzResult> {
  const rng = new Rng(opts.seed);
  const per = opts.perConnection ?? 40;
  const parallel = opts.parallel ?? 8;
  const maxJobSize = opts.maxJobSize ?? 65535;
  const hangMs = opts.hangMs ?? 5000;
  const control = await Control.open(addr);
  const result: FuzzResult = { inputs: 0, connections: 0, batches: 0, endings: {} };
  try {
    while (result.inputs < opts.inputs) {
      const batch = result.batches + 1;
      const runs: Promise<void>[] = [];
      for (let i = 0; i < parallel && result.inputs < opts.inputs; i++) {
        const n = Math.min(1 + rng.int(per), opts.inputs - result.inputs);
        const inputs = Array.from({ length: n }, () => fuzzInput(rng, maxJobSize));
        const ending = rng.pick(ENDINGS);
        result.endings[ending] = (result.endings[ending] ?? 0) + 1;
        result.inputs += n;
        result.connections++;
        runs.push(oneConnection(addr, new Rng(rng.int(2 ** 32)), inputs, ending));
      }
      await Promise.all(runs);
      result.batches = batch;
      const where = `seed ${opts.seed}, batch ${batch}`;
      opts.afterBatch?.(batch);
      await control.check(where);
      await answered(addr, hangMs, where);
    }
  } finally {
    control.close();
  }
  return result;
}

/** A fresh client gets an answer within ms. */
async function answered(addr: { host: string; port: number }, ms: number, where: string): Promise<void> {
  let w: Wire | undefined;
  try {
    w = await dial(addr, ms);
    const r = await w.cmd("list-tube-used", ms);
    if (r !== "USING default\r\n") throw new Error(`fresh client got ${JSON.stringify(r)}`);
  } catch (e) {
    throw new Error(`${where}: a fresh client was not answered within ${ms} ms: ${(e as Error).message}`);
  } finally {
    w?.close();
  }
}

/** One fuzzing connection: send the inputs in random chunks, then end as told. Never throws. */
async function oneConnection(
  addr: { host: string; port: number },
  rng: Rng,
  inputs: Uint8Array[],
  ending: typeof ENDINGS[number],
): Promise<void> {
  let s: Socket;
  try {
    s = await openSocket(addr, 5000);
  } catch {
    return; // the batch's checks tell whether the server is still there
  }
  s.on("error", () => {});
  if (ending === "reset-at-once") {
    // RST right after the handshake, usually before the server has accepted it.
    s.resetAndDestroy();
    return;
  }
  if (ending === "never-read") s.pause();
  else s.on("data", () => {});
  const closed = new Promise<void>((r) => s.once("close", () => r()));
  const all = Buffer.concat(inputs);
  let end = all.length;
  if (ending === "mid-body") {
    // Stop inside a body: a put line whose body is cut short, then the disconnect.
    const cut = Buffer.from(`put 0 0 10 ${50 + rng.int(200)}\r\npartial`, "latin1");
    s.write(Buffer.concat([all, cut]));
    end = 0;
  }
  for (let at = 0; at < end;) {
    const n = rng.chance(0.5) ? end - at : 1 + rng.int(Math.min(end - at, 64));
    s.write(all.subarray(at, at + n));
    at += n;
    if (rng.chance(0.2)) await new Promise((r) => setTimeout(r, rng.int(3)));
  }
  switch (ending) {
    case "quit":
      s.write("quit\r\n");
      break;
    case "half-close":
      s.end();
      break;
    case "reset":
    case "mid-body":
      await new Promise((r) => setTimeout(r, rng.int(5)));
      s.resetAndDestroy();
      break;
    default:
      await new Promise((r) => setTimeout(r, rng.int(5)));
      s.destroy();
  }
  // A connection the server should close by itself (quit, half-close) gets a moment
  // to do so; then it is dropped either way (its quit may have become body bytes, or
  // a reserve may legitimately wait).
  const t = setTimeout(() => s.destroy(), 300);
  await closed;
  clearTimeout(t);
}

/** The control client: a reserved job in a tube of its own, checked after every batch. */
class Control {
  readonly #w: Wire;
  readonly #id: number;
  static readonly BODY = "control job \u0000 with a NUL and\r\na CRLF inside";

  private constructor(w: Wire, id: number) {
    this.#w = w;
    this.#id = id;
  }

  static async open(addr: { host: string; port: number }): Promise<Control> {
    const w = await dial(addr);
    const tube = `fuzz-control-${process.pid}`;
    await w.cmd(`use ${tube}`);
    await w.cmd(`watch ${tube}`);
    await w.cmd("ignore default");
    const m = /^INSERTED (\d+)\r\n$/.exec(await w.put(Control.BODY, 7, 0, 86400));
    if (!m) throw new Error("control put failed");
    const id = Number(m[1]);
    const r = await w.cmd("reserve-with-timeout 5");
    if (!r.startsWith(`RESERVED ${id} `)) throw new Error(`control reserve got ${JSON.stringify(r)}`);
    return new Control(w, id);
  }

  /** The control connection answers, and its job is still reserved by it, unchanged. */
  async check(where: string): Promise<void> {
    const w = this.#w;
    const expect = `FOUND ${this.#id} ${Control.BODY.length}\r\n${Control.BODY}\r\n`;
    const got = await w.cmd(`peek ${this.#id}`).catch((e) => `(error: ${e.message})`);
    if (got !== expect) throw new Error(`${where}: control peek got ${JSON.stringify(got)}`);
    const stats = await w.cmd(`stats-job ${this.#id}`).catch((e) => `(error: ${e.message})`);
    if (!/\nstate: reserved\n/.test(stats) || !/\npri: 7\n/.test(stats)) {
      throw new Error(`${where}: control job changed: ${JSON.stringify(stats)}`);
    }
    const touch = await w.cmd(`touch ${this.#id}`).catch((e) => `(error: ${e.message})`);
    if (touch !== "TOUCHED\r\n") throw new Error(`${where}: control touch got ${JSON.stringify(touch)}`);
  }

  close(): void {
    this.#w.close();
  }
}
