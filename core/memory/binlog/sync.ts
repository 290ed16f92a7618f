// The fsync side of the log: group commit, the -f/-F policy, and what a failed fsync
// leads to. Kept apart from binlog.ts (which appends records) because it answers a
// different question: not what goes into the files, but when what is in them becomes
// durable, and so when dead files may go and when durable acks may leave.
//
// Group commit. Positions are bytes appended to the log since open (across files),
// so "everything written before this call" is just a number to wait for.
//
// wait() records the current position and resolves once a sync that started at or
// after it succeeds. The sync itself starts in a microtask, so every wait() made in
// the same synchronous turn (one batch of pipelined commands) shares it; while a
// sync is in flight, new waiters gather for the next one, which starts as soon as
// the running one ends. So under load each fsync covers everything that arrived
// during the previous one: one fsync per disk round trip, however many clients.
//
// No timers here: the interval policy (-f MS) is applied after each flush
// (Fsync.afterFlush) and by tick(), which the server's single timer calls.
import { errorText } from "../../files.ts";
import type { Clock } from "../../clock.ts";
import { FSYNC_BOUNDS_MS, Histogram } from "../../histogram.ts";
import type { Segments } from "./segments.ts";
import type { IdMark } from "./ids.ts";
import type { BinlogOptions } from "./options.ts";

/** Performs one sync; resolves to the position it made durable, or false. */
export type SyncRun = () => Promise<number | false>;

interface Waiter {
  target: number;
  resolve: (ok: boolean) => void;
}

export class GroupCommit {
  #run: SyncRun;
  #position: () => number;
  #synced: number;
  #waiters: Waiter[] = [];
  #scheduled = false;
  #busy = false;
  #again = false;
  /** Completed sync runs (successful or not). */
  runs = 0;

  /** `synced`: the position already on disk when the log opens (0: nothing yet). */
  constructor(run: SyncRun, position: () => number, synced = 0) {
    this.#run = run;
    this.#position = position;
    this.#synced = synced;
  }

  /** Position known to be on disk. */
  get synced(): number {
    return this.#synced;
  }

  /** True while a sync is running or about to start. */
  get active(): boolean {
    return this.#busy || this.#scheduled;
  }

  /** Resolves true once everything written before the call is durable, false if that failed. */
  wait(): Promise<boolean> {
    const target = this.#position();
    if (target <= this.#synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      this.#waiters.push({ target, resolve });
      this.kick();
    });
  }

  /** Start a sync soon (or right after the running one) if anything is unsynced. */
  kick(): void {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => void this.#start());
  }

  /** Everything is durable now (a blocking sync at close): settle all waiters. */
  settleAll(ok: boolean): void {
    if (ok) this.#synced = this.#position();
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w.resolve(ok);
  }

  async #start(): Promise<void> {
    this.#scheduled = false;
    if (this.#busy) return;
    const startedAt = this.#position();
    if (startedAt <= this.#synced && this.#waiters.length === 0) return;
    this.#busy = true;
    this.#again = false;
    let result: number | false = false;
    try {
      result = await this.#run();
    } catch {
      result = false;
    }
    this.#busy = false;
    this.runs++;
    if (result !== false) this.#synced = Math.max(this.#synced, result);
    const keep: Waiter[] = [];
    for (const w of this.#waiters) {
      if (w.target <= this.#synced) w.resolve(true);
      else if (result === false && w.target <= startedAt) w.resolve(false);
      else keep.push(w);
    }
    this.#waiters = keep;
    if (keep.length > 0 || this.#again) this.kick();
  }
}

/** What the fsync side needs of the log (binlog.ts). */
export interface FsyncHost {
  readonly segs: Segments;
  readonly ids: IdMark;
  readonly opts: BinlogOptions;
  readonly clock: Pick<Clock, "now">;
  /** ids.N durably covers every id handed out (README.md: early removal). */
  idsCovered(): boolean;
  /** After a failed fsync: every live job again in a fresh file, flushed; false if that failed. */
  rewriteLive(): boolean;
  /** An fsync failed; `stopped`: the log counts as not writable until a flush works again. */
  diskError(stopped: boolean): void;
}

/** When the log fsyncs (-f MS, -F, durable acks, pressure from dead files) and the rounds themselves. */
export class Fsync {
  readonly #h: FsyncHost;
  readonly #commit: GroupCommit;
  /** The host's, read on every write (tick()). */
  readonly #segs: Segments;
  readonly #every: number | "never";
  #closed = false;
  #lastSyncMs = -Infinity;
  #relieveQueued = false;
  /** An fsync failed: the next round first rewrites every live job into a new file. */
  needCheckpoint = false;
  readonly histogram = new Histogram(FSYNC_BOUNDS_MS);

  constructor(host: FsyncHost) {
    this.#h = host;
    this.#segs = host.segs;
    this.#every = host.opts.fsyncMs;
    this.#commit = new GroupCommit(() => this.#round(), () => host.segs.position);
  }

  /** The log closed: no more rounds. */
  close(): void {
    this.#closed = true;
  }

  /** Position known to be on disk. */
  get synced(): number {
    return this.#commit.synced;
  }

  kick(): void {
    this.#commit.kick();
  }

  wait(): Promise<boolean> {
    return this.#commit.wait();
  }

  settleAll(ok: boolean): void {
    this.#commit.settleAll(ok);
  }

  /** Called after every logged change too (core/memory/store.ts logged()), so it reads fields only. */
  tick(nowMs: number): number | undefined {
    const every = this.#every;
    if (this.#closed || every === "never") return undefined;
    const segs = this.#segs;
    if (segs.position <= this.#commit.synced && segs.pendingDead === 0) return undefined;
    if (this.#commit.active) return Math.max(every, 5);
    const due = this.#lastSyncMs + every;
    if (nowMs < due) return due - nowMs;
    this.#lastSyncMs = nowMs;
    this.#commit.kick();
    return Math.max(every, 5);
  }

  /**
   * After a flush that wrote records: fsync when the -f interval has passed (as 1.12
   * does after every write; once per batch is enough, the fsync starts after the batch
   * anyway).
   */
  afterFlush(): void {
    const every = this.#every;
    if (every !== "never" && !this.#closed) {
      const now = this.#h.clock.now();
      if (now - this.#lastSyncMs >= every) {
        this.#lastSyncMs = now;
        this.#commit.kick();
      }
    }
  }

  /**
   * Dead files wait for a sync: ask for it now rather than at the next -f interval, so
   * the disk they hold is bounded by one fsync's latency, not by the interval; and when
   * even that lets them pass -s, relieve the pressure at the end of this turn.
   */
  hurry(): void {
    this.#commit.kick();
    if (this.#h.segs.pendingDead > this.#h.opts.maxFileSize && !this.#relieveQueued) {
      this.#relieveQueued = true;
      queueMicrotask(() => this.#relieve());
    }
  }

  /**
   * Dead files waiting for a sync hold more than -s: writes are outrunning the
   * disk (an fsync round takes longer than it takes to write -s bytes), and only
   * waiting would let the log grow with fsync latency. So fsync now, blocking, the
   * files and the directory: the waiting files can then go at once (the names
   * too, because the file holding the moves is usually newer than the running
   * round, which ends late when the event loop is busy), and while the disk is
   * slow the blocking fsyncs hold the writers back. At most once per turn, and
   * only under this pressure (with a small -s and a fast writer).
   */
  #relieve(): void {
    this.#relieveQueued = false;
    const h = this.#h;
    if (this.#closed || this.needCheckpoint || h.segs.pendingDead <= h.opts.maxFileSize) return;
    try {
      const startMs = h.clock.now();
      h.segs.syncNow(this.#commit.synced);
      this.histogram.observe(h.clock.now() - startMs);
    } catch (e) {
      h.diskError(false);
      h.opts.log(`binlog: fsync failed: ${errorText(e)}; rewriting live jobs into a new file`);
      this.needCheckpoint = true;
      this.#commit.kick();
      return;
    }
    h.segs.collect(this.#commit.synced, h.idsCovered());
  }

  /** One group-commit round: fsync every file with unsynced bytes (and ids.N), then collect. */
  async #round(): Promise<number | false> {
    const h = this.#h;
    for (let attempt = 0; attempt < 2; attempt++) {
      if (this.#closed) return false;
      if (this.needCheckpoint && !this.#checkpoint()) return false;
      // a sync covers only what is in the files; records lost here fail the round
      if (!h.segs.flush()) return false;
      this.#lastSyncMs = h.clock.now();
      const target = h.segs.position;
      const ids = h.ids.sync(); // never throws
      const startMs = h.clock.now();
      try {
        await h.segs.syncAll(this.#commit.synced);
        this.histogram.observe(h.clock.now() - startMs);
      } catch (e) {
        h.diskError(true);
        await ids;
        if (this.#closed) return false;
        h.opts.log(`binlog: fsync failed: ${errorText(e)}; rewriting live jobs into a new file`);
        this.needCheckpoint = true;
        continue;
      }
      await ids;
      if (!this.#closed) h.segs.collect(target, h.idsCovered());
      // files that died while this fsync ran are handled by the next round
      if (!this.#closed && h.segs.pendingDead > 0) this.#commit.kick();
      return target;
    }
    return false;
  }

  /** After a failed fsync: every live job again in a fresh file, older files then collectable. */
  #checkpoint(): boolean {
    this.needCheckpoint = true;
    if (!this.#h.rewriteLive()) return false;
    this.needCheckpoint = false;
    return true;
  }
}
