// The log's files: which exist, which one is written, how many bytes each holds and
// which live jobs have their newest full record in it; appending with rollback,
// rotation, fsync of every file with unsynced bytes, and removal of dead files
// from the oldest end (when, is binlog.ts's rule: see collect()).
//
// Positions count bytes appended since open across all files; a file's lastWrite
// is the position after its last append, so "does it need an fsync" is
// lastWrite > synced. A position p in a file that starts at s is durable once a
// group-commit round up to p has succeeded (each round fsyncs the directory too
// when names changed), or once a blocking fsync (syncNow) covered p and the file's
// name is on disk: a round that began after the file was created has succeeded, or
// a blocking fsync of the directory (syncNow does one) came after its creation.
//
// Records are not written one by one: add() puts them in a pending buffer (pending.ts) (sizes
// and positions move at once, as if written) and flush() appends the whole buffer
// with one write. Everything that needs the bytes in the file flushes first:
// rotation (the buffer belongs to the current file), removal of a dead file, the
// blocking fsync, close; the binlog flushes before each group-commit round.
// Positions therefore count pending bytes too; a sync covers a position only after
// the flush that wrote it. A failed flush cuts the file back (as a failed append
// did), takes the lost bytes out of the sizes and tells the binlog (onFlush), which
// undoes what must not outlive them; positions stay where they are (a gap).
import type { AppendFile, Files, Preallocation } from "../../files.ts";
import { closeQuietly, errorCode, errorText, joinPath } from "../../files.ts";
import { encodeFileHeader, FILE_HEADER_SIZE, LOG_NAME_PREFIX, saltState } from "./codec.ts";
import { Pending } from "./pending.ts";
import { type LogFile, logFile, type Release } from "./log_file.ts";

export class Segments {
  #files: Files;
  #dir: string;
  #log: (msg: string) => void;
  /** Whether fsyncs happen at all (false only with -F and no durable acks). */
  #syncing: boolean;
  /** For new log files (open.ts: under -f 0 only). */
  #preallocate: Preallocation | undefined;
  #list: LogFile[] = [];
  #bySeq = new Map<number, LogFile>();
  #closing: LogFile[] = [];
  #dirDirty = false;
  #complained = false;
  current: LogFile | undefined;
  nextSeq: number;
  position = 0;
  /** Bytes in all log files. */
  bytes = 0;
  /** Bytes of dead files waiting for a sync before removal. */
  pendingDead = 0;
  /** Position covered by the last blocking fsync (syncNow) of every written file. */
  dataSynced = 0;
  /** Position of the last blocking directory fsync: names of files started before it are on disk. */
  namesSynced = 0;
  /** Files whose fsync a running syncAll() awaits: their handles must stay open. */
  #inSync = new Set<LogFile>();
  /** Records added but not yet written, all for the current file. */
  readonly #pending = new Pending();
  /** Gives back ballast space when a flush hits ENOSPC. */
  ballast: Release | undefined;
  /** After every flush that had bytes to write: whether they are in the file now. */
  onFlush: ((ok: boolean) => void) | undefined;
  /** After a new file is started: what every file must begin with goes in (standing.ts). */
  onRotate: (() => void) | undefined;

  constructor(
    files: Files,
    dir: string,
    log: (msg: string) => void,
    syncing: boolean,
    recovered: ReadonlyArray<{ seq: number; path: string; size: number }>,
    nextSeq: number,
    preallocate?: Preallocation,
  ) {
    this.#files = files;
    this.#dir = dir;
    this.#log = log;
    this.#syncing = syncing;
    this.#preallocate = preallocate;
    this.nextSeq = nextSeq;
    for (const r of recovered) {
      const f = logFile(r.seq, r.path, r.size);
      this.#list.push(f);
      this.#bySeq.set(f.seq, f);
      this.bytes += f.size;
    }
  }

  get oldest(): LogFile | undefined {
    return this.#list[0];
  }

  get count(): number {
    return this.#list.length;
  }

  bySeq(seq: number): LogFile | undefined {
    return this.#bySeq.get(seq);
  }

  /** Every file, oldest first (the current one last). */
  get files(): readonly LogFile[] {
    return this.#list;
  }

  /** Make sure the current file can take `size` more bytes, rotating if it cannot. */
  room(size: number, maxFileSize: number, idHigh: number, release?: Release): boolean {
    const c = this.current;
    if (c && !c.broken && (c.size + size <= maxFileSize || c.size <= FILE_HEADER_SIZE)) return true;
    return this.rotate(idHigh, release);
  }

  /**
   * Start tubeway.<nextSeq> with a fresh salt and the id high-water in its header.
   * Pending records of the current file are written first; false (no rotation) if
   * that fails.
   */
  rotate(idHigh: number, release?: Release): boolean {
    if (!this.flush()) return false;
    for (;;) {
      const seq = this.nextSeq;
      const path = joinPath(this.#dir, LOG_NAME_PREFIX + seq);
      let h: AppendFile;
      try {
        h = this.#files.open(path, "new", this.#preallocate);
      } catch (e) {
        if (errorCode(e) === "EEXIST") {
          this.nextSeq++;
          continue;
        }
        if (errorCode(e) === "ENOSPC" && release?.(4096)) continue;
        return this.#complain(`binlog: cannot create ${path}: ${errorText(e)}`);
      }
      const salt = crypto.getRandomValues(new Uint32Array(1))[0]!;
      try {
        h.append(encodeFileHeader({ seq, idHighWater: idHigh, salt }));
      } catch (e) {
        closeQuietly(h);
        try {
          this.#files.unlink(path);
        } catch {
          // an empty or all-zero file is removed at the next start anyway
        }
        if (errorCode(e) === "ENOSPC" && release?.(4096)) continue;
        return this.#complain(`binlog: cannot write ${path}: ${errorText(e)}`);
      }
      this.nextSeq = seq + 1;
      this.#retire(this.current);
      const start = this.position;
      this.position += FILE_HEADER_SIZE;
      this.bytes += FILE_HEADER_SIZE;
      const f = logFile(seq, path, FILE_HEADER_SIZE, start);
      f.seed = saltState(salt);
      f.handle = h;
      f.lastWrite = this.position;
      this.#list.push(f);
      this.#bySeq.set(seq, f);
      this.current = f;
      this.#dirDirty = true;
      this.#complained = false;
      this.onRotate?.();
      return true;
    }
  }

  /** Bytes added but not yet written. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Where `n` bytes of records for the current file go in `buf` (room() must have been
   * called): encode them there, then commit(n). Nothing is added without the commit.
   */
  claim(n: number): number {
    return this.#pending.claim(n);
  }

  /** The pending buffer (valid until the next claim()) and a view of all of it. */
  get buf(): Uint8Array {
    return this.#pending.buf;
  }

  get view(): DataView {
    return this.#pending.view;
  }

  /**
   * The `n` bytes encoded at claim(n)'s offset are added: they count in sizes and
   * positions at once and are written by the next flush(). `covered`: the ballast
   * stands for these bytes, so it gives back room for them if their write hits ENOSPC.
   */
  commit(n: number, covered: boolean): void {
    const f = this.current!;
    this.#pending.commit(n, covered);
    f.size += n;
    this.bytes += n;
    this.position += n;
    f.lastWrite = this.position;
  }

  /**
   * Write every pending record to the current file with one append. On failure the
   * file is cut back to where it was, so no partial record stays behind, and the
   * records are dropped (false); on ENOSPC, the ballast gives back room for the
   * records it stands for, once, and the write is retried. An error other than ENOSPC
   * (or a failed cut) marks the file broken: the next write starts a new one.
   */
  flush(): boolean {
    const n = this.#pending.size;
    if (n === 0) return true;
    const f = this.current!;
    const h = f.handle!;
    const taken = this.#pending.take();
    const bytes = taken.bytes;
    const before = f.size - n;
    let budget = taken.covered;
    for (;;) {
      try {
        h.append(bytes);
        break;
      } catch (e) {
        const code = errorCode(e);
        let clean = true;
        try {
          h.truncate(before);
        } catch {
          clean = false;
          f.broken = true;
        }
        if (code === "ENOSPC" && clean && budget > 0 && this.ballast?.(budget)) {
          budget = 0;
          continue;
        }
        if (code !== "ENOSPC") f.broken = true;
        const now = clean ? before : h.size();
        this.bytes += now - f.size;
        f.size = now;
        this.#pending.shrink();
        this.#complain(`binlog: cannot write ${f.path}: ${errorText(e)}`);
        this.onFlush?.(false);
        return false;
      }
    }
    this.#pending.shrink();
    this.#complained = false;
    this.onFlush?.(true);
    return true;
  }

  /**
   * Remove dead files (no live job's newest full record in them) from the oldest
   * end. Without fsyncs at all they go at once. Otherwise a dead file goes once a
   * sync up to `synced` covers either its death, or, when `early` (the caller
   * vouches that the id high-water is durable elsewhere), its needSync: every job
   * that left it while live then has a durable full record in a newer file, and
   * every other job it holds is deleted (a lost delete record loses nothing more:
   * the job is gone with this file, as acknowledged).
   */
  collect(synced: number, early = false): void {
    for (;;) {
      const f = this.#list[0];
      if (!f || f === this.current || f.live > 0) break;
      this.#markDead(f);
      const go = !this.#syncing || this.#durable(f.deadAt!, f.deadStart, synced) ||
        (early && this.#durable(f.needSync, f.needStart, synced));
      if (!go) break;
      // the records that made it dead (moves, deletes) go to the file before it goes
      if (!this.flush()) break;
      this.#remove(f);
    }
    let pending = 0;
    for (const f of this.#list) {
      if (f === this.current || f.live > 0) break;
      this.#markDead(f);
      pending += f.size;
    }
    this.pendingDead = pending;
  }

  /** A live job whose newest full record was in `f` has just got a newer one (ending at position). */
  left(f: LogFile): void {
    f.needSync = this.position;
    f.needStart = this.current?.start ?? this.position;
  }

  /**
   * Blocking fsync of every file with bytes after `synced` (and after the last
   * syncNow), then of the directory; dataSynced and namesSynced then cover
   * everything written. The directory too: the moves that made files dead are
   * mostly in a file created after the running round began, and if only a later
   * round could put its name on disk, dead files would pile up for as long as
   * rounds take to end (a busy event loop), however many blocking fsyncs ran.
   * Throws on failure.
   */
  syncNow(synced: number): void {
    this.flush();
    const from = Math.max(synced, this.dataSynced);
    for (const f of [...this.#closing, ...(this.current ? [this.current] : [])]) {
      if (f.handle && f.lastWrite > from) f.handle.syncNow();
    }
    this.#files.syncDirNow(this.#dir);
    this.dataSynced = this.namesSynced = this.position;
  }

  #markDead(f: LogFile): void {
    if (f.deadAt !== undefined) return;
    f.deadAt = this.position;
    f.deadStart = this.current?.start ?? this.position;
  }

  #durable(p: number, start: number, synced: number): boolean {
    return synced >= p || (this.dataSynced >= p && (synced > start || this.namesSynced > start));
  }

  /**
   * At startup, files left by the previous process may still be only in the page
   * cache: fsync them before any is removed (now for being dead, or later, once
   * compaction has moved their jobs: the rounds fsync only files written since).
   */
  collectAtStart(): void {
    // nor before a round has fsynced the directory: the previous process may have
    // died before its names were on disk (the rotation at startup marks it dirty)
    for (const f of this.#list) if (!f.handle) f.needSync = this.position;
    if (this.#syncing) {
      for (const f of this.#list) {
        if (f.handle) continue;
        try {
          const h = this.#files.open(f.path, "any");
          h.syncNow();
          h.close();
        } catch (e) {
          this.#log(`binlog: cannot fsync ${f.path}: ${errorText(e)}`);
        }
      }
    }
    this.collect(-1);
  }

  /** fsync every file with bytes after `synced` (and the directory if names changed); throws on failure. */
  async syncAll(synced: number): Promise<void> {
    const target = this.position;
    const batch: LogFile[] = [];
    const c = this.current;
    if (c?.handle && c.lastWrite > synced) batch.push(c);
    for (const f of this.#closing) if (f.lastWrite > synced) batch.push(f);
    const dir = this.#dirDirty;
    this.#dirDirty = false;
    const jobs: Promise<void>[] = batch.map((f) => f.handle!.sync());
    if (dir) jobs.push(this.#files.syncDir(this.#dir));
    for (const f of batch) this.#inSync.add(f);
    try {
      await Promise.all(jobs);
    } catch (e) {
      if (dir) this.#dirDirty = true;
      throw e;
    } finally {
      // files removed meanwhile kept their handle open for this fsync
      for (const f of batch) {
        this.#inSync.delete(f);
        if (this.#bySeq.get(f.seq) !== f) {
          closeQuietly(f.handle);
          f.handle = undefined;
        }
      }
    }
    // retired files now fully on disk need no handle any more; a file retired while
    // this sync ran may have bytes it did not cover
    this.#closing = this.#closing.filter((f) => {
      if (f.lastWrite > target) return true;
      closeQuietly(f.handle);
      f.handle = undefined;
      return false;
    });
  }

  /** Drop every open handle without syncing (after a failed fsync); a new file must follow. */
  abandonUnsynced(): void {
    this.flush(); // the checkpoint that follows supersedes these records; they just must not linger
    for (const f of [...this.#closing, ...(this.current ? [this.current] : [])]) {
      closeQuietly(f.handle);
      f.handle = undefined;
    }
    this.#closing = [];
    this.current = undefined;
  }

  /** Write what is pending, then close everything, fsyncing first when `sync`; false if either failed. */
  closeAll(sync: boolean): boolean {
    let ok = this.flush();
    for (const f of [...this.#closing, ...(this.current ? [this.current] : [])]) {
      if (sync && f.handle) {
        try {
          f.handle.syncNow();
        } catch (e) {
          ok = false;
          this.#log(`binlog: fsync of ${f.path} failed at close: ${errorText(e)}`);
        }
      }
      closeQuietly(f.handle);
      f.handle = undefined;
    }
    this.#closing = [];
    return ok;
  }

  #retire(f: LogFile | undefined): void {
    if (!f?.handle) return;
    if (this.#syncing) {
      this.#closing.push(f);
    } else {
      closeQuietly(f.handle);
      f.handle = undefined;
    }
  }

  #remove(f: LogFile): void {
    this.#list.shift();
    this.#bySeq.delete(f.seq);
    this.#closing = this.#closing.filter((x) => x !== f);
    // an fsync still running on it would fail (EBADF) and force a checkpoint
    if (!this.#inSync.has(f)) {
      closeQuietly(f.handle);
      f.handle = undefined;
    }
    this.bytes -= f.size;
    try {
      this.#files.unlink(f.path);
    } catch (e) {
      if (errorCode(e) !== "ENOENT") this.#log(`binlog: cannot remove ${f.path}: ${errorText(e)}`);
    }
    this.#dirDirty = true;
  }

  #complain(msg: string): false {
    if (!this.#complained) this.#log(msg);
    this.#complained = true;
    return false;
  }
}
