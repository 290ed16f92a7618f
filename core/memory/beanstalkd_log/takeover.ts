// Taking over a directory beanstalkd wrote (-b DIR): its jobs are imported once into
// tubeway's own log, and a marker file says the import is done. beanstalkd's files
// (binlog.N, lock) are only read: never written, moved or deleted, so the user can
// start beanstalkd on the directory again and find its jobs as they were.
//
// The order makes a crash at any point safe:
//   1. the imported jobs go into the queue and, as full records, into tubeway's log;
//   2. the log is fsynced (whatever -f says), the id high-water above the highest
//      imported id included;
//   3. only then is the marker DIR/tubeway.imported written and fsynced.
// A crash before 3 imports again at the next start: jobs already in tubeway's log
// (from the interrupted import) are kept as they are and not imported twice.
import type { Files } from "../../files.ts";
import { errorText, joinPath } from "../../files.ts";
import type { JobRecord } from "../wal.ts";
import { binlogSeq, readBeanstalkdLog, type ReadResult, type SourceFile, summary } from "./read.ts";

/** The marker file: present once beanstalkd's files have been imported. */
export const IMPORT_MARKER = "tubeway.imported";

/** What the import needs of the log (core/memory/binlog/binlog.ts Binlog). */
export interface ImportLog {
  put(rec: JobRecord): boolean;
  raiseIds(maxId: number): boolean;
  syncAll(): Promise<boolean>;
}

/** What the import needs of the queue (core/memory/queue.ts Queue). */
export interface ImportQueue {
  peek(id: number): unknown;
  restore(records: Iterable<JobRecord>, maxId: number): void;
}

/** beanstalkd's data files in `dir`, lowest N first. */
export function beanstalkdFileNames(dir: string, files: Files): string[] {
  return files.list(dir).filter((n) => binlogSeq(n) !== undefined).sort((a, b) => binlogSeq(a)! - binlogSeq(b)!);
}

/** True once an import has been completed in `dir`. */
export function importDone(dir: string, files: Files): boolean {
  return files.list(dir).includes(IMPORT_MARKER);
}

/**
 * Read beanstalkd's files in `dir`. A file that cannot be read at all (EACCES: its
 * files are mode 0400, owned by beanstalkd's user) is an error, not a problem to
 * report and pass over: importing without it would lose its jobs for good.
 */
export function readBeanstalkdDir(dir: string, files: Files, names: string[]): ReadResult | { error: string } {
  const sources: SourceFile[] = [];
  for (const name of names) {
    const path = joinPath(dir, name);
    try {
      sources.push({ name, bytes: files.read(path) });
    } catch (e) {
      return {
        error: `cannot read ${path}: ${errorText(e)} (tubeway only reads beanstalkd's files; run it as a user who can)`,
      };
    }
  }
  return readBeanstalkdLog(sources);
}

/** The file names an earlier import recorded in its marker. */
function importedNames(dir: string, files: Files): string[] {
  try {
    const text = new TextDecoder().decode(files.read(joinPath(dir, IMPORT_MARKER)));
    return /^files: (.*)$/m.exec(text)?.[1]?.split(" ") ?? [];
  } catch {
    return [];
  }
}

/** How to show one problem: `<path>:<offset>: <reason>`. */
export function problemLine(dir: string, p: ReadResult["problems"][number]): string {
  return `${joinPath(dir, p.file)}:${p.offset}: ${p.reason}`;
}

export type ImportOutcome =
  | { kind: "none" }
  | { kind: "imported"; result: ReadResult; imported: number }
  | { kind: "failed"; message: string };

/**
 * Import beanstalkd's jobs from `dir` into `queue` and `log`, unless that was done
 * already or there is nothing of beanstalkd's there. Call after tubeway's own log
 * was opened and replayed into the queue (so its earlier binlog.N files are already
 * renamed and cannot be taken for beanstalkd's).
 */
export async function importBeanstalkd(
  dir: string,
  files: Files,
  queue: ImportQueue,
  log: ImportLog,
  say: (msg: string) => void,
  /** The one-line summary of a finished import (a fact, not a warning). */
  done: (msg: string) => void = say,
): Promise<ImportOutcome> {
  const names = beanstalkdFileNames(dir, files);
  if (names.length === 0) return { kind: "none" };
  if (importDone(dir, files)) {
    // beanstalkd ran on the directory again after the import: say so, import nothing
    const known = importedNames(dir, files);
    const later = names.filter((n) => !known.includes(n));
    if (later.length > 0) {
      say(
        `${dir}: beanstalkd files written after the import are not read (${later.join(" ")}); ` +
          `remove ${joinPath(dir, IMPORT_MARKER)} to import again`,
      );
    }
    return { kind: "none" };
  }
  const r = readBeanstalkdDir(dir, files, names);
  if ("error" in r) return { kind: "failed", message: r.error };
  for (const p of r.problems) say(problemLine(dir, p));
  const fresh = r.jobs.filter((j) => queue.peek(j.id) === undefined);
  queue.restore(fresh, r.maxId);
  for (const j of fresh) {
    if (!log.put(j)) return { kind: "failed", message: `cannot write job ${j.id} into the log; import not finished` };
  }
  if (!log.raiseIds(r.maxId) || !(await log.syncAll())) {
    return { kind: "failed", message: "cannot write the imported jobs to disk; import not finished" };
  }
  const marker = joinPath(dir, IMPORT_MARKER);
  try {
    const h = files.open(marker, "any");
    h.truncate(0);
    h.append(new TextEncoder().encode(markerText(names, r)));
    h.syncNow();
    h.close();
    await files.syncDir(dir);
  } catch (e) {
    return { kind: "failed", message: `cannot write ${marker}: ${errorText(e)}` };
  }
  done(`imported beanstalkd's binlog from ${dir}: ${summary(r)}`);
  return { kind: "imported", result: r, imported: fresh.length };
}

function markerText(names: string[], r: ReadResult): string {
  return `beanstalkd's binlog files in this directory were imported into tubeway.N on ${new Date().toISOString()}\n` +
    `(remove this file to import them again; jobs already in tubeway's log are kept as they are)\n` +
    `files: ${names.join(" ")}\n` +
    `${summary(r)}\n`;
}
