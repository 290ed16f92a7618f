// What the protocol reads of an engine's jobs and tubes: the snapshots that stats,
// stats-job, stats-tube, the metrics port and the dashboard show. Types only; each engine
// fills them in from its own state, and core/engine.ts's Engine hands them over.

/** Job states as the protocol names them. */
export type JobState = "ready" | "reserved" | "delayed" | "buried";

/** Job states a listing can show (reserved jobs are not listed). */
export type ListState = "ready" | "delayed" | "buried";

/** A latency histogram as the metrics port reads it (core/histogram.ts keeps one). */
export interface HistogramView {
  /** Upper bounds of the buckets, ms. */
  readonly boundsMs: readonly number[];
  /** Observations per bucket, not cumulative; the last one is +Inf. */
  readonly counts: ArrayLike<number>;
  /** Observations in all. */
  readonly count: number;
  /** Their sum, ms. */
  readonly sumMs: number;
}

/** A snapshot of one job for stats-job (times in whole seconds). */
export interface JobStats {
  /** The job id. */
  id: number;
  /** Its tube. */
  tube: string;
  /** Its state. */
  state: JobState;
  /** Priority (0 is most urgent). */
  pri: number;
  /** Seconds since it was put. */
  age: number;
  /** Delay of the last put or release, seconds. */
  delay: number;
  /** Time to run, seconds. */
  ttr: number;
  /** Seconds until a reserved job's TTR ends or a delayed job is ready; 0 otherwise. */
  timeLeft: number;
  /** The log file holding it (0 without a log). */
  file: number;
  /** Times reserved. */
  reserves: number;
  /** Reservations that ran out of TTR. */
  timeouts: number;
  /** Times released. */
  releases: number;
  /** Times buried. */
  buries: number;
  /** Times kicked. */
  kicks: number;
  /** Extensions, only on jobs that have them (stats-job shows them then): put-unique's key. */
  key?: string;
  /** A dead letter's tube of origin. */
  deadLetterFrom?: string;
}

/** A snapshot of one tube for stats-tube. */
export interface TubeStats {
  /** The tube's name. */
  name: string;
  /** Ready jobs with priority < 1024. */
  urgent: number;
  /** Ready jobs. */
  ready: number;
  /** Reserved jobs. */
  reserved: number;
  /** Delayed jobs. */
  delayed: number;
  /** Buried jobs. */
  buried: number;
  /** Jobs put since it was created (the server: since start). */
  totalJobs: number;
  /** Connections using it. */
  using: number;
  /** Connections watching it. */
  watching: number;
  /** Connections waiting in reserve on it. */
  waiting: number;
  /** delete commands on its jobs. */
  cmdDelete: number;
  /** pause-tube commands on it. */
  cmdPauseTube: number;
  /** Length of the current pause, seconds (0: not paused). */
  pause: number;
  /** Seconds until the pause ends. */
  pauseTimeLeft: number;
  /** Only on tubes that have one (stats-tube shows it then): set-dlq's and set-backoff's policy. */
  policy?: RetryPolicy;
  /** Only on tubes that have them (stats-tube shows them then): set-concurrency's and set-rate's limits. */
  limits?: TubeLimits;
}

/** A tube's flow limits (set-concurrency, set-rate); a tube keeps them only while one is not 0. */
export interface TubeLimits {
  /** Most jobs of the tube reserved at once; 0: no limit. */
  concurrency: number;
  /** Most reservations of the tube in any window of rateWindowSec seconds; 0: no limit. */
  rateCount: number;
  /** The window of rateCount, seconds (0 when rateCount is 0). */
  rateWindowSec: number;
}

/** A schedule as list-schedules shows it. */
export interface ScheduleInfo {
  /** Its name. */
  name: string;
  /** The tube its runs put their job into. */
  tube: string;
  /** As the schedule command gave it (core/schedule_spec.ts). */
  spec: string;
  /** The job's priority. */
  pri: number;
  /** The job's time to run, seconds. */
  ttrSec: number;
  /** Body bytes, without the CRLF. */
  size: number;
  /** When it next puts its job, Unix seconds. */
  nextDueSec: number;
  /** The due time of its last run, Unix seconds (0: none yet). */
  lastDueSec: number;
}

/** A tube's retry policy (docs/extensions.md): set-dlq's limit and dead-letter tube, set-backoff's delays. */
export interface RetryPolicy {
  /** Attempts (reservations ended by a release or a TTR timeout) before the job is dead-lettered; 0: no limit. */
  maxAttempts: number;
  /** Where a job goes, buried, when its attempts run out ("" with no limit). */
  deadTube: string;
  /** A released or timed-out job comes back delayed by at least base × 2^(attempts-1) s, at most cap s; 0: no backoff. */
  backoffBaseSec: number;
  /** 0: no cap. */
  backoffCapSec: number;
}

/** One tube for the metrics port and the dashboard: stats-tube plus what they show beyond it. */
export interface TubeSnapshot extends TubeStats {
  /** 1 while paused. */
  paused: boolean;
  /** Ms until a paused tube resumes (0 when not paused). */
  pauseLeftMs: number;
  /** Ms since the oldest ready job became ready (0 when none is ready): queue latency. */
  oldestReadyMs: number;
  /** Ready jobs a limit (set-concurrency, set-rate) keeps from being reserved now (0 without limits). */
  heldJobs?: number;
}

/** The engine's part of `stats`: jobs, tubes and the log. */
export interface EngineStats {
  /** Ready jobs with priority < 1024. */
  urgent: number;
  /** Ready jobs. */
  ready: number;
  /** Reserved jobs. */
  reserved: number;
  /** Delayed jobs. */
  delayed: number;
  /** Buried jobs. */
  buried: number;
  /** Tubes that exist. */
  tubes: number;
  /** Clients waiting in reserve. */
  waiting: number;
  /** Jobs put since it was created (the server: since start). */
  totalJobs: number;
  /** Reservations that ran out of TTR since start. */
  jobTimeouts: number;
  /** In drain mode. */
  draining: boolean;
  /** The binlog-* keys. */
  binlog: LogStats;
}

/** The binlog-* keys of `stats` (zeros but maxSize without a log). */
export interface LogStats {
  /** Sequence number of the oldest log file (0 without a log). */
  oldestIndex: number;
  /** Sequence number of the log file being written. */
  currentIndex: number;
  /** Size at which a log file is closed (-s). */
  maxSize: number;
  /** Records written since start. */
  recordsWritten: number;
  /** Records moved by compaction since start. */
  recordsMigrated: number;
}

/** The log's health, for the metrics port. */
export interface LogHealth {
  /** Bytes appended to log files since start (records, headers, id reservations). */
  bytesWritten: number;
  /** Log files on disk now. */
  files: number;
  /** Failed writes and failed fsyncs since start. */
  diskErrors: number;
  /** False after a failed write or fsync, until a later one succeeds (/readyz). */
  writable: boolean;
  /** Duration of each fsync round (ms). */
  fsync: HistogramView;
}

/** What the metrics port reads beyond `stats`. */
export interface EngineMetrics {
  /** ready -> reserved (ms). */
  readyToReserve: HistogramView;
  /** reserved -> deleted (ms), for jobs deleted while reserved. */
  reserveToDelete: HistogramView;
  /** Absent without a log. */
  log: LogHealth | undefined;
  /** Jobs moved to a dead-letter tube since start (engines with set-dlq). */
  deadLettered?: number;
  /** Jobs put by each schedule through this node since start, by schedule name (engines with schedules). */
  scheduleRuns?: ReadonlyMap<string, number>;
  /** The database under the engine (engines over one, such as --pg). */
  database?: DatabaseHealth;
}

/** The database under an engine that keeps its jobs in one (--pg), for /readyz, the metrics port and the dashboard. */
export interface DatabaseHealth {
  /** False while the database cannot be reached or cannot take writes (a standby): /readyz answers 503. */
  available: boolean;
  /** Why not ("" while available), for /readyz and the logs. */
  reason: string;
  /** This node's id: its row in the database's nodes table. */
  node: number;
  /** Ms until this node's lease ends, as this node knows it (the last renewal it saw committed); <= 0: lapsed. */
  leaseRemainingMs: number;
  /** Pool connections busy now (transactions, reads). */
  poolInUse: number;
  /** The pool's size (LISTEN's own connection not counted). */
  poolSize: number;
  /** Per turn transaction: from sending its statements to their last answer, COMMIT not included (ms). */
  statements: HistogramView;
  /** Per turn transaction: the COMMIT's round trip (ms). */
  commits: HistogramView;
  /** Commands per committed turn transaction (its bounds are commands, not ms). */
  batchSizes: HistogramView;
  /** Turn transactions committed since start. */
  transactions: number;
  /** Turn transactions run again since start (deadlock, serialization failure, the database away). */
  retries: number;
  /** Turn transactions failed for good since start (their commands answered INTERNAL_ERROR). */
  errors: number;
  /** The nodes of the cluster whose lease has not lapsed, read from the database now. */
  nodes(): Promise<ClusterNode[]>;
}

/** A node of a cluster over a database, as the dashboard lists it. */
export interface ClusterNode {
  /** Its row in the nodes table. */
  id: number;
  /** The host it runs on, as it registered ("" when it did not say: a node of an older tubeway). */
  host: string;
  /** Its process id (0 when it did not say). */
  pid: number;
  /** Ms until its lease ends, by the database's clock. */
  leaseRemainingMs: number;
  /** It is the node answering. */
  self: boolean;
}

/** One job in a listing (the dashboard's), in the order the engine serves them. */
export interface JobSnapshot {
  /** The job id. */
  id: number;
  /** Priority (0 is most urgent). */
  pri: number;
  /** Ms since it was put. */
  ageMs: number;
  /** Delay of the last put or release, ms. */
  delayMs: number;
  /** Time to run, ms. */
  ttrMs: number;
  /** Delayed jobs: ms until ready; 0 otherwise. */
  timeLeftMs: number;
  /** Times reserved. */
  reserves: number;
  /** Reservations that ran out of TTR. */
  timeouts: number;
  /** Times released. */
  releases: number;
  /** Times buried. */
  buries: number;
  /** Times kicked. */
  kicks: number;
  /** Body without its trailing CRLF. */
  body: Uint8Array;
}

/** A page of a tube's jobs in one state. */
export interface JobList {
  /** Its tube. */
  tube: string;
  /** Its state. */
  state: ListState;
  /** Jobs of the tube in that state, listed or not. */
  total: number;
  /** The jobs listed. */
  jobs: JobSnapshot[];
}
