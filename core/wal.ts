// The boundary between the queue engine and the write-ahead log (binlog).
// The engine speaks in JobRecords (plain data, wall-clock times); the log decides
// files, checksums, rotation and compaction. Without -b the engine uses NO_WAL.

/** Job states as the protocol names them; "deleted" exists only in the log. */
export type JobState = "ready" | "reserved" | "delayed" | "buried";

/** Everything the log needs to rebuild one job after a restart. */
export interface JobRecord {
  id: number;
  tube: string;
  pri: number;
  /** Delay of the last put/release, in ms (whole seconds on the wire). */
  delayMs: number;
  ttrMs: number;
  /** Wall-clock ms since the epoch when the job was created. */
  createdAtMs: number;
  /** Wall-clock ms: when a delayed job becomes ready; 0 otherwise. */
  deadlineAtMs: number;
  state: JobState | "deleted";
  reserves: number;
  timeouts: number;
  releases: number;
  buries: number;
  kicks: number;
  /** Body including its trailing CRLF; only needed on full records. */
  body?: Uint8Array;
}

/** What the log gives back at startup. */
export interface Recovered {
  /** Live jobs, in the order their buried state was first seen for buried ones. */
  jobs: JobRecord[];
  /** Highest id ever seen in any record (so ids are never handed out twice). */
  maxId: number;
  /** File sequence number holding each job's newest full record. */
  fileOf: Map<number, number>;
}

/**
 * The engine calls these as state changes. Each returns false when the change could
 * not be logged (disk full, I/O error): the engine then refuses the command with
 * beanstalkd's reply and leaves the job as it was.
 */
export interface Wal {
  /** A new job (full record). */
  put(rec: JobRecord): boolean;
  /** A state change of a known job (short record): bury, kick, release, delete. */
  update(rec: JobRecord): boolean;
  /** File sequence number holding the job's newest full record (stats-job `file`). */
  fileOf(id: number): number;
  /**
   * Resolves once everything written so far is on disk (durable-ack mode);
   * resolves at once when the log is off or not in that mode.
   */
  synced(): Promise<void>;
  /** True when replies must wait for synced() (the durable-ack mode). */
  readonly durableAcks: boolean;
  /** Values for the stats keys binlog-*. */
  stats(): {
    oldestIndex: number;
    currentIndex: number;
    maxSize: number;
    recordsWritten: number;
    recordsMigrated: number;
  };
  /** Flush and release files and the lock. */
  close(): void;
}

/** The log when -b is not given: nothing touches the disk. */
export function noWal(maxSize: number): Wal {
  return {
    put: () => true,
    update: () => true,
    fileOf: () => 0,
    synced: () => Promise.resolve(),
    durableAcks: false,
    stats: () => ({ oldestIndex: 0, currentIndex: 0, maxSize, recordsWritten: 0, recordsMigrated: 0 }),
    close: () => {},
  };
}
