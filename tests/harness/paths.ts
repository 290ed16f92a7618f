// Locations the tests need: the repository root and the runtimes installed from npm.
import { fileURLToPath } from "node:url";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DENO_V8_FLAGS } from "../../adapters/deno_flags.ts";

/** Absolute path of the repository root. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");

function bin(name: string): string {
  const local = join(ROOT, "node_modules", ".bin", name);
  return existsSync(local) ? local : name;
}

/** The Deno and Bun executables pinned in package.json (falls back to PATH). */
export const DENO = bin("deno");
export const BUN = bin("bun");

export const SERVER_TS = join(ROOT, "server.ts");
/** tubeway on Deno as `deno task serve` runs it: its V8 flags (adapters/deno_flags.ts), and quiet. */
export const DENO_SERVER: readonly string[] = [
  DENO,
  "run",
  `--v8-flags=${DENO_V8_FLAGS}`,
  "--allow-all",
  "--quiet",
  SERVER_TS,
];
/**
 * deno.json's serve task as an argv (what `npm start` runs): the pinned Deno, the task's
 * flags, server.ts by absolute path.
 */
export function serveTaskArgv(): string[] {
  const task: string = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).tasks.serve;
  const words = task.split(/\s+/);
  const at = words.indexOf("deno");
  if (words.slice(0, at).join(" ") !== "sh scripts/run.sh" || words.at(-1) !== "server.ts") {
    throw new Error(`deno.json's serve task is not "sh scripts/run.sh deno ... server.ts": ${task}`);
  }
  return [DENO, ...words.slice(at + 1, -1), SERVER_TS];
}

/** tubeway on Bun, as `npm run start:bun` runs it. */
export const BUN_SERVER: readonly string[] = [BUN, "run", SERVER_TS];

/** Which runtime is running this test file. */
export const RUNTIME: "deno" | "bun" | "node" = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";

/**
 * The `skip` option for a test that needs an external program: the reason when it is
 * missing, false when present. Under TUBEWAY_REQUIRE_ALL=1 (set by .ci/run) it never
 * skips, so the test runs and fails on the missing program: CI cannot go green by
 * skipping. (It must not throw: Deno drops errors thrown while a file registers tests.)
 */
export function skipUnless(present: boolean, reason: string): string | false {
  if (present || process.env.TUBEWAY_REQUIRE_ALL === "1") return false;
  return reason;
}
