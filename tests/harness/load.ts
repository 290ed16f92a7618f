// Load scenarios for memory and latency tests (issue 7): clients that pipeline and
// never read, an endless line, many idle connections. Each is bounded in count and
// time, and measures the server process from outside (/proc/PID/status), with a cap
// that kills the server if a scenario goes wrong.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "node:net";
import { BUN, DENO, ROOT, RUNTIME } from "./paths.ts";
import { dial, openSocket, type Wire } from "./wire.ts";

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

/**
 * A client doing round trips (`list-tube-used`) every intervalMs while a scenario
 * runs; `worst` is the slowest answer (ms), and a round trip still waiting counts
 * for as long as it has waited.
 */
export class Prober {
  readonly #w: Wire;
  #running = true;
  #since = 0;
  #loop: Promise<void>;
  worst = 0;
  count = 0;
  failure: string | undefined;

  private constructor(w: Wire, intervalMs: number, timeoutMs: number) {
    this.#w = w;
    this.#loop = this.#run(intervalMs, timeoutMs);
  }

  static async start(addr: Addr, intervalMs = 20, timeoutMs = 10_000): Promise<Prober> {
    return new Prober(await dial(addr), intervalMs, timeoutMs);
  }

  async #run(intervalMs: number, timeoutMs: number): Promise<void> {
    while (this.#running) {
      this.#since = Date.now();
      try {
        const r = await this.#w.cmd("list-tube-used", timeoutMs);
        if (r !== "USING default\r\n") this.failure = `got ${JSON.stringify(r)}`;
      } catch (e) {
        this.failure = (e as Error).message;
        this.#since = 0;
        return;
      }
      this.worst = Math.max(this.worst, Date.now() - this.#since);
      this.#since = 0;
      this.count++;
      await sleep(intervalMs);
    }
  }

  /** Stop and return the worst latency seen (including a round trip still waiting). */
  async stop(): Promise<number> {
    this.#running = false;
    if (this.#since) this.worst = Math.max(this.worst, Date.now() - this.#since);
    await Promise.race([this.#loop, sleep(100)]);
    this.#w.close();
    return this.worst;
  }
}

/** Put one job of `bytes` bytes into the default tube; returns its id. */
export async function putJob(addr: Addr, bytes: number): Promise<number> {
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
  const script = join(ROOT, "tests/harness/endless_line_client.ts");
  const argv = RUNTIME === "bun" ? [BUN, "run", script] : [DENO, "run", "--allow-net", script];
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
