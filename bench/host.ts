// What the bench needs from the machine: where the programs are, how to pin a child
// to a CPU, and the /proc counters (process CPU and memory, per-CPU busy time).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
export const HOST = "127.0.0.1";
/** Servers and generators get this many file descriptors (10k connections plus slack). */
const FD_LIMIT = 65536;

// deno-lint-ignore no-explicit-any
export const proc: any = (globalThis as any).process;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function which(name: string): string | undefined {
  if (name.includes("/")) return existsSync(name) ? name : undefined;
  for (const dir of (proc.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function localBin(name: string): string | undefined {
  const p = join(ROOT, "node_modules", ".bin", name);
  return existsSync(p) ? p : which(name);
}

/** The programs and CPUs one bench run uses. */
export interface Tools {
  deno?: string | undefined;
  bun?: string | undefined;
  beanstalkd?: string | undefined;
  taskset?: string | undefined;
  ncpu: number;
  /** Servers go to CPU 0 and generators to the others. */
  pin: boolean;
  nice: number;
  runtime: "bun" | "deno" | "node";
}

export function findTools(pin: boolean, nice: number): Tools {
  // BENCH_BEANSTALKD=PATH picks another binary ("" or a missing path: run as if not installed)
  const bs = proc.env.BENCH_BEANSTALKD;
  const taskset = pin ? which("taskset") : undefined;
  const ncpu = cpus().length || 1;
  return {
    deno: localBin("deno"),
    bun: localBin("bun"),
    beanstalkd: bs !== undefined ? (bs ? which(bs) : undefined) : which("/usr/bin/beanstalkd") ?? which("beanstalkd"),
    taskset,
    ncpu,
    pin: !!taskset && ncpu >= 2,
    nice,
    runtime: "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node",
  };
}

export function version(cmd: string | undefined, args: string[]): string {
  if (!cmd) return "absent";
  try {
    const r = spawnSync(cmd, args, { encoding: "utf8" });
    return ((r.stdout || r.stderr || "") as string).split("\n")[0]!.trim();
  } catch {
    return "?";
  }
}

/** argv that runs cmd pinned to `cpu` (a taskset list) with a raised fd limit. */
export function wrap(t: Tools, argv: string[], cpu: string | null): string[] {
  const sh = [
    "sh",
    "-c",
    `ulimit -n ${FD_LIMIT} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"`,
    "sh",
    ...argv,
  ];
  const niced = t.nice ? ["nice", "-n", String(t.nice), ...sh] : sh;
  return t.pin && cpu !== null ? [t.taskset!, "-c", cpu, ...niced] : niced;
}

/** Pin a running process (the coordinator: idle while measuring) to `cpu`. */
export function pinSelf(t: Tools, cpu: string): void {
  if (t.pin) spawnSync(t.taskset!, ["-a", "-p", "-c", cpu, String(proc.pid)], { stdio: "ignore" });
}

// ------------------------------------------------------------------ /proc

export function procCpuMs(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime+stime, USER_HZ = 100
  } catch {
    return NaN;
  }
}

/**
 * Milliseconds of CPU used so far by the database server whose postmaster is `pid` and
 * its processes (backends, writers), with the time of those that ended and were reaped
 * (the postmaster's cutime and cstime): read before and after a window, the database's
 * share of it. Other clusters on the machine are not counted. NaN without /proc.
 */
export function postgresCpuMs(pid: number): number {
  let ticks = 0;
  let dirs: string[];
  try {
    dirs = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return NaN;
  }
  for (const d of dirs) {
    try {
      const s = readFileSync(`/proc/${d}/stat`, "latin1");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      if (Number(d) === pid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      else if (Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // ended meanwhile
    }
  }
  return (ticks * 1000) / 100; // USER_HZ = 100
}

export function procMem(pid: number): { rss: number; hwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "latin1");
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(s)?.[1] ?? NaN) * 1024;
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** Per-CPU jiffies: [busy, total] for each CPU, from /proc/stat. */
export function cpuTimes(): [number, number][] {
  try {
    return readFileSync("/proc/stat", "latin1").split("\n").filter((l) => /^cpu\d/.test(l)).map((l) => {
      const f = l.trim().split(/\s+/).slice(1).map(Number);
      // user nice system idle iowait irq softirq steal; steal = time the VM did not run
      const total = f.slice(0, 7).reduce((a, b) => a + b, 0);
      const idle = f[3]! + f[4]!;
      return [total - idle, total];
    });
  } catch {
    return [];
  }
}

/** Milliseconds of process time (user+nice+system, all CPUs) the kernel has counted. */
export function allProcessMs(): number {
  try {
    const f = readFileSync("/proc/stat", "latin1").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    return ((f[0]! + f[1]! + f[2]!) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/** Busy fraction of each CPU between two cpuTimes() readings. */
export function cpuBusy(a: [number, number][], b: [number, number][]): number[] {
  return b.map(([busy, total], i) => (total - a[i]![1] > 0 ? (busy - a[i]![0]) / (total - a[i]![1]) : NaN));
}
