// The write-ahead log behind `-b DIR` (opened by open.ts): the write path, rotation, collection of
// dead files; the compaction policy is compaction.ts, when the files are fsynced (and what a failed
// fsync leads to) sync.ts, the counts of what was written tally.ts. Why it works the way it does
// (batching, the disk-full reserve, which files may go when, ids): README.md in this folder.
import { errorText } from "../../files.ts";
import type { JobRecord, JobState, ScheduleRecord, TubeLimits, Wal } from "../wal.ts";
import type { Clock } from "../../clock.ts";
import {
  encodeIdsAt,
  encodeJobAt,
  encodePurgeAt,
  fullRecordSize,
  GONE,
  IDS_RECORD_SIZE,
  purgeRecordSize,
  type ScheduleRun,
  SHORT_RECORD_SIZE,
} from "./codec.ts";
import type { Encode, PolicyRecord } from "./codec.ts";
import { Standing } from "./standing.ts";
import { type Ballast, WRITE_RESERVE } from "./ballast.ts";
import { Compaction } from "./compaction.ts";
import { Fsync } from "./sync.ts";
import { WriteTally } from "./tally.ts";
import type { Segments } from "./segments.ts";
import { ID_BLOCK, type IdMark } from "./ids.ts";
import type { Homes, JobInfo } from "./homes.ts";
import type { BinlogOptions, BinlogParts, LiveLookup } from "./options.ts";

export class Binlog implements Wal {
  readonly logs = true;
  readonly durableAcks: boolean;
  #opts: BinlogOptions;
  #live: LiveLookup;
  #unlock: () => void;
  #segs: Segments;
  #homes: Homes;
  #idHigh: number;
  /** Highest id of any job put (or recovered): every id ever handed out is <= this. */
  #maxPutId: number;
  #ids: IdMark;
  #buryOrder: number;
  #ballast: Ballast;
  #fsync: Fsync;
  #compaction: Compaction;
  #closed = false;
  /** Records and bytes written, failures (tally.ts). */
  readonly #tally = new WriteTally();
  #flushQueued = false;
  /** A caller will flush() this turn (hold()): the end-of-turn flush leaves its records to it. */
  #held = false;
  /** Policies, limits and schedules, restated at the start of every new file so that collection never drops one. */
  readonly #standing: Standing;

  constructor(opts: BinlogOptions, clock: Pick<Clock, "now">, live: LiveLookup, unlock: () => void, p: BinlogParts) {
    this.#opts = opts;
    this.durableAcks = opts.durableAcks;
    this.#live = live;
    this.#unlock = unlock;
    this.#idHigh = p.maxId;
    this.#maxPutId = p.maxId;
    this.#buryOrder = p.maxBuryOrder;
    this.#segs = p.segs;
    this.#ids = p.ids;
    this.#homes = p.homes;
    this.#ballast = p.ballast;
    this.#segs.ballast = this.#release;
    this.#segs.onFlush = (ok) => this.#flushed(ok);
    this.#fsync = new Fsync({
      segs: this.#segs,
      ids: this.#ids,
      opts,
      clock,
      idsCovered: () => this.#idsCovered(),
      rewriteLive: () => this.#rewriteLive(),
      diskError: (stopped) => {
        this.#tally.diskErrors++;
        if (stopped) this.#tally.writable = false;
      },
    });
    this.#standing = new Standing(p.standing, this.#standingRecord);
    this.#segs.onRotate = () => this.#standing.restate(this.#segs, (n) => this.#tally.restated(n));
    this.#segs.rotate(this.#idHigh);
    // what is restated in the new file is written before any old file can go
    if (this.#standing.size > 0) this.#segs.flush();
    this.#segs.collectAtStart();
    this.#compaction = new Compaction({
      segs: this.#segs,
      homes: this.#homes,
      ballast: this.#ballast,
      maxFileSize: opts.maxFileSize,
      closed: () => this.#closed,
      migrate: (id, rescue) => this.#migrate(id, rescue),
      collect: () => this.#collect(),
    });
    if (this.#segs.pendingDead > 0) this.#fsync.kick();
  }

  /** A new job's full record; a job a schedule put is written with its run, in one record (kind 9). */
  put(rec: JobRecord): boolean {
    return this.#put(rec, undefined);
  }
  scheduledPut(rec: JobRecord, name: string, dueSec: number): boolean {
    return this.#put(rec, { name, dueSec });
  }

  #put(rec: JobRecord, run: ScheduleRun | undefined): boolean {
    if (this.#closed) return false;
    if (!rec.body) {
      this.#opts.log(`binlog: job ${rec.id} has no body; not logged`);
      return false;
    }
    // ids only grow: a job above every id put so far has no record yet (a lookup would be a miss that walks)
    const old = rec.id > this.#maxPutId ? undefined : this.#homes.jobs.get(rec.id);
    if (!this.#ballast.ensure(this.#homes.jobs.size + (old ? 0 : 1))) return false;
    this.#maxPutId = Math.max(this.#maxPutId, rec.id);
    const newHigh = rec.id > this.#idHigh - ID_BLOCK / 2 ? rec.id + ID_BLOCK : 0;
    const size = fullRecordSize(rec, run);
    const order = rec.state === "buried" ? this.#buryOrder + 1 : 0;
    const total = size + (newHigh ? IDS_RECORD_SIZE : 0);
    let at = this.#claim(total, false);
    if (at < 0) return false;
    const segs = this.#segs;
    const salt = segs.current!.seed;
    try {
      if (newHigh) at = encodeIdsAt(newHigh, salt, segs.buf, segs.view, at);
      encodeJobAt(true, rec, order, salt, segs.buf, segs.view, at, run);
    } catch (e) {
      return this.#unencodable(e);
    }
    if (!this.#added(total, true)) return false;
    if (newHigh) {
      this.#idHigh = newHigh;
      this.#ids.record(newHigh);
      // make the reservation durable well before its ids run out
      if (this.#opts.fsyncMs !== "never") this.#fsync.kick();
    }
    this.#buryOrder = Math.max(this.#buryOrder, order);
    const to: JobInfo = { id: rec.id, file: this.#segs.current!, size, state: rec.state as JobState, buryOrder: order };
    if (old) this.#homes.move(old, to);
    else this.#homes.home(to);
    if (run !== undefined) this.#standing.ran(run.name, run.dueSec);
    this.#afterWrite(size);
    return true;
  }

  update(rec: JobRecord): boolean {
    return this.#update(rec, true);
  }

  /** delete-tube: these jobs are deleted, in one record (kind 5) however many they are. */
  purge(tube: string, ids: readonly number[]): boolean {
    if (this.#closed) return false;
    const known = ids.filter((id) => this.#homes.jobs.get(id) !== undefined);
    if (known.length === 0) return true;
    const size = purgeRecordSize(tube, known.length);
    if (!this.#write(size, true, true, (salt, buf, v, at) => encodePurgeAt(tube, known, salt, buf, v, at))) {
      return false;
    }
    for (const id of known) this.#homes.unhome(this.#homes.jobs.get(id)!);
    this.#afterWrite(size);
    return true;
  }

  /** set-dlq / set-backoff, set-concurrency / set-rate, schedule / unschedule: standing.ts writes them. */
  policy(tube: string, p: PolicyRecord): boolean {
    return this.#standing.policy(tube, p);
  }
  limits(tube: string, l: TubeLimits): boolean {
    return this.#standing.limits(tube, l);
  }
  schedule(s: ScheduleRecord): boolean {
    return this.#standing.schedule(s);
  }
  unschedule(name: string): boolean {
    return this.#standing.schedule(name);
  }

  /** A record of what belongs to no job (standing.ts): written and counted; false when the log refused it. */
  readonly #standingRecord = (size: number, encode: Encode): boolean => {
    if (this.#closed || !this.#write(size, false, true, encode)) return false;
    this.#afterWrite(size);
    return true;
  };

  /**
   * Write everything pending with one append (see the header). False when that
   * failed, or when an earlier write of records from put()/update() since the last
   * call failed (a rotation or a removal flushes too): those changes are not in the
   * log, so they must not be acknowledged. The log stays usable either way.
   */
  flush(): boolean {
    this.#held = false;
    const ok = this.#segs.flush();
    const lost = this.#tally.lost;
    this.#tally.lost = false;
    return ok && !lost;
  }

  hold(): void {
    this.#held = true;
  }

  /** `own`: from update() (a caller acknowledges it), not from compaction. */
  #update(rec: JobRecord, own: boolean): boolean {
    if (this.#closed) return false;
    const j = this.#homes.jobs.get(rec.id);
    // No full record of this job is live in the log, so there is nothing to update.
    if (!j) return true;
    const del = rec.state === "deleted";
    if (!del && !this.#ballast.ensure(this.#homes.jobs.size)) return false;
    const order = rec.state !== "buried" ? 0 : j.state === "buried" ? j.buryOrder : this.#buryOrder + 1;
    const at = this.#claim(SHORT_RECORD_SIZE, del);
    if (at < 0) return false;
    const segs = this.#segs;
    try {
      encodeJobAt(false, rec, order, segs.current!.seed, segs.buf, segs.view, at);
    } catch (e) {
      return this.#unencodable(e);
    }
    if (!this.#added(SHORT_RECORD_SIZE, own)) return false;
    this.#buryOrder = Math.max(this.#buryOrder, order);
    if (del) {
      this.#homes.unhome(j);
    } else {
      j.state = rec.state as JobState;
      j.buryOrder = order;
    }
    this.#afterWrite(SHORT_RECORD_SIZE);
    return true;
  }

  fileOf(id: number): number {
    return this.#homes.jobs.get(id)?.file.seq ?? 0;
  }

  /**
   * Ids up to `maxId` count as handed out (jobs imported from beanstalkd, whose
   * highest id may belong to a deleted job): the high-water is raised above it, so
   * no restart hands those ids out again.
   */
  raiseIds(maxId: number): boolean {
    this.#maxPutId = Math.max(this.#maxPutId, maxId);
    if (maxId + ID_BLOCK / 2 <= this.#idHigh) return true;
    this.#idHigh = maxId + ID_BLOCK;
    return this.#ids.record(this.#idHigh);
  }

  /**
   * Write everything accepted so far and fsync it, whatever -f says: for records
   * that something else depends on (the import's jobs, before its marker file).
   */
  syncAll(): Promise<boolean> {
    if (this.#closed || !this.flush()) return Promise.resolve(false);
    return this.#fsync.wait();
  }

  synced(): Promise<void> {
    if (!this.durableAcks || this.#closed) return Promise.resolve();
    return this.#fsync.wait().then((ok) => {
      if (!ok) throw new Error("binlog: fsync failed; recent changes may not be on disk");
    });
  }

  tick(nowMs: number): number | undefined {
    return this.#fsync.tick(nowMs);
  }

  stats() {
    return {
      oldestIndex: this.#segs.oldest?.seq ?? 0,
      currentIndex: this.#segs.current?.seq ?? 0,
      maxSize: this.#opts.maxFileSize,
      recordsWritten: this.#tally.recordsWritten,
      recordsMigrated: this.#tally.recordsMigrated,
    };
  }

  /** Bytes in log files, bytes of live jobs' full records, file count (for tests and debugging). */
  health() {
    return {
      bytesWritten: this.#tally.bytesWritten,
      files: this.#segs.count,
      diskErrors: this.#tally.diskErrors,
      writable: this.#tally.writable && !this.#closed && !this.#fsync.needCheckpoint,
      fsync: this.#fsync.histogram,
    };
  }

  usage(): { bytes: number; liveBytes: number; files: number; ballast: number } {
    return {
      bytes: this.#segs.bytes,
      liveBytes: this.#homes.liveBytes,
      files: this.#segs.count,
      ballast: this.#ballast.size,
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#fsync.close();
    // writes what is pending first
    const ok = this.#segs.closeAll(this.#opts.fsyncMs !== "never" || this.durableAcks);
    this.#ids.close(this.#opts.fsyncMs !== "never" || this.durableAcks);
    this.#ballast.close();
    this.#fsync.settleAll(ok);
    try {
      this.#unlock();
    } catch (e) {
      this.#opts.log(`binlog: cannot release the lock: ${errorText(e)}`);
    }
  }

  /**
   * Make room (rotating if needed), encode with the file's salt, add it to the
   * pending records; count it. `own`: from put()/update(). For the rarer records; put
   * and update encode straight into the pending buffer (#claim, #added).
   */
  #write(size: number, useBallast: boolean, own: boolean, encode: Encode): boolean {
    const at = this.#claim(size, useBallast);
    if (at < 0) return false;
    const segs = this.#segs;
    try {
      encode(segs.current!.seed, segs.buf, segs.view, at);
    } catch (e) {
      return this.#unencodable(e);
    }
    return this.#added(size, own);
  }

  /**
   * Make room for a record of `size` bytes (rotating if needed): where to encode it in
   * segs.buf (with the current file's salt, read after this call), or -1 when the log
   * cannot take it. `useBallast`: a delete may draw on the ballast for room.
   */
  #claim(size: number, useBallast: boolean): number {
    const segs = this.#segs;
    // the ballast's write reserve stands for this much pending (ballast.ts)
    if ((size > WRITE_RESERVE || segs.pending + size > WRITE_RESERVE) && !segs.flush()) return -1;
    if (!segs.room(size, this.#opts.maxFileSize, this.#idHigh, useBallast ? this.#release : undefined)) return -1;
    return segs.claim(size);
  }

  #unencodable(e: unknown): false {
    this.#opts.log(`binlog: cannot encode a record: ${errorText(e)}`);
    return false;
  }

  /** The record encoded at #claim()'s offset joins the pending ones and is counted; false if it was lost. */
  #added(size: number, own: boolean): boolean {
    const segs = this.#segs;
    const alone = size > WRITE_RESERVE;
    segs.commit(size, !alone);
    this.#tally.added(size, own);
    if (alone) {
      // Bigger than the reserve: written at once, so a full disk refuses this command
      // (the only record lost) rather than the batch.
      const lost = this.#tally.lost;
      if (!segs.flush()) {
        this.#tally.lost = lost;
        return false;
      }
      return true;
    }
    if (!this.#flushQueued && !this.#held) {
      // the server flushes at the end of each batch; this catches anything left over
      // (not needed while a caller has said it will flush this turn: hold())
      this.#flushQueued = true;
      queueMicrotask(this.#leftOver);
    }
    return true;
  }

  readonly #leftOver = (): void => {
    this.#flushQueued = false;
    if (!this.#closed && !this.#held) this.#segs.flush();
  };

  readonly #release = (n: number): boolean => this.#ballast.release(n);

  /** After each flush that had records: forget or undo what they did; after a write, maybe fsync (sync.ts). */
  #flushed(ok: boolean): void {
    this.#tally.flushed(ok);
    if (ok) {
      this.#homes.keepMoves();
      this.#fsync.afterFlush();
    } else {
      this.#homes.undoMoves();
    }
  }

  /** ids.N durably covers every id handed out (see the header: early removal). */
  #idsCovered(): boolean {
    return this.#ids.durable >= this.#maxPutId;
  }

  #afterWrite(n: number): void {
    this.#compaction.afterWrite(n);
    this.#collect();
  }

  /** Remove the dead files that may go now (see the header); the others wait for a sync (Fsync.hurry). */
  #collect(): void {
    this.#segs.collect(this.#fsync.synced, this.#idsCovered());
    if (this.#segs.pendingDead > 0) this.#fsync.hurry();
  }

  /**
   * Rewrite a live job's full record, with its current state, into the current file.
   * `rescue`: even when the ballast is short (see compaction.ts).
   */
  #migrate(id: number, rescue = false): boolean {
    const j = this.#homes.jobs.get(id)!;
    let rec: JobRecord | undefined;
    try {
      rec = this.#live(id);
    } catch (e) {
      this.#opts.log(`binlog: live(${id}) threw: ${errorText(e)}`);
      return false;
    }
    if (!rec || rec.state === "deleted" || !rec.body) {
      // The queue no longer has it but never logged a delete: log one now.
      this.#opts.log(`binlog: job ${id} is in the log but not in the queue; logging its delete`);
      return this.#update({ ...GONE, id }, false);
    }
    if (!this.#ballast.ensure(this.#homes.jobs.size) && !rescue) return false;
    const order = rec.state !== "buried" ? 0 : j.state === "buried" ? j.buryOrder : this.#buryOrder + 1;
    const size = fullRecordSize(rec);
    if (!this.#write(size, rescue, false, (salt, buf, v, at) => encodeJobAt(true, rec, order, salt, buf, v, at))) {
      return false;
    }
    this.#buryOrder = Math.max(this.#buryOrder, order);
    this.#tally.migrated(this.#segs.pending > 0); // else already written (a big record)
    this.#homes.move(j, { id, file: this.#segs.current!, size, state: rec.state, buryOrder: order });
    return true;
  }

  /** After a failed fsync (sync.ts): every live job again in a fresh file, older files then collectable. */
  #rewriteLive(): boolean {
    this.#segs.abandonUnsynced();
    if (!this.#segs.rotate(this.#idHigh)) return false;
    const first = this.#segs.current!.seq;
    for (const f of [...this.#segs.files]) {
      if (f.seq >= first) break;
      for (const id of this.#homes.liveIds(f)) if (!this.#migrate(id)) return false;
    }
    return this.#segs.flush(); // moves undone: the next round tries again
  }
}
