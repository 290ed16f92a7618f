// One log file's bookkeeping record (what Segments keeps per file: size, positions,
// live jobs, when it died) and the ballast-release callback type; see segments.ts.
import type { AppendFile } from "../../files.ts";

export interface LogFile {
  seq: number;
  path: string;
  size: number;
  /** Position where its header starts (0 for files found at startup). */
  start: number;
  /** Live jobs whose newest full record is in this file. */
  live: number;
  /**
   * Ids of the jobs homed here, in the order they came (homes.ts): a job that left
   * (moved, deleted) stays listed until a walk passes it, and one that came back is
   * listed again. Bounded by the records in the file; dropped with the file.
   */
  homed: number[];
  /** Where the walk for a live job (Homes.liveIn) goes on: every earlier entry has left. */
  cursor: number;
  /** CRC seed of this file's salt (only used while it is written). */
  seed: number;
  handle: AppendFile | undefined;
  lastWrite: number;
  /** Failed with an error other than ENOSPC: the next write starts a new file. */
  broken: boolean;
  /** Position when it became removable; once a sync covers it, it may go in any case. */
  deadAt: number | undefined;
  /** Start of the file that was current then. */
  deadStart: number;
  /**
   * End of the newest full record written for a job that left this file while
   * live (moved forward by compaction, or put again): until a sync covers it, this
   * file may hold that job's only durable full record.
   */
  needSync: number;
  /** Start of the file holding that record. */
  needStart: number;
}

/** A file's bookkeeping before anything is known of its jobs (Segments: found at startup, or started). */
export function logFile(seq: number, path: string, size: number, start = 0): LogFile {
  return {
    seq,
    path,
    size,
    start,
    live: 0,
    homed: [],
    cursor: 0,
    seed: 0,
    handle: undefined,
    lastWrite: 0,
    broken: false,
    deadAt: undefined,
    deadStart: 0,
    needSync: 0,
    needStart: 0,
  };
}

/** Give back ballast space (at least n bytes); false when there is none left. */
export type Release = (n: number) => boolean;
