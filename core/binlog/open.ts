// Opening the log at startup: lock the directory, migrate old names, replay, and hand
// the replayed state to a new Binlog (binlog.ts); WalOpenError for what stops startup.
import type { Files } from "../files.ts";
import { errorText } from "../files.ts";
import type { Recovered } from "../wal.ts";
import type { Clock } from "../clock.ts";
import { jobsInOrder, replay } from "./recover.ts";
import { migrateLegacyNames } from "./legacy_names.ts";
import { Binlog, type BinlogOptions, type LiveLookup } from "./binlog.ts";

/** Thrown by openBinlog when the directory is missing, unreadable or locked (exit 10). */
export class WalOpenError extends Error {}

/**
 * Open the log in opts.dir: lock it, replay it, start a new file. Throws
 * WalOpenError when the directory cannot be locked or listed; never throws for
 * damaged data (that is reported through opts.log).
 */
export function openBinlog(
  opts: BinlogOptions,
  files: Files,
  clock: Pick<Clock, "now">,
  live: LiveLookup,
): { wal: Binlog; recovered: Recovered } {
  let lock;
  try {
    lock = files.lock(opts.dir);
  } catch (e) {
    throw new WalOpenError(e instanceof Error ? e.message : String(e));
  }
  for (const note of lock.notes ?? []) opts.log(note);
  let r;
  try {
    migrateLegacyNames(opts.dir, files, opts.log);
    r = replay(opts.dir, files, opts.log);
  } catch (e) {
    lock.release();
    throw new WalOpenError(`failed to read wal dir ${opts.dir}: ${errorText(e)}`);
  }
  const wal = new Binlog(opts, files, clock, live, lock.release.bind(lock), r);
  const fileOf = new Map<number, number>();
  for (const [id, j] of r.jobs) fileOf.set(id, wal.fileOf(id) || j.file);
  return { wal, recovered: { jobs: jobsInOrder(r.jobs), maxId: r.maxId, fileOf } };
}
