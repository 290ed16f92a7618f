// Disk space held back so that deletes can always be logged, and so that a batch of
// records already accepted can always be written.
//
// beanstalkd preallocates its log files to -s and makes each put reserve room for its
// later delete inside them. We keep the reserve apart (files only as big as their data,
// no accounting of room inside them; under -f 0 a few zero blocks ahead of the data are
// preallocated for the fsync's sake, open.ts, and given back on ENOSPC) in a separate
// file, DIR/ballast, sized for one short record per live job plus slack, plus
// WRITE_RESERVE:
//   * before a put (or any write that is not a delete) the ballast must already be
//     big enough for the job count after it, reserve included; growing it is what
//     fails when the disk is full, so such writes are refused (with beanstalkd's
//     reply) while deletes still have room;
//   * records are accepted into a pending batch and written later with one append
//     (binlog.ts), when the command can no longer be refused. At most WRITE_RESERVE
//     bytes of records other than deletes are pending at a time (the log writes
//     before taking more), so when that write hits ENOSPC, the ballast gives back
//     the batch's size (whole chunks) and the write is retried, and it fits: the
//     reserve was on disk when the records were accepted. The next put then finds
//     the ballast short, cannot grow it on a full disk, and is refused;
//   * the rotation a delete needs gives back a chunk on ENOSPC the same way.
// It is filled with pseudo-random bytes, not zeros, so compressing or deduplicating
// file systems really allocate it. It survives restarts (no rewrite at each start)
// and shrinks when it is far above what the live jobs need.
import type { AppendFile, Files } from "../../files.ts";
import { errorText } from "../../files.ts";
import { SHORT_RECORD_SIZE } from "./codec.ts";

export const BALLAST_CHUNK = 16 * 1024;

/**
 * Pending bytes of records other than deletes the ballast stands for: the log writes
 * what is pending before it exceeds this, and writes a record bigger than this on its
 * own, at once (so a full disk refuses it, without taking from the ballast). Covers a
 * job of beanstalkd's default -z (65535).
 */
export const WRITE_RESERVE = 128 * 1024;

/** Ballast bytes needed for `live` jobs' deletes: their short records plus one spare chunk, whole chunks. */
export function ballastFor(live: number): number {
  return Math.ceil((live * SHORT_RECORD_SIZE + BALLAST_CHUNK) / BALLAST_CHUNK) * BALLAST_CHUNK;
}

export class Ballast {
  #files: Files;
  #path: string;
  #log: (msg: string) => void;
  #file: AppendFile | undefined;
  #fill = new Uint8Array(BALLAST_CHUNK);
  #seed = 0x9e3779b9;
  #complained = false;

  constructor(files: Files, path: string, log: (msg: string) => void) {
    this.#files = files;
    this.#path = path;
    this.#log = log;
  }

  get size(): number {
    return this.#file?.size() ?? 0;
  }

  /** Make sure the ballast covers `live` jobs and the write reserve; false when the disk has no room for it. */
  ensure(live: number): boolean {
    const need = ballastFor(live) + WRITE_RESERVE;
    try {
      this.#file ??= this.#files.open(this.#path, "any");
    } catch (e) {
      return this.#fail(`cannot open ${this.#path}: ${errorText(e)}`);
    }
    const f = this.#file;
    const size = f.size();
    if (size > 2 * need + 4 * BALLAST_CHUNK) {
      try {
        f.truncate(need);
      } catch {
        // keeping too much is harmless
      }
      return true;
    }
    if (size >= need) return true;
    while (f.size() < need) {
      try {
        f.append(this.#randomChunk(Math.min(BALLAST_CHUNK, need - f.size())));
      } catch (e) {
        try {
          f.truncate(Math.floor(f.size() / BALLAST_CHUNK) * BALLAST_CHUNK);
        } catch {
          // the size stays whatever it is; the next ensure() looks again
        }
        return this.#fail(`cannot grow ${this.#path}: ${errorText(e)}`);
      }
    }
    this.#complained = false;
    return true;
  }

  /** Give back at least `bytes` (a whole chunk at least); false when nothing is left. */
  release(bytes: number): boolean {
    const f = this.#file;
    if (!f || f.size() === 0) return false;
    const give = Math.ceil(Math.max(bytes, 1) / BALLAST_CHUNK) * BALLAST_CHUNK;
    try {
      f.truncate(Math.max(0, f.size() - give));
      return true;
    } catch (e) {
      this.#log(`binlog: cannot shrink ${this.#path}: ${errorText(e)}`);
      return false;
    }
  }

  close(): void {
    try {
      this.#file?.close();
    } catch {
      // nothing to do at close
    }
    this.#file = undefined;
  }

  #fail(msg: string): boolean {
    if (!this.#complained) this.#log(`binlog: ${msg}; refusing new jobs until there is room`);
    this.#complained = true;
    return false;
  }

  #randomChunk(n: number): Uint8Array {
    const b = this.#fill;
    let x = this.#seed;
    for (let i = 0; i + 4 <= n; i += 4) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      b[i] = x;
      b[i + 1] = x >>> 8;
      b[i + 2] = x >>> 16;
      b[i + 3] = x >>> 24;
    }
    this.#seed = x;
    return b.subarray(0, n);
  }
}
