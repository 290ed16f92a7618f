// Shared by the durability suites (tests/system/durability_*_test.ts): the server
// processes under test (this runtime's, and the other one for cross-runtime recovery),
// process control (kill -9, SIGTERM, wait for output), temp-dir scopes, wire helpers.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, ROOT, RUNTIME } from "./paths.ts";
import { bunServer, denoServer, freePort, type Running, startProcess, type Target } from "./targets.ts";
import { type Wire } from "./wire.ts";

// ---- servers ------------------------------------------------------------------------

export interface Srv {
  name: string;
  target: Target;
  /** The command line startProcess runs (the same as target.start's). */
  argv: string[];
}

export const DENO_SRV: Srv = {
  name: "deno",
  target: denoServer,
  argv: [...DENO_SERVER],
};
export const BUN_SRV: Srv = { name: "bun", target: bunServer, argv: [...BUN_SERVER] };
/** The server on this test's runtime, and the other one (for the cross-runtime case). */
export const HERE = RUNTIME === "bun" ? BUN_SRV : DENO_SRV;
export const OTHER = RUNTIME === "bun" ? DENO_SRV : BUN_SRV;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolve with p, or reject after ms (the timer is always cleared). */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}

/** Temp dirs and servers of one describe block, removed/stopped by cleanup(). */
export class Scope {
  #dirs: string[] = [];
  #servers: Running[] = [];

  dir(): string {
    const d = mkdtempSync(join(tmpdir(), "tubeway-durability-"));
    this.#dirs.push(d);
    return d;
  }

  async start(s: Srv, flags: string[]): Promise<Running> {
    const r = await startProcess(s.argv, flags);
    this.#servers.push(r);
    return r;
  }

  async cleanup(): Promise<void> {
    for (const r of this.#servers) await kill9(r);
    this.#servers = [];
    for (const d of this.#dirs) rmSync(d, { recursive: true, force: true });
    this.#dirs = [];
  }
}

export function exited(r: Running): boolean {
  const c = r.child!;
  return c.exitCode !== null || c.signalCode !== null;
}

/** kill -9 and wait for the exit. */
export async function kill9(r: Running): Promise<void> {
  const c = r.child!;
  if (exited(r)) return;
  const gone = new Promise<void>((res) => c.once("exit", () => res()));
  c.kill("SIGKILL");
  await within(gone, 10000, "exit after SIGKILL");
}

/**
 * SIGTERM and wait for the exit (SIGKILL after 10 s). Sent with process.kill, not
 * child.kill: under Deno, a ChildProcess killed through child.kill() reports the
 * signal sent as its exit status whatever the process really did, so a clean exit 0
 * would read as "killed by SIGTERM" there.
 */
export async function sigterm(r: Running): Promise<void> {
  const c = r.child!;
  if (exited(r)) return;
  const gone = new Promise<void>((res) => c.once("exit", () => res()));
  process.kill(c.pid!, "SIGTERM");
  try {
    await within(gone, 10000, "exit after SIGTERM");
  } catch (e) {
    await kill9(r);
    throw e;
  }
}

/** Run the server until it exits by itself (for the start-up failures); bounded. */
export async function runToExit(
  s: Srv,
  flags: string[],
  timeoutMs = 20000,
): Promise<{ code: number | null; signal: string | null; output: string }> {
  const port = await freePort();
  const [cmd, ...args] = s.argv;
  const child = spawn(cmd!, [...args, "-l", "127.0.0.1", "-p", String(port), ...flags], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const done = new Promise<{ code: number | null; signal: string | null }>((res) =>
    child.once("close", (code, signal) => res({ code, signal }))
  );
  try {
    const r = await within(done, timeoutMs, `${s.name} ${flags.join(" ")} to exit`);
    return { ...r, output };
  } catch (e) {
    child.kill("SIGKILL");
    await within(done, 5000, "exit after SIGKILL");
    throw new Error(`${(e as Error).message}; output so far:\n${output}`);
  }
}

/** Wait (bounded) until the server's output contains s. */
export async function outputHas(r: Running, s: string, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 300 && !r.output().includes(s); i++) {
    if (Date.now() > deadline) break;
    await sleep(10);
  }
  return r.output().includes(s);
}

// ---- wire helpers ----------------------------------------------------------------------

/** A YAML reply as a map (stats, stats-job, stats-tube). */
export class Yaml {
  readonly map = new Map<string, string>();
  constructor(readonly reply: string) {
    const m = /^OK (\d+)\r\n---\n([\s\S]*)\r\n$/.exec(reply);
    assert.ok(m, `expected a YAML reply, got ${JSON.stringify(reply)}`);
    for (const l of m[2]!.split("\n")) {
      const i = l.indexOf(": ");
      if (i > 0) this.map.set(l.slice(0, i), l.slice(i + 2));
    }
  }
  str(k: string): string {
    const v = this.map.get(k);
    assert.ok(v !== undefined, `missing key ${k} in ${JSON.stringify(this.reply)}`);
    return v.startsWith('"') ? v.slice(1, -1) : v;
  }
  num(k: string): number {
    const v = this.str(k);
    assert.match(v, /^-?\d+$/, `${k} should be an integer, got ${JSON.stringify(v)}`);
    return Number(v);
  }
}

export async function expectReply(w: Wire, line: string, want: string): Promise<void> {
  assert.equal(await w.cmd(line), want + "\r\n", line);
}

export async function statsOf(w: Wire, line: string): Promise<Yaml> {
  return new Yaml(await w.cmd(line));
}

/** stats-job, or undefined for NOT_FOUND. */
export async function jobStats(w: Wire, id: number): Promise<Yaml | undefined> {
  const r = await w.cmd(`stats-job ${id}`);
  return r === "NOT_FOUND\r\n" ? undefined : new Yaml(r);
}

export function found(id: number, body: string): string {
  return `FOUND ${id} ${Buffer.byteLength(body, "latin1")}\r\n${body}\r\n`;
}

export function listNames(reply: string): string[] {
  const m = /^OK \d+\r\n---\n([\s\S]*)\r\n$/.exec(reply);
  assert.ok(m, `expected a list, got ${JSON.stringify(reply)}`);
  return m[1]!.split("\n").filter((l) => l.startsWith("- ")).map((l) => l.slice(2));
}
