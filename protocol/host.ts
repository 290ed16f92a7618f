// Facts about this process and machine for `stats`, read through node: built-ins that
// Deno and Bun both provide (no runtime is named here).
import * as os from "node:os";
import process from "node:process";
import { readFileSync } from "node:fs";

export interface HostInfo {
  pid: number;
  hostname: string;
  /** uname version string, as 1.12's `os` key shows. */
  os: string;
  /** uname machine, e.g. x86_64. */
  platform: string;
  /** User and system CPU time of this process, in microseconds. */
  cpu(): { user: number; system: number };
}

function safe(f: () => string, fallback: string): string {
  try {
    return f() || fallback;
  } catch {
    return fallback;
  }
}

export function hostInfo(): HostInfo {
  return {
    pid: process.pid,
    hostname: safe(() => os.hostname(), "localhost"),
    // uname's version field ("#1 SMP ..."); os.version() gives that on Bun but the
    // release on Deno, so read the kernel's own copy first.
    os: safe(() => readFileSync("/proc/sys/kernel/version", "utf8").trim(), safe(() => os.version(), "unknown")),
    platform: safe(() => os.machine(), "unknown"),
    cpu: () => process.cpuUsage(),
  };
}

/** 16 lowercase hex characters, random per process start (1.12 reads /dev/urandom). */
export function randomId(): string {
  const b = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
