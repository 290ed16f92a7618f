// The way back: `tubeway export-binlog -b DIR OUT` writes the jobs of tubeway's log
// in DIR as a beanstalkd version-7 log directory OUT (one file, OUT/binlog.1), which
// beanstalkd 1.5 … 1.13 reads when started with -b OUT. The jobs are the ones
// tubeway would serve if started on DIR now: its log, plus beanstalkd's files in
// DIR when their import has not happened yet. DIR is locked for the export (so a
// running tubeway makes it refuse) and its files are not changed, except that an
// earlier release's binlog.N files are renamed to tubeway.N (as every start does).
import type { Files } from "../../files.ts";
import { errorText, joinPath } from "../../files.ts";
import type { JobRecord, ScheduleRecord, TubeLimits } from "../wal.ts";
import { jobsInOrder, replay } from "../binlog/recover.ts";
import { migrateLegacyNames } from "../binlog/legacy_names.ts";
import { binlogSeq, counted } from "./read.ts";
import { beanstalkdFileNames, importDone, problemLine, readBeanstalkdDir } from "./takeover.ts";
import { encodeV7, minMaxJobSize } from "./write.ts";

export const EXPORT_USAGE = `Use: tubeway export-binlog -b DIR OUT

Writes the jobs of tubeway's log in DIR (the server stopped) as a beanstalkd
binlog directory OUT (created if missing; must hold no binlog files), for
beanstalkd -b OUT. Ids, tubes, bodies, priorities, TTRs, ages, counters and
states are kept; delayed jobs keep their deadline; reserved jobs become ready.
What beanstalkd cannot hold is dropped, and the summary says so: retry
policies (set-dlq, set-backoff), limits (set-concurrency, set-rate), schedules,
put-unique keys, dead letters' origins (the dead letters themselves stay, buried
in their dead-letter tube).
`;

/** beanstalkd's default -z: below it no -z needs to be given. */
const BEANSTALKD_DEFAULT_Z = 65535;

export type ExportArgs = { kind: "run"; dir: string; out: string } | { kind: "help" } | {
  kind: "error";
  message: string;
};

/** `-b DIR OUT` in either order (`-bDIR` too), or -h. */
export function parseExportArgs(args: string[]): ExportArgs {
  let dir: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-h" || a === "--help") return { kind: "help" };
    if (a === "-b") {
      if (i + 1 >= args.length) return { kind: "error", message: "-b needs a directory" };
      dir = args[++i]!;
    } else if (a.startsWith("-b")) dir = a.slice(2);
    else if (a.startsWith("-") && a !== "-") return { kind: "error", message: `unknown flag: ${a}` };
    else rest.push(a);
  }
  if (dir === undefined) return { kind: "error", message: "-b DIR is required" };
  if (rest.length !== 1) return { kind: "error", message: "give one output directory" };
  return { kind: "run", dir, out: rest[0]! };
}

export type ExportOutcome =
  | { kind: "done"; path: string; jobs: JobRecord[]; lines: string[] }
  | { kind: "failed"; message: string; locked: boolean };

/** Live jobs: the others first, then the buried ones in the order given (bury order). */
function buriedLast(jobs: JobRecord[]): JobRecord[] {
  return [...jobs.filter((j) => j.state !== "buried"), ...jobs.filter((j) => j.state === "buried")];
}

/** What a log keeps beside its jobs that a target may not hold. */
export interface Standing {
  policies: ReadonlyMap<string, unknown>;
  limits: ReadonlyMap<string, unknown>;
  schedules: ReadonlyMap<string, unknown>;
}

/**
 * What the extensions (docs/extensions.md) kept that the target (beanstalkd's format, or the
 * PostgreSQL engine for migrate) cannot: one line each, none when nothing.
 */
export function dropped(jobs: readonly JobRecord[], kept: Partial<Standing>, verb = "exported"): string[] {
  const out: string[] = [];
  const keys = jobs.filter((j) => j.key !== undefined).length;
  const origins = jobs.filter((j) => j.from !== undefined).length;
  const names = (m: ReadonlyMap<string, unknown>) => [...m.keys()].join(" ");
  if (kept.policies && kept.policies.size > 0) {
    const p = kept.policies;
    out.push(`dropped the retry policies (set-dlq, set-backoff) of ${counted(p.size, "tube")}: ${names(p)}`);
  }
  if (kept.limits && kept.limits.size > 0) {
    const l = kept.limits;
    out.push(`dropped the limits (set-concurrency, set-rate) of ${counted(l.size, "tube")}: ${names(l)}`);
  }
  if (kept.schedules && kept.schedules.size > 0) {
    const s = kept.schedules;
    out.push(`dropped ${counted(s.size, "schedule")} (the jobs they already put are ${verb}): ${names(s)}`);
  }
  if (keys > 0) out.push(`dropped the put-unique keys of ${counted(keys, "job")} (the jobs are ${verb})`);
  if (origins > 0) {
    out.push(`dropped where ${counted(origins, "dead letter")} came from (they stay buried in their dead-letter tube)`);
  }
  return out;
}

/** `files` for replay, minus removal: replay removes all-zero log files, which an export must not. */
function readOnly(files: Files): Files {
  return {
    list: (dir) => files.list(dir),
    read: (path) => files.read(path),
    open: (path, mode) => files.open(path, mode),
    unlink: () => {},
    rename: (from, to) => files.rename(from, to),
    syncDir: (dir) => files.syncDir(dir),
    syncDirNow: (dir) => files.syncDirNow(dir),
    lock: (dir) => files.lock(dir),
  };
}

/** The live jobs of a locked DIR and what else its log keeps; see jobsOfDir. */
export interface DirJobs extends Standing {
  limits: ReadonlyMap<string, TubeLimits>;
  schedules: ReadonlyMap<string, ScheduleRecord>;
  /** Ids ascending, then the buried ones in bury order; reserved ones made ready. */
  jobs: JobRecord[];
  /** The id high-water: new ids go above it. */
  maxId: number;
  /** What the reader did beyond tubeway's own log (beanstalkd's files not imported yet). */
  lines: string[];
}

/**
 * The jobs tubeway would serve if started on DIR now (the caller holds DIR's lock):
 * its log, plus beanstalkd's files in DIR when their import has not happened yet.
 * Reads only, except that an earlier release's binlog.N files are renamed to
 * tubeway.N (as every start does). Shared by export-binlog and migrate (core/pg/).
 */
export function jobsOfDir(dir: string, files: Files, say: (m: string) => void): DirJobs | { error: string } {
  migrateLegacyNames(dir, files, say);
  const own = replay(dir, readOnly(files), say);
  let jobs = jobsInOrder(own.jobs);
  let maxId = own.maxId;
  const lines: string[] = [];
  const names = beanstalkdFileNames(dir, files);
  if (names.length > 0 && !importDone(dir, files)) {
    const r = readBeanstalkdDir(dir, files, names);
    if ("error" in r) return r;
    for (const p of r.problems) say(problemLine(dir, p));
    jobs = buriedLast([...jobs, ...r.jobs.filter((j) => !own.jobs.has(j.id))]);
    maxId = Math.max(maxId, r.maxId);
    lines.push(`included ${counted(r.jobs.length, "job")} from beanstalkd's files in ${dir} (not imported yet)`);
  }
  return { jobs, maxId, policies: own.policies, limits: own.limits, schedules: own.schedules, lines };
}

/**
 * Export DIR's jobs into OUT (which must exist). `say` gets problems as they are
 * found. A delayed job whose deadline (wall clock) has passed is written ready, as
 * tubeway would show it.
 */
export function exportBinlog(
  dir: string,
  out: string,
  files: Files,
  say: (m: string) => void,
  nowWallMs: number,
): ExportOutcome {
  let lock;
  try {
    lock = files.lock(dir);
  } catch (e) {
    return { kind: "failed", message: e instanceof Error ? e.message : String(e), locked: true };
  }
  try {
    for (const note of lock.notes ?? []) say(note);
    if (files.list(out).some((n) => binlogSeq(n) !== undefined || n === "lock")) {
      return {
        kind: "failed",
        message: `${out} already holds a beanstalkd log; give an empty directory`,
        locked: false,
      };
    }
    const read = jobsOfDir(dir, files, say);
    if ("error" in read) return { kind: "failed", message: read.error, locked: false };
    const { maxId, lines } = read;
    let jobs = read.jobs;
    jobs = jobs.map((j) => j.state === "delayed" && j.deadlineAtMs <= nowWallMs ? { ...j, state: "ready" } : j);
    const path = joinPath(out, "binlog.1");
    const h = files.open(path, "new");
    try {
      h.append(encodeV7(jobs, maxId));
      h.syncNow();
    } finally {
      h.close();
    }
    const n = { ready: 0, delayed: 0, buried: 0 };
    for (const j of jobs) if (j.state === "ready" || j.state === "delayed" || j.state === "buried") n[j.state]++;
    lines.push(
      `exported ${
        counted(jobs.length, "job")
      } (${n.ready} ready, ${n.delayed} delayed, ${n.buried} buried) to ${path}; ` +
        `start beanstalkd with -b ${out}`,
    );
    lines.push(...dropped(jobs, read));
    const z = minMaxJobSize(jobs);
    if (z > BEANSTALKD_DEFAULT_Z) {
      lines.push(`the largest job needs beanstalkd -z ${z} or more (1.12 counts the body's CRLF on replay)`);
    }
    return { kind: "done", path, jobs, lines };
  } catch (e) {
    return { kind: "failed", message: `export failed: ${errorText(e)}`, locked: false };
  } finally {
    lock.release();
  }
}
