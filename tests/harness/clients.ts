// The beanstalkd client libraries the client suites run (tests/system/clients_test.ts,
// tests/system/pg_three_nodes_test.ts): each script in tests/system/clients/ drives one
// client through the protocol against a server and exits non-zero naming the step that
// went wrong.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT, skipUnless } from "./paths.ts";
import { which } from "../../scripts/machine.ts";
import type { Running, Target } from "./targets.ts";

const CLIENTS_DIR = join(ROOT, "tests", "system", "clients");
/** How long one client script may take before it is killed (each also limits itself to 30 s). */
const SCRIPT_TIMEOUT_MS = 60_000;
/** Per test: server start (up to 20 s) + script + stop. */
export const TEST_TIMEOUT_MS = 120_000;

const PHEANSTALK_AUTOLOAD = process.env.PHEANSTALK_AUTOLOAD || "/usr/share/php/Pheanstalk/autoload.php";

export interface Client {
  name: string;
  /** Interpreter, resolved on PATH, or undefined when missing. */
  interpreter: string | undefined;
  script: string;
  /** Why this client cannot run here, or undefined when it can. */
  missing(): string | undefined;
}

function npmPackage(pkg: string): string | undefined {
  return existsSync(join(ROOT, "node_modules", pkg, "package.json"))
    ? undefined
    : `npm package ${pkg} is not installed (npm install)`;
}

/** Does `ruby -e 'require "beaneater"'` work? Bounded; run once at load. */
function rubyCanLoad(ruby: string, lib: string): boolean {
  const r = spawnSync(ruby, ["-e", `require ${JSON.stringify(lib)}`], { timeout: 20_000, stdio: "ignore" });
  return r.status === 0;
}

const NODE = which("node");
const PHP = which("php");
const RUBY = which("ruby");

export const clients: Client[] = [
  {
    name: "node-beanstalk",
    interpreter: NODE,
    script: "node_beanstalk.mjs",
    missing: () => (NODE ? npmPackage("node-beanstalk") : "node is not on PATH"),
  },
  {
    name: "fivebeans",
    interpreter: NODE,
    script: "fivebeans.mjs",
    missing: () => (NODE ? npmPackage("fivebeans") : "node is not on PATH"),
  },
  {
    name: "jackd",
    interpreter: NODE,
    script: "jackd.mjs",
    missing: () => (NODE ? npmPackage("jackd") : "node is not on PATH"),
  },
  {
    name: "pheanstalk",
    interpreter: PHP,
    script: "pheanstalk.php",
    missing: () =>
      !PHP
        ? "php is not installed (scripts/install-test-deps.sh: php-cli)"
        : !existsSync(PHEANSTALK_AUTOLOAD)
        ? `pheanstalk is not installed: no ${PHEANSTALK_AUTOLOAD} (scripts/install-test-deps.sh: php-pda-pheanstalk)`
        : undefined,
  },
  {
    name: "beaneater",
    interpreter: RUBY,
    script: "beaneater.rb",
    missing: () =>
      !RUBY
        ? "ruby is not installed (scripts/install-test-deps.sh: ruby)"
        : !rubyCanLoad(RUBY, "beaneater")
        ? "ruby cannot load beaneater (scripts/install-test-deps.sh: ruby-beaneater)"
        : undefined,
  },
];

interface Outcome {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Run one client script against host:port; never rejects. */
function runScript(client: Client, host: string, port: number): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(
      client.interpreter!,
      [join(CLIENTS_DIR, client.script), host, String(port)],
      { cwd: ROOT, env: process.env, timeout: SCRIPT_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 4 << 20 },
      (err, stdout, stderr) => {
        const e = err as (Error & { code?: number | string; signal?: string | null }) | null;
        resolve({
          code: e ? (typeof e.code === "number" ? e.code : null) : 0,
          signal: e?.signal ?? null,
          stdout: String(stdout),
          stderr: String(stderr) + (e && typeof e.code !== "number" && !e.signal ? `\n(${e.message})` : ""),
        });
      },
    );
  });
}

function tail(text: string, max = 4000): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}

/**
 * Start `target`, run the client's script against it and check it passed (exit 0 and its
 * ok line), naming the step that went wrong and the server's output otherwise.
 */
export async function runAgainst(client: Client, target: Target): Promise<void> {
  let server: Running | undefined;
  try {
    server = await target.start();
    const { host, port } = server.addr;
    const out = await runScript(client, host, port);
    const how = out.signal ? `was killed by ${out.signal} (over ${SCRIPT_TIMEOUT_MS} ms?)` : `exited with ${out.code}`;
    assert.equal(
      out.code,
      0,
      `${client.name} against ${target.name} ${how}\n` +
        `--- stderr ---\n${tail(out.stderr)}\n--- stdout ---\n${tail(out.stdout)}\n` +
        `--- server output ---\n${tail(server.output(), 2000)}`,
    );
    assert.match(out.stdout, new RegExp(`^${client.name}: ok \\(\\d+ checks\\)`, "m"), `no ok line:\n${out.stdout}`);
  } finally {
    await server?.stop();
  }
}

/**
 * Register `name` running `client` against `target`, skipped (with the reason) when either
 * is missing here. skipUnless throws under TUBEWAY_REQUIRE_ALL=1; that error is rethrown
 * inside the test, not at load: deno test ignores a throw at module level once some tests
 * have been registered, and would pass the run.
 */
export function clientTest(
  test: (name: string, opts: { skip: string | false; timeout: number }, fn: () => Promise<void>) => unknown,
  name: string,
  reason: string | undefined,
  run: () => Promise<void>,
): void {
  let skip: string | false = false;
  let required: unknown;
  try {
    skip = skipUnless(reason === undefined, `${name}: ${reason}`);
  } catch (e) {
    required = e;
  }
  if (skip) console.warn(`skipping ${skip}`);
  test(name, { skip, timeout: TEST_TIMEOUT_MS }, async () => {
    if (required) throw required;
    await run();
  });
}
