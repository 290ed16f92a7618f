// Load scenarios for memory and latency tests (issue 7): clients that pipeline and
// never read, an endless line, many idle connections. Each is bounded in count and
// time, and measures the server process from outside (/proc/PID/status), with a cap
// that kills the server if a scenario goes wrong.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "node:net";
import { BUN, DENO, ROOT, RUNTIME } from "./paths.ts";
import { dial, openSocket } from "./wire.ts";

type Addr = { host: string; port: number };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resident set size of a process, in bytes (0 once it is gone). */
export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples a process's RSS every intervalMs; kills it (SIGKILL) past capBytes. */
export class RssWatch {
  readonly #pid: number;
  readonly #cap: number;
  #timer: ReturnType<typeof setInterval>;
  peak = 0;
  capped = false;

  constructor(pid: number, capBytes: number, intervalMs = 50) {
    this.#pid = pid;
    this.#cap = capBytes;
    this.#timer = setInterval(() => this.sample(), intervalMs);
  }

  sample(): number {
    const rss = rssBytes(this.#pid);
    this.peak = Math.max(this.peak, rss);
    if (rss > this.#cap && !this.capped) {
      this.capped = true;
      try {
        process.kill(this.#pid, "SIGKILL");
      } catch { /* gone already */ }
    }
    return rss;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** Wait until a process's RSS stops falling (GC, freed buffers), bounded; returns the last sample. */
export async function settled(pid: number, ms = 3000): Promise<number> {
  let last = rssBytes(pid);
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await sleep(250);
    const now = rssBytes(pid);
    if (now >= last - 256 * 1024) return now;
    last = now;
  }
  return last;
}

/**
 * A load generator in a process of its own: it prints "ready" once started, and one
 * JSON line when its stdin closes, then exits.
 */
class LoadProcess {
  readonly #child: ChildProcess;
  readonly #out: Promise<string>;

  private constructor(child: ChildProcess, out: Promise<string>) {
    this.#child = child;
    this.#out = out;
  }

  /** Run argv and wait (up to startMs) for its "ready". */
  static async start(argv: string[], what: string, startMs = 20_000): Promise<LoadProcess> {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    let ready: () => void = () => {};
    const readyP = new Promise<void>((r) => (ready = r));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.startsWith("ready\n")) ready();
    });
    const exited = new Promise<string>((resolve) => child.once("exit", () => resolve(out)));
    const started = await Promise.race([
      readyP.then(() => true),
      exited.then(() => false),
      sleep(startMs).then(() => false),
    ]);
    if (!started) {
      child.kill("SIGKILL");
      throw new Error(`${what} did not start: ${JSON.stringify(out)}`);
    }
    return new LoadProcess(child, exited);
  }

  /** Close its stdin and wait for it to exit (killed after 15 s); its JSON line is parsed by the caller. */
  async stop(what: string): Promise<string> {
    this.#child.stdin!.end();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 15_000);
    const out = await this.#out;
    clearTimeout(timer);
    const line = out.split("\n").find((l) => l.startsWith("{"));
    if (!line) throw new Error(`${what} reported nothing: ${JSON.stringify(out)}`);
    return line;
  }
}

/** argv running one of tests/harness/ on this runtime, with network access. */
function onThisRuntime(script: string): string[] {
  const path = join(ROOT, "tests/harness", script);
  return RUNTIME === "bun" ? [BUN, "run", path] : [DENO, "run", "--allow-net", path];
}

/**
 * A client doing round trips (`list-tube-used`) every intervalMs while a scenario
 * runs, from a process of its own (tests/harness/prober_client.ts); `worst` is the
 * slowest answer (ms), and a round trip still waiting counts for as long as it has
 * waited; `p99` the 99th percentile of the answered ones.
 */
export class Prober {
  readonly #process: LoadProcess;
  worst = 0;
  p99 = 0;
  count = 0;
  failure: string | undefined;

  private constructor(p: LoadProcess) {
    this.#process = p;
  }

  static async start(addr: Addr, intervalMs = 20, timeoutMs = 10_000): Promise<Prober> {
    const argv = [
      ...onThisRuntime("prober_client.ts"),
      addr.host,
      String(addr.port),
      String(intervalMs),
      String(timeoutMs),
    ];
    return new Prober(await LoadProcess.start(argv, "the prober"));
  }

  /** Stop and return the worst latency seen (including a round trip still waiting). */
  async stop(): Promise<number> {
    let line: string;
    try {
      line = await this.#process.stop("the prober");
    } catch (e) {
      this.failure = (e as Error).message;
      return this.worst;
    }
    const r = JSON.parse(line) as { worst: number; p99: number; count: number; failure?: string };
    this.worst = r.worst;
    this.p99 = r.p99;
    this.count = r.count;
    this.failure = r.failure;
    return this.worst;
  }
}

/**
 * `clients` connections that each keep writing `peek <id>` and never read, from a
 * process of its own (tests/harness/flood_unread_client.ts, on Deno whatever runs the
 * test), until stop().
 */
export class UnreadFlood {
  readonly #process: LoadProcess;

  private constructor(p: LoadProcess) {
    this.#process = p;
  }

  /** `to`: TCP, a UNIX socket, or TLS (the server verified against the CA file `ca`). */
  static async start(
    to: Addr | { path: string } | Addr & { ca: string },
    id: number,
    clients: number,
  ): Promise<UnreadFlood> {
    const script = join(ROOT, "tests/harness/flood_unread_client.ts");
    const argv = [
      DENO,
      "run",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      script,
      JSON.stringify(to),
      String(id),
      String(clients),
    ];
    return new UnreadFlood(await LoadProcess.start(argv, "the flood client", 60_000));
  }

  /** Close every flooding connection: what they sent, and how many the server had closed. */
  async stop(): Promise<{ sent: number; closedByServer: number }> {
    return JSON.parse(await this.#process.stop("the flood client"));
  }
}

/** Put one job of `bytes` bytes into the default tube; returns its id. */
export async function putJob(addr: Addr | { path: string }, bytes: number): Promise<number> {
  const w = await dial(addr);
  try {
    const r = await w.put("p".repeat(bytes));
    const m = /^INSERTED (\d+)\r\n$/.exec(r);
    if (!m) throw new Error(`put gave ${JSON.stringify(r)}`);
    return Number(m[1]);
  } finally {
    w.close();
  }
}

/**
 * `clients` connections each send `peeks` pipelined `peek <id>` commands in one
 * write and never read. Returns the sockets (paused); destroy them to leave.
 */
export async function peekFlood(addr: Addr, id: number, clients: number, peeks: number): Promise<Socket[]> {
  const socks: Socket[] = [];
  const burst = Buffer.from(`peek ${id}\r\n`.repeat(peeks), "latin1");
  for (let i = 0; i < clients; i++) {
    const s = await openSocket(addr);
    s.on("error", () => {});
    s.pause();
    s.write(burst);
    socks.push(s);
  }
  return socks;
}

/**
 * One client sends a line without CRLF at full speed (as fast as the server takes
 * it) for durationMs, from a process of its own (endless_line_client.ts) on this
 * runtime, so that it does not hold up the event loop of the prober timing the server.
 * Returns the bytes sent.
 */
export async function endlessLine(addr: Addr, durationMs: number): Promise<number> {
  const argv = onThisRuntime("endless_line_client.ts");
  const child = spawn(argv[0]!, [...argv.slice(1), addr.host, String(addr.port), String(durationMs)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  if (code !== 0) throw new Error(`endless-line client exited with ${code}`);
  return Number(out.trim());
}

/**
 * Open n connections (in waves, so the listen backlog keeps up), and have each
 * answered once. Returns the open sockets: the caller closes them.
 */
export async function manyConnections(addr: Addr, n: number, wave = 250): Promise<Socket[]> {
  const socks: Socket[] = [];
  for (let i = 0; i < n; i += wave) {
    const group = await Promise.all(
      Array.from({ length: Math.min(wave, n - i) }, async () => {
        const s = await openSocket(addr, 20_000);
        s.on("error", () => {});
        return s;
      }),
    );
    await Promise.all(group.map((s) => answerOnce(s)));
    socks.push(...group);
  }
  return socks;
}

/** Send one command on a raw socket and wait for its reply line. */
function answerOnce(s: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = "";
    const t = setTimeout(() => reject(new Error(`no answer within 20 s (got ${JSON.stringify(got)})`)), 20_000);
    const onData = (d: Buffer) => {
      got += d.toString("latin1");
      if (got.includes("\r\n")) {
        clearTimeout(t);
        s.off("data", onData);
        resolve();
      }
    };
    s.on("data", onData);
    s.write("list-tube-used\r\n");
  });
}

/** Destroy sockets and give the server a moment to see them go. */
export async function leave(socks: Socket[], settleMs = 500): Promise<void> {
  for (const s of socks) s.destroy();
  await sleep(settleMs);
}

/**
 * A client that pipelines `count` `peek <id>` in one write and reads its replies
 * slowly but steadily: `burst` bytes, then a pause of `pauseMs`, until all have come
 * (each `replyBytes` long) or the server closed the connection. Returns the bytes read
 * and whether the server closed it first. Run beside a flood: a client that reads must
 * never be dropped.
 */
export async function slowPipeline(
  addr: Addr,
  id: number,
  count: number,
  replyBytes: number,
  burst: number,
  pauseMs: number,
  timeoutMs = 60_000,
): Promise<{ got: number; expected: number; closedEarly: boolean }> {
  const s = await openSocket(addr);
  const expected = count * replyBytes;
  let got = 0;
  let sinceFree = 0;
  let closedEarly = false;
  s.on("error", () => {});
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => (s.destroy(), resolve()), timeoutMs);
    s.on("data", (d: Buffer) => {
      got += d.length;
      sinceFree += d.length;
      if (got >= expected) {
        clearTimeout(timer);
        s.destroy();
        resolve();
      } else if (sinceFree >= burst) {
        sinceFree = 0;
        s.pause();
        setTimeout(() => s.resume(), pauseMs);
      }
    });
    s.once("close", () => {
      closedEarly = got < expected;
      clearTimeout(timer);
      resolve();
    });
    s.write(Buffer.from(`peek ${id}\r\n`.repeat(count), "latin1"));
  });
  return { got, expected, closedEarly };
}
