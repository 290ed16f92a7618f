// The native load generator (bench/native/*.c): built with the machine's C compiler
// when a bench starts, into the temporary directory, named by a hash of its sources
// and the compiler, so a second run (or bench/agree.ts's many) reuses the binary.
// No compiler (or BENCH_CC set empty): the bench falls back to the JS generator.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { proc, ROOT, which } from "./host.ts";

const SRC = join(ROOT, "bench", "native");

/** The C compiler to use: $BENCH_CC (a command or path; empty = none), else cc, gcc or clang on PATH. */
export function findCc(): string | undefined {
  const env = proc.env.BENCH_CC;
  if (env !== undefined) return env ? which(env) : undefined;
  return which("cc") ?? which("gcc") ?? which("clang");
}

/** Path of the built generator, or why there is none. */
export function buildNative(): { path: string } | { missing: string } {
  const cc = findCc();
  if (!cc) return { missing: "no C compiler found (cc, gcc, clang or $BENCH_CC)" };
  const files = readdirSync(SRC).filter((f) => /\.[ch]$/.test(f)).sort();
  const h = createHash("sha256").update(cc);
  for (const f of files) h.update(f).update(readFileSync(join(SRC, f)));
  const dir = join(tmpdir(), `tubeway-loadgen-${h.digest("hex").slice(0, 16)}`);
  const bin = join(dir, "loadgen");
  if (existsSync(bin)) return { path: bin };
  mkdirSync(dir, { recursive: true });
  // compile to a private name, then rename: two benches starting at once both get a whole binary
  const tmp = `${bin}.${proc.pid}`;
  const sources = files.filter((f) => f.endsWith(".c")).map((f) => join(SRC, f));
  const r = spawnSync(cc, ["-O2", "-Wall", "-Wextra", "-o", tmp, ...sources], { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    return { missing: `${cc} failed: ${(r.stderr || r.error?.message || "").trim().slice(0, 400)}` };
  }
  renameSync(tmp, bin);
  return { path: bin };
}
