// Servers the wire-level suites run against. Each target starts a fresh server on a
// port the test picks (127.0.0.1 only) and stops it afterwards.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { BUN, BUN_SERVER, DENO, DENO_SERVER, ROOT } from "./paths.ts";
import { type Address, dial } from "./wire.ts";
import { DENO_V8_FLAGS } from "../../adapters/deno_flags.ts";
import type { Lateness } from "./async_engine.ts";
import { freePort, which } from "../../scripts/machine.ts";
import { PG_BIN } from "./postgres.ts";

export { freePort };

/** A running server under test. */
export interface Running {
  /** Where to dial it. */
  addr: Address & { host: string; port: number };
  /** The child process, when the server is one (absent in-process). */
  child?: ChildProcess;
  /** Enter drain mode (SIGUSR1 for a process). */
  drain?: () => void;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** Stop it (SIGTERM, then SIGKILL after a grace period) and wait for exit. */
  stop(): Promise<void>;
  /** When the target is several servers behind `addr` (harness/pg_nodes.ts): each of them. */
  nodes?: Running[];
}

/** A kind of server to test. */
export interface Target {
  name: string;
  /** Why it cannot run here, or undefined when it can. */
  unavailable(): string | undefined;
  /** Start one, passing extra beanstalkd-style flags (never -l or -p). */
  start(flags?: string[]): Promise<Running>;
}

/** Wait until something accepts connections at addr, or the child exits. */
async function waitListening(addr: Address, child: ChildProcess, out: () => string, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let exited: number | null = null;
  child.once("exit", (code) => (exited = code ?? -1));
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`server exited with ${exited} before listening:\n${out()}`);
    try {
      const w = await dial(addr, 1000);
      // The server closes the probe itself (quit), so that it is gone from the server's
      // counts before the caller's first connection: closed from here, a probe the
      // server had not seen go yet was still counted in stats-tube default's
      // current-using (a fresh beanstalkd said 2 in CI once, on Bun).
      w.send("quit\r\n");
      await w.closed(2000).catch(() => {});
      w.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  child.kill("SIGKILL");
  throw new Error(`server did not listen within ${timeoutMs} ms:\n${out()}`);
}

/** Start a server process with `-l 127.0.0.1 -p <free port>` and wait for it. */
export async function startProcess(
  argv: string[],
  flags: string[] = [],
  env: Record<string, string> = {},
): Promise<Running> {
  const port = await freePort();
  const [cmd, ...args] = argv;
  const child = spawn(cmd!, [...args, "-l", "127.0.0.1", "-p", String(port), ...flags], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const addr = { host: "127.0.0.1", port };
  await waitListening(addr, child, () => log);
  return {
    addr,
    child,
    drain: () => child.kill("SIGUSR1"),
    output: () => log,
    stop: () => stopChild(child),
  };
}

/** SIGTERM, then SIGKILL after 3 s; resolves when the process has exited. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill("SIGKILL"), 3000);
    child.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    child.kill(signal);
  });
}

export const BEANSTALKD = which("/usr/bin/beanstalkd") ?? which("beanstalkd");

/** The real beanstalkd 1.12, when installed (apt-get install -y beanstalkd). */
export const beanstalkd: Target = {
  name: "beanstalkd",
  unavailable: () => (BEANSTALKD ? undefined : "beanstalkd is not installed (apt-get install -y beanstalkd)"),
  start: (flags) => startProcess([BEANSTALKD!], flags),
};

/** tubeway under `deno run server.ts`. */
export const denoServer: Target = {
  name: "deno run server.ts",
  unavailable: () => (existsSync(DENO) || which("deno") ? undefined : "deno is not installed (npm install)"),
  start: (flags) => startProcess([...DENO_SERVER], flags),
};

/** tubeway under `bun run server.ts`. */
export const bunServer: Target = {
  name: "bun run server.ts",
  unavailable: () => (existsSync(BUN) || which("bun") ? undefined : "bun is not installed (npm install)"),
  start: (flags) => startProcess([...BUN_SERVER], flags),
};

/**
 * tubeway in this test process, on this runtime's listener (Deno.listen or Bun.listen);
 * with `late`, on the in-memory engine wrapped so that its answers come later
 * (harness/async_engine.ts): the seam's proof.
 */
function inProcessTarget(name: string, late?: Lateness): Target {
  return {
    name,
    unavailable: () => undefined,
    async start(flags = []) {
      const { hostInfo, memoryEngine, runtimeTurns, Service, listen, parseConfig } = await import("../../mod.ts");
      const parsed = parseConfig(flags);
      if (parsed.kind !== "run") throw new Error(`bad flags for in-process server: ${flags.join(" ")}`);
      const logs: string[] = [];
      const memory = memoryEngine({ maxJobSize: parsed.config.maxJobSize });
      const engine = late ? new (await import("./async_engine.ts")).LateEngine(memory, late) : memory;
      const svc = new Service(engine, {
        host: hostInfo(),
        turns: runtimeTurns(),
        log: (l) => logs.push(l),
        error: (l) => logs.push(l),
      });
      const l = await listen(svc, { host: "127.0.0.1", port: 0 });
      const a = l.address as { host: string; port: number };
      return {
        addr: { host: "127.0.0.1", port: a.port },
        drain: () => svc.drain(),
        output: () => logs.join("\n"),
        stop: async () => {
          l.close();
          svc.close();
          await new Promise((r) => setTimeout(r, 10));
        },
      };
    },
  };
}

/** tubeway in this test process, on this runtime's listener (Deno.listen or Bun.listen). */
export const inProcess: Target = inProcessTarget("in-process");

/** In process, every engine answer an already-resolved promise. */
export const inProcessResolved: Target = inProcessTarget("in-process, engine answers by resolved promise", "resolved");

/** In process, every engine answer 0-2 ms late, at random. */
export const inProcessJitter: Target = inProcessTarget("in-process, engine answers 0-2 ms late", "jitter");

let built: Promise<string> | undefined;

/** Build the single-file executable once per test process (bun build --compile works offline). */
export function buildBinary(): Promise<string> {
  built ??= (async () => {
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const out = join(mkdtempSync(join(tmpdir(), "tubeway-bin-")), "tubeway");
    await new Promise<void>((resolve, reject) => {
      const p = spawn(BUN, ["build", "--compile", "--outfile", out, join(ROOT, "server.ts")], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let log = "";
      p.stdout!.on("data", (d: Buffer) => (log += d));
      p.stderr!.on("data", (d: Buffer) => (log += d));
      p.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`bun build --compile failed:\n${log}`))));
    });
    return out;
  })();
  return built;
}

/** The compiled executable (bun build --compile), run as its own process. */
export const binary: Target = {
  name: "compiled binary",
  unavailable: () => (existsSync(BUN) || which("bun") ? undefined : "bun is not installed (npm install)"),
  start: async (flags) => startProcess([await buildBinary()], flags),
};

/**
 * The executable from `deno compile`, when a Deno runtime for compiling is present
 * (DENORT_BIN): deno compile downloads that runtime otherwise, which this machine cannot.
 */
export const denoBinary: Target = {
  name: "deno compile binary",
  unavailable:
    () => (process.env.DENORT_BIN && existsSync(process.env.DENORT_BIN) ? undefined : "DENORT_BIN is not set"),
  async start(flags) {
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const out = join(mkdtempSync(join(tmpdir(), "tubeway-denobin-")), "tubeway");
    await new Promise<void>((resolve, reject) => {
      const p = spawn(DENO, [
        "compile",
        `--v8-flags=${DENO_V8_FLAGS}`,
        "--allow-all",
        "--output",
        out,
        join(ROOT, "server.ts"),
      ], {
        cwd: ROOT,
        stdio: "ignore",
      });
      p.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`deno compile failed (${code})`))));
    });
    return startProcess([out], flags);
  },
};

/** The targets the wire suite runs against (the deno-compiled binary where DENORT_BIN allows). */
export const tubewayTargets: Target[] = [
  inProcess,
  inProcessResolved,
  inProcessJitter,
  denoServer,
  bunServer,
  binary,
  ...(denoBinary.unavailable() ? [] : [denoBinary]),
];

/**
 * tubeway over PostgreSQL (--pg, one node): `argv` runs server.ts; the cluster is this
 * test process's throwaway one (harness/postgres.ts: running while a server uses it),
 * each start a schema of its own.
 */
function pgServer(
  name: string,
  argv: () => readonly string[] | Promise<readonly string[]>,
  runtime: () => string | undefined,
): Target {
  return {
    name,
    unavailable: () => runtime() ?? pgMissing(),
    async start(flags = []) {
      const { acquirePostgres, uniqueSchema } = await import("./postgres.ts");
      const { pg, release } = await acquirePostgres();
      let r: Running;
      try {
        r = await startProcess([...(await argv())], ["--pg", pg.url, "--pg-schema", uniqueSchema("wire"), ...flags]);
      } catch (e) {
        release();
        throw e;
      }
      return { ...r, stop: () => r.stop().finally(release) };
    },
  };
}

function pgMissing(): string | undefined {
  return PG_BIN ? undefined : "PostgreSQL is not installed (apt-get install -y postgresql)";
}

/** tubeway on Deno over PostgreSQL. */
export const denoPgServer: Target = pgServer(
  "deno run server.ts --pg",
  () => DENO_SERVER,
  () => denoServer.unavailable(),
);

/** tubeway on Bun over PostgreSQL. */
export const bunPgServer: Target = pgServer("bun run server.ts --pg", () => BUN_SERVER, () => bunServer.unavailable());

/** The compiled executable (bun build --compile) over PostgreSQL. */
export const binaryPgServer: Target = pgServer(
  "compiled binary --pg",
  async () => [await buildBinary()],
  () => binary.unavailable(),
);

/** Run a command to its end (bounded); its exit code and output. */
export function runToEnd(
  argv: readonly string[],
  args: string[],
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(argv[0]!, [...argv.slice(1), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout!.on("data", (d: Buffer) => (out += d));
    p.stderr!.on("data", (d: Buffer) => (err += d));
    const t = setTimeout(() => p.kill("SIGKILL"), 60_000);
    p.on("exit", (code) => {
      clearTimeout(t);
      resolve({ code, out, err });
    });
  });
}
