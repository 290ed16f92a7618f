// Opening the log at startup: lock the directory, migrate old names, replay, and hand
// the replayed files, rebuilt as Binlog parts, to a new Binlog (binlog.ts); WalOpenError
// for what stops startup.
import type { Files, Preallocation } from "../../files.ts";
import { errorText, joinPath, PREALLOCATION_BLOCK } from "../../files.ts";
import type { JobState, Recovered } from "../wal.ts";
import type { Clock } from "../../clock.ts";
import { jobsInOrder, replay } from "./recover.ts";
import { PREALLOCATION_CHUNK } from "./codec.ts";
import { migrateLegacyNames } from "./legacy_names.ts";
import { Binlog } from "./binlog.ts";
import { Ballast } from "./ballast.ts";
import { Homes } from "./homes.ts";
import { IdMark } from "./ids.ts";
import { Segments } from "./segments.ts";
import type { BinlogOptions, BinlogParts, LiveLookup } from "./options.ts";

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
  const wal = new Binlog(opts, clock, live, lock.release.bind(lock), rebuild(opts, files, r));
  const fileOf = new Map<number, number>();
  for (const [id, j] of r.jobs) fileOf.set(id, wal.fileOf(id) || j.file);
  const recovered: Recovered = {
    jobs: jobsInOrder(r.jobs),
    maxId: r.maxId,
    fileOf,
    policies: r.policies,
    limits: r.limits,
    schedules: r.schedules,
  };
  return { wal, recovered };
}

/** The replayed files as the parts a Binlog runs on: the file set, ids.N, each live job's home, the ballast. */
function rebuild(opts: BinlogOptions, files: Files, r: ReturnType<typeof replay>): BinlogParts {
  const syncing = opts.fsyncMs !== "never" || opts.durableAcks;
  const pre = opts.durableAcks ? preallocation(opts.maxFileSize) : undefined;
  const segs = new Segments(files, opts.dir, opts.log, syncing, r.files, r.maxSeq + 1, pre);
  const ids = new IdMark(files, opts.dir, opts.log, syncing, r.idFiles, r.maxIdSeq + 1);
  ids.record(r.maxId);
  const homes = new Homes(segs);
  for (const [id, j] of r.jobs) {
    const file = segs.bySeq(j.file)!;
    homes.home({ id, file, size: j.fullSize, state: j.rec.state as JobState, buryOrder: j.buryOrder });
  }
  const ballast = new Ballast(files, joinPath(opts.dir, "ballast"), opts.log);
  ballast.ensure(homes.jobs.size);
  // the Binlog's own copies: the engine is handed the replayed ones
  const standing = {
    policies: new Map(r.policies),
    limits: new Map(r.limits),
    schedules: new Map([...r.schedules].map(([name, s]) => [name, { ...s }])),
  };
  return { segs, ids, homes, ballast, maxId: r.maxId, maxBuryOrder: r.maxBuryOrder, standing };
}

/**
 * Under -f 0 every acknowledgement waits for an fsync, and one that must commit a grown
 * file size costs about half as much again (README.md): zero blocks ahead of the data,
 * PREALLOCATION_CHUNK at a time, or a quarter of -s when that is less (at least a
 * block), so that a file stays within -s (rounded up to a block) and the disk use stays
 * bounded as before. With -f N one fsync per N ms pays for the size once: no gain.
 */
export function preallocation(maxFileSize: number): Preallocation {
  const quarter = Math.floor(maxFileSize / 4 / PREALLOCATION_BLOCK) * PREALLOCATION_BLOCK;
  return { chunk: Math.max(PREALLOCATION_BLOCK, Math.min(PREALLOCATION_CHUNK, quarter)), limit: maxFileSize };
}
