// The real host facts for `stats` (pid, hostname, uname, CPU time), read through node:
// built-ins that Deno and Bun both provide. protocol/ only knows the HostInfo shape;
// this is injected into Service by server.ts (and by library users who want real facts).
import * as os from "node:os";
import process from "node:process";
import { readFileSync } from "node:fs";
import type { HostInfo } from "../protocol/host.ts";

function safe(f: () => string, fallback: string): string {
  try {
    return f() || fallback;
  } catch {
    return fallback;
  }
}

/**
 * This process and machine, as beanstalkd 1.12's `stats` reports them.
 *
 * @example
 * ```ts
 * import { hostInfo, memoryEngine, Service } from "../mod.ts";
 *
 * const svc = new Service(memoryEngine(), { host: hostInfo() }); // stats shows the real pid, hostname, os
 * svc.close();
 * ```
 */
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
