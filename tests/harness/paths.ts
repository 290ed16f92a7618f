// Locations the tests need: the repository root and the runtimes installed from npm.
import { fileURLToPath } from "node:url";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** Absolute path of the repository root. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");

function bin(name: string): string {
  const local = join(ROOT, "node_modules", ".bin", name);
  return existsSync(local) ? local : name;
}

/** The Deno and Bun executables pinned in package.json (falls back to PATH). */
export const DENO = bin("deno");
export const BUN = bin("bun");

/** Which runtime is running this test file. */
export const RUNTIME: "deno" | "bun" | "node" = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";

/** Find an executable on PATH (or an absolute path), or undefined. */
export function which(name: string): string | undefined {
  if (name.startsWith("/")) return existsSync(name) ? name : undefined;
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

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
