// The boundary between the queue engine and the write-ahead log (binlog).
// The engine speaks in JobRecords (plain data, wall-clock times); the log decides
// files, checksums, rotation and compaction. Without -b the engine uses NO_WAL.
import type { JobState, LogHealth, LogStats, TubeLimits } from "../engine.ts";
import type { RetryPolicy } from "./extras.ts";

export type { TubeLimits };

/** Job states as the protocol names them; "deleted" exists only in the log. */
export type { JobState };

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
  /** Extensions (docs/extensions.md), on full records of jobs that have them: put-unique's key. */
  key?: string;
  /** A dead letter's tube of origin. */
  from?: string;
}

/** A recurring job as the log keeps it (schedule; core/memory/schedules.ts). */
export interface ScheduleRecord {
  name: string;
  tube: string;
  /** The spec as the command gave it (core/schedule_spec.ts). */
  spec: string;
  pri: number;
  ttrSec: number;
  /** Due times at or before this are done (Unix s): its last run's due time, or when it was set. */
  afterSec: number;
  /** Its last run's due time, Unix s (0: none yet). */
  lastDueSec: number;
  /** The job's body with its trailing CRLF. */
  body: Uint8Array;
}

/** What the log gives back at startup. */
export interface Recovered {
  /**
   * Live jobs: ids ascending, then the buried ones in the order they were buried
   * (append them to their tube's buried list in array order). Reserved jobs come
   * back ready; delayed ones keep their absolute deadline (may be in the past).
   */
  jobs: JobRecord[];
  /**
   * Highest id that may ever have been handed out: above every id in any record
   * and above the log's id reservations, so ids lost with a torn tail are never
   * reused. The next id is maxId + 1.
   */
  maxId: number;
  /** File sequence number holding each job's newest full record. */
  fileOf: Map<number, number>;
  /** Tube retry policies in force (set-dlq, set-backoff), by tube. */
  policies: Map<string, RetryPolicy>;
  /** Tube limits in force (set-concurrency, set-rate), by tube. */
  limits: Map<string, TubeLimits>;
  /** Schedules, by name, with their last runs. */
  schedules: Map<string, ScheduleRecord>;
}

/**
 * The engine calls put/update as state changes. Each returns false when the change
 * cannot be logged (disk full, I/O error, log closed): the engine then refuses the
 * command with beanstalkd's reply and leaves the job as it was. An accepted record
 * may still be pending in memory: flush() writes it, and nothing may be acknowledged
 * before a flush() that covers it has returned true. A record passed to put/update is
 * the caller's and valid only during that call (the engine fills one object for every
 * change, records.ts): a log keeps what it needs of it, never the object.
 */
export interface Wal {
  /** A new job (full record). */
  put(rec: JobRecord): boolean;
  /** A state change of a known job (short record): bury, kick, release, delete. */
  update(rec: JobRecord): boolean;
  /** delete-tube: these jobs are deleted, as one record. */
  purge(tube: string, ids: readonly number[]): boolean;
  /** A tube's retry policy from now on (all zero: none). */
  policy(tube: string, p: RetryPolicy): boolean;
  /** A tube's limits from now on (all zero: none). */
  limits(tube: string, l: TubeLimits): boolean;
  /** A schedule added or replaced, with its state. */
  schedule(s: ScheduleRecord): boolean;
  /** A schedule removed. */
  unschedule(name: string): boolean;
  /**
   * A job a schedule put for one of its due times: the job's full record and the run, in
   * one record, so that a restart finds both or neither.
   */
  scheduledPut(rec: JobRecord, name: string, dueSec: number): boolean;
  /**
   * Write every record accepted so far (one append). False when that failed, or an
   * earlier write of accepted records did since the last call: those changes are
   * not in the log (the engine has applied them in memory), so their replies must
   * not be sent. The log stays usable for later changes.
   */
  flush(): boolean;
  /**
   * The caller will flush() before acknowledging anything, later in this turn of the
   * event loop: the log should not write the pending records on its own meanwhile,
   * so that several callers' records share that one append.
   */
  hold?(): void;
  /** File sequence number holding the job's newest full record (stats-job `file`). */
  fileOf(id: number): number;
  /**
   * Durable-ack mode: resolves once everything accepted before the call is on disk
   * (calls in the same turn share one fsync; call flush() first, which is where a
   * failed write shows). Rejects when the fsync failed and the
   * log could not rewrite the data into a new file either: the changes may not be
   * durable, so their replies must not be sent as successes. Resolves at once when
   * the log is off or not in that mode.
   */
  synced(): Promise<void>;
  /**
   * For the server's single timer (the log sets no timers): starts a background
   * fsync when the -f interval has passed and something is unsynced, so a quiet
   * tail is flushed too. Returns ms until it wants to be called again, or
   * undefined when nothing is pending.
   */
  tick(nowMs: number): number | undefined;
  /** False for the log that writes nothing (noWal): the engine then builds no records at all. */
  readonly logs: boolean;
  /** True when replies must wait for synced() (the durable-ack mode). */
  readonly durableAcks: boolean;
  /** Values for the stats keys binlog-*. */
  stats(): LogStats;
  /** Write what is pending, fsync, release files and the lock. */
  close(): void;
  /** Absent for the log that writes nothing. */
  health?(): WalHealth;
}

/** The log's health, for the metrics port. */
export type WalHealth = LogHealth;

/** The log when -b is not given: nothing touches the disk. */
export function noWal(maxSize: number): Wal {
  return {
    put: () => true,
    update: () => true,
    purge: () => true,
    policy: () => true,
    limits: () => true,
    schedule: () => true,
    unschedule: () => true,
    scheduledPut: () => true,
    flush: () => true,
    logs: false,
    fileOf: () => 0,
    synced: () => Promise.resolve(),
    tick: () => undefined,
    durableAcks: false,
    stats: () => ({ oldestIndex: 0, currentIndex: 0, maxSize, recordsWritten: 0, recordsMigrated: 0 }),
    close: () => {},
  };
}
