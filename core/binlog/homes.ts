// Where each live job's newest full record lives (its home file), the bytes those
// records hold, and the moves made by records still pending: when a flush fails, each
// moved job goes back to the file that holds its durable record (see README.md).
import type { JobState } from "../wal.ts";
import type { LogFile } from "./log_file.ts";
import type { Segments } from "./segments.ts";

/** A live job as the log sees it. */
export interface JobInfo {
  file: LogFile;
  size: number;
  state: JobState;
  buryOrder: number;
}

/** A job whose newest full record moved to a newer file, while that record is pending. */
interface Move {
  id: number;
  from: JobInfo;
  to: JobInfo;
  /** from.file's needSync/needStart before the move. */
  needSync: number;
  needStart: number;
}

export class Homes {
  /** Every live job, by id. */
  readonly jobs = new Map<number, JobInfo>();
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
      if (this.jobs.get(m.id) !== m.to) continue;
      this.unhome(m.id, m.to);
      f.deadAt = undefined;
      this.home(m.id, m.from);
    }
  }

  home(id: number, j: JobInfo): void {
    j.file.ids.add(id);
    this.liveBytes += j.size;
    this.jobs.set(id, j);
  }

  unhome(id: number, j: JobInfo): void {
    j.file.ids.delete(id);
    this.liveBytes -= j.size;
    this.jobs.delete(id);
  }

  /**
   * A live job's new full record was just added: its old file waits for it to be
   * durable, and the move is undone if the record is lost before it is written.
   */
  move(id: number, from: JobInfo, to: JobInfo): void {
    // (a record bigger than the write reserve is written already: nothing to undo)
    if (this.#segs.pending > 0) {
      this.#moves.push({ id, from, to, needSync: from.file.needSync, needStart: from.file.needStart });
    }
    this.#segs.left(from.file);
    this.unhome(id, from);
    this.home(id, to);
  }
}
