// The id high-water, kept on disk outside the log files: DIR/ids.N.
//
// Every log file carries the id high-water (its header, and the id reservation
// records), so recovery never hands out an id twice. But dead log files are removed
// as soon as nothing live depends on them (binlog.ts), usually before any fsync has
// covered the files that follow them: under put/delete churn every log file that an
// fsync ever reached may already be gone, and after a power cut the survivors could
// hold no high-water at all. So each reservation is also appended here, this file is
// fsynced in the same group-commit round as the log, and a log file is removed early
// only while the value made durable here covers every id handed out.
//
// Format: a binlog file header (seq N, the high-water when the file was started),
// then id reservation records, as in codec.ts. Each start writes ids.<max+1>;
// a file past ROLL_SIZE is followed by a new one; older files are removed once the
// newest one's header is on disk (file and directory fsynced). Recovery takes the
// largest value that verifies in any of them (recover.ts).
import type { AppendFile, Files } from "../../files.ts";
import { closeQuietly, errorCode, errorText, joinPath } from "../../files.ts";
import { encodeFileHeader, encodeIds, FILE_HEADER_SIZE, IDS_RECORD_SIZE, saltState } from "./codec.ts";

/** Ids reserved per id record; a restart skips at most this many. */
export const ID_BLOCK = 4096;

/** Start a new ids file rather than grow one past this (about 170 reservations). */
export const ROLL_SIZE = 4096;

interface Gen {
  path: string;
  handle: AppendFile | undefined;
  seed: number;
  size: number;
  /** Highest value written to this file. */
  written: number;
  /** Highest value an fsync of this file has covered; -1 before the first. */
  synced: number;
  /** A directory fsync has covered its creation. */
  named: boolean;
}

export class IdMark {
  #files: Files;
  #dir: string;
  #log: (msg: string) => void;
  #syncing: boolean;
  /** Files written by this process, oldest first; the last one is appended to. */
  #gens: Gen[] = [];
  /** Files left by earlier processes: removed once one of ours is durable. */
  #stale: string[];
  #nextSeq: number;
  #dirDirty = false;
  #durable = 0;
  #running: Promise<void> | undefined;
  #complained = false;
  #closed = false;

  constructor(
    files: Files,
    dir: string,
    log: (msg: string) => void,
    syncing: boolean,
    found: ReadonlyArray<{ path: string }>,
    nextSeq: number,
  ) {
    this.#files = files;
    this.#dir = dir;
    this.#log = log;
    this.#syncing = syncing;
    this.#stale = found.map((f) => f.path);
    this.#nextSeq = nextSeq;
  }

  /** Highest value known to be on disk here (its file and its name fsynced); 0 before that. */
  get durable(): number {
    return this.#durable;
  }

  /** Number of ids files this process knows of (for tests). */
  get files(): number {
    return this.#gens.length + this.#stale.length;
  }

  /** Write a new high-water (the first call starts a new file); false when it could not be written. */
  record(high: number): boolean {
    if (this.#closed) return false;
    const g = this.#gens.at(-1);
    if (g?.handle && g.size + IDS_RECORD_SIZE <= ROLL_SIZE) {
      try {
        g.handle.append(encodeIds(high, g.seed));
        g.size += IDS_RECORD_SIZE;
        g.written = high;
        this.#complained = false;
        return true;
      } catch (e) {
        this.#complain(`binlog: cannot write ${g.path}: ${errorText(e)}`);
        // a torn record fails its checksum at recovery; this file takes no more
        try {
          g.handle.truncate(g.size);
        } catch {
          // left as it is
        }
        g.size = Infinity;
      }
    }
    return this.#start(high);
  }

  /**
   * fsync what is not yet durable (and the directory after a new file); never
   * throws. A failure is logged and the high-water goes into a new file, which the
   * next round makes durable; until then `durable` does not advance.
   */
  sync(): Promise<void> {
    if (!this.#running) {
      this.#running = this.#syncOnce().finally(() => (this.#running = undefined));
    }
    return this.#running;
  }

  /** Close every file, fsyncing first when `sync`. */
  close(sync: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const g of this.#gens) {
      if (!g.handle) continue;
      if (sync && this.#syncing) {
        try {
          g.handle.syncNow();
        } catch (e) {
          this.#log(`binlog: fsync of ${g.path} failed at close: ${errorText(e)}`);
        }
      }
      closeQuietly(g.handle);
      g.handle = undefined;
    }
  }

  async #syncOnce(): Promise<void> {
    if (this.#closed || !this.#syncing) return;
    const batch = this.#gens.filter((g) => g.handle && g.written > g.synced).map((g) => ({ g, value: g.written }));
    const dir = this.#dirDirty;
    const naming = dir ? this.#gens.filter((g) => !g.named) : [];
    this.#dirDirty = false;
    if (batch.length === 0 && !dir) return;
    try {
      await Promise.all([
        ...batch.map(({ g }) => g.handle!.sync()),
        ...(dir ? [this.#files.syncDir(this.#dir)] : []),
      ]);
    } catch (e) {
      if (this.#closed) return;
      if (dir) this.#dirDirty = true;
      this.#log(`binlog: fsync of the id high-water failed: ${errorText(e)}; writing it into a new file`);
      // pages not yet written back may have been dropped: do not trust these files' tails
      for (const { g } of batch) {
        closeQuietly(g.handle);
        g.handle = undefined;
      }
      const high = Math.max(0, ...this.#gens.map((g) => g.written));
      this.#start(high);
      return;
    }
    for (const { g, value } of batch) g.synced = Math.max(g.synced, value);
    for (const g of naming) g.named = true;
    for (const g of this.#gens) if (g.named) this.#durable = Math.max(this.#durable, g.synced);
    this.#prune();
  }

  /** Start ids.<next> holding `high` in its header. */
  #start(high: number): boolean {
    for (;;) {
      const seq = this.#nextSeq;
      const path = joinPath(this.#dir, `ids.${seq}`);
      let h: AppendFile;
      try {
        h = this.#files.open(path, "new");
      } catch (e) {
        if (errorCode(e) === "EEXIST") {
          this.#nextSeq++;
          continue;
        }
        return this.#complain(`binlog: cannot create ${path}: ${errorText(e)}`);
      }
      const salt = crypto.getRandomValues(new Uint32Array(1))[0]!;
      try {
        h.append(encodeFileHeader({ seq, idHighWater: high, salt }));
      } catch (e) {
        closeQuietly(h);
        try {
          this.#files.unlink(path);
        } catch {
          // an empty or all-zero file is removed at the next start anyway
        }
        return this.#complain(`binlog: cannot write ${path}: ${errorText(e)}`);
      }
      this.#nextSeq = seq + 1;
      this.#gens.push({
        path,
        handle: h,
        seed: saltState(salt),
        size: FILE_HEADER_SIZE,
        written: high,
        synced: -1,
        named: false,
      });
      this.#dirDirty = true;
      this.#complained = false;
      // without fsyncs nothing waits for one: only the newest file is kept
      if (!this.#syncing) this.#prune();
      return true;
    }
  }

  /** Remove every file older than the newest one whose header is durable. */
  #prune(): void {
    let keep = this.#gens.length - 1;
    if (this.#syncing) {
      while (keep >= 0 && !(this.#gens[keep]!.named && this.#gens[keep]!.synced >= 0)) keep--;
    }
    if (keep < 0) return;
    const old = [...this.#stale, ...this.#gens.slice(0, keep).map((g) => g.path)];
    for (const g of this.#gens.slice(0, keep)) closeQuietly(g.handle);
    this.#gens = this.#gens.slice(keep);
    this.#stale = [];
    for (const path of old) {
      try {
        this.#files.unlink(path);
      } catch (e) {
        if (errorCode(e) !== "ENOENT") this.#log(`binlog: cannot remove ${path}: ${errorText(e)}`);
      }
    }
    // removals need no directory fsync: a file that comes back holds a lower value
  }

  #complain(msg: string): false {
    if (!this.#complained) this.#log(msg);
    this.#complained = true;
    return false;
  }
}
