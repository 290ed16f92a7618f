// Where each live job's newest full record lives (its home file), the bytes those
// records hold, and the moves made by records still pending: when a flush fails, each
// moved job goes back to the file that holds its durable record (see README.md).
//
// Per live job the log keeps one JobInfo in a JobTable (an open-addressing table, not a
// Map: 8 bytes a slot, against ~36 (Deno) to ~63 (Bun) per Map entry), and its id once in
// its file's `homed` list, not in a Set per file: with a Map and a Set per job the
// bookkeeping, its growing hash tables and what the collector copied of them were the
// larger part of what -b cost per put (docs/benchmark.md).
import type { JobState } from "../wal.ts";
import type { LogFile } from "./log_file.ts";
import type { Segments } from "./segments.ts";
import { JobTable } from "../job_table.ts";

/** A live job as the log sees it. */
export interface JobInfo {
  readonly id: number;
  file: LogFile;
  size: number;
  state: JobState;
  buryOrder: number;
}

/** A job whose newest full record moved to a newer file, while that record is pending. */
interface Move {
  from: JobInfo;
  to: JobInfo;
  /** from.file's needSync/needStart before the move. */
  needSync: number;
  needStart: number;
}

export class Homes {
  /** Every live job, by id. */
  readonly jobs = new JobTable<JobInfo>();
  /** Bytes of the live jobs' newest full records. */
  liveBytes = 0;
  /** Jobs moved (a newer full record written) by records still pending: undone if they are lost. */
  #moves: Move[] = [];
  readonly #segs: Segments;

  constructor(segs: Segments) {
    this.#segs = segs;
  }

  /** The pending records were written: their moves stand. */
  keepMoves(): void {
    if (this.#moves.length > 0) this.#moves = [];
  }

  /**
   * The records of these moves were lost: each job's newest full record on disk is
   * still the one in its old file, so it goes back there (unless deleted since), and
   * that file may not be removed for it. Newest first, so a job moved twice ends
   * where it started.
   */
  undoMoves(): void {
    const moves = this.#moves;
    this.#moves = [];
    for (let i = moves.length - 1; i >= 0; i--) {
      const m = moves[i]!;
      const f = m.from.file;
      f.needSync = m.needSync;
      f.needStart = m.needStart;
      if (this.jobs.get(m.to.id) !== m.to) continue;
      this.unhome(m.to);
      f.deadAt = undefined;
      this.home(m.from);
    }
  }

  /** j's newest full record is in j.file (replacing whatever the table had for j.id). */
  home(j: JobInfo): void {
    const f = j.file;
    f.live++;
    f.homed.push(j.id);
    this.liveBytes += j.size;
    this.jobs.set(j);
  }

  /** j (the table's entry for j.id) is deleted. */
  unhome(j: JobInfo): void {
    this.#leave(j);
    this.jobs.delete(j.id);
  }

  #leave(j: JobInfo): void {
    j.file.live--;
    this.liveBytes -= j.size;
  }

  /** A live job whose newest full record is in f, or undefined (f's walk goes on from there next time). */
  liveIn(f: LogFile): number | undefined {
    const ids = f.homed;
    for (; f.cursor < ids.length; f.cursor++) {
      const id = ids[f.cursor]!;
      if (this.jobs.get(id)?.file === f) return id;
    }
    return undefined;
  }

  /** The live jobs whose newest full record is in f, each once. */
  liveIds(f: LogFile): number[] {
    const out = new Set<number>();
    for (let i = f.cursor; i < f.homed.length; i++) {
      const id = f.homed[i]!;
      if (this.jobs.get(id)?.file === f) out.add(id);
    }
    return [...out];
  }

  /** A live job in the oldest file (other than the current one) that still has any. */
  oldestLiveId(): number | undefined {
    for (const f of this.#segs.files) {
      if (f === this.#segs.current) return undefined;
      const id = this.liveIn(f);
      if (id !== undefined) return id;
    }
    return undefined;
  }

  /**
   * A live job's new full record was just added: its old file waits for it to be
   * durable, and the move is undone if the record is lost before it is written.
   */
  move(from: JobInfo, to: JobInfo): void {
    // (a record bigger than the write reserve is written already: nothing to undo)
    if (this.#segs.pending > 0) {
      this.#moves.push({ from, to, needSync: from.file.needSync, needStart: from.file.needStart });
    }
    this.#segs.left(from.file);
    this.#leave(from);
    this.home(to); // replaces from in the table
  }
}
