// The engine seam: what the protocol asks of whatever keeps the jobs. Types only.
//
// protocol/ is written against this interface and nothing else of core/'s engine, so
// that the in-memory queue (core/memory/queue.ts, with its write-ahead log) and an engine that
// answers later (a database's) serve the same wire. An answer is a value or a promise
// of one (Answer<T>): the in-memory engine always answers at once and allocates no
// promise; a connection whose answer is pending processes nothing else until it comes,
// so replies still leave in command order.
//
// What an engine owns besides the jobs: its time (Clock, with the one timer), and
// when a connection's replies may go (settle(): the log's shared append and fsync for
// the in-memory engine, a commit for a database). Connections, command counters and
// producer/worker counts are the protocol's (per node); jobs and tubes the engine's.
import type { Clock } from "./clock.ts";

/**
 * An answer now, or later. A later answer that fails makes the protocol answer
 * INTERNAL_ERROR and log the error, unless the error carries `logged: true` (the engine
 * said why already, e.g. once per database outage, not once per command).
 */
export type Answer<T> = T | Promise<T>;

/** Job states as the protocol names them. */
export type JobState = "ready" | "reserved" | "delayed" | "buried";

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

/** A job as a reply shows it: its id and body (with its trailing CRLF; never mutate it). */
export interface JobOut {
  /** The job id. */
  readonly id: number;
  /** Body with its trailing CRLF (never mutate it). */
  readonly body: Uint8Array;
}

/** A put that stored its job. */
export interface Inserted {
  /** The job id. */
  readonly id: number;
}

/** How a wait in reserve ended, when it did not end with a job. */
export type WaitEnd = "TIMED_OUT" | "DEADLINE_SOON";

/** Outcome of a command the engine can refuse: the reply word, or a server error. */
export type Refusal = "NOT_FOUND" | "INTERNAL_ERROR";

/** What a put can answer. */
export type PutResult = Inserted | "DRAINING" | "OUT_OF_MEMORY";

/** A put's job, as its command line and body gave it. */
export interface NewJob {
  /** From takeId(), taken when the put's line was read. */
  readonly id: number;
  /** Priority (0 is most urgent). */
  readonly pri: number;
  /** Seconds until it is ready (put-at: ignored, see atSec). */
  readonly delaySec: number;
  /** Time to run, seconds (below 1: 1). */
  readonly ttrSec: number;
  /** Body with its trailing CRLF; the engine may keep it (the protocol never reuses it). */
  readonly body: Uint8Array;
}

/** put-at's job: ready at a wall-clock time. */
export interface NewJobAt extends NewJob {
  /** When it becomes ready, Unix seconds (past: now). */
  readonly atSec: number;
}

/** put-unique's job: not put while a live job of the tube holds its key. */
export interface UniqueJob extends NewJob {
  /** The key. */
  readonly key: string;
}

/** A connection as the engine knows it: what it uses and watches. The protocol only reads these. */
export interface EngineClient {
  /** The tube `use` chose (list-tube-used). */
  readonly usedTube: string;
  /** The watch list in list-tubes-watched order. */
  watchedTubes(): string[];
  /** Extensions: whether it waits in reserve now. */
  readonly isWaiting?: boolean;
}

/** Called once when a wait in reserve ends: with the reserved job, or why it ended without one. */
export type Wake = (result: JobOut | WaitEnd) => void;

/** A connection whose replies wait for the engine (see Engine.settle). */
export interface Settling {
  /**
   * The replies may go (ok), or must not: what they acknowledge was lost (`why` says
   * what failed) and the connection is to be dropped without them.
   */
  settled(ok: boolean, why?: string): void;
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
}

/** A tube's retry policy (issue 19): set-dlq's limit and dead-letter tube, set-backoff's delays. */
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

/** What put-unique can answer beyond put's answers: the live job that holds the key. */
export interface Exists {
  /** The id of the job that holds the key. */
  readonly exists: number;
}

/** The states delete-tube and kick-tube may be limited to (none: every state the command covers). */
export type TubeState = ListState;

/** One tube for the metrics port and the dashboard: stats-tube plus what they show beyond it. */
export interface TubeSnapshot extends TubeStats {
  /** 1 while paused. */
  paused: boolean;
  /** Ms until a paused tube resumes (0 when not paused). */
  pauseLeftMs: number;
  /** Ms since the oldest ready job became ready (0 when none is ready): queue latency. */
  oldestReadyMs: number;
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

/** Job states a listing can show (reserved jobs are not listed). */
export type ListState = "ready" | "delayed" | "buried";

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

/**
 * Whatever keeps the jobs. Every command of the protocol maps to one call; the client
 * passed in (C: the engine's own type of connection) is one this engine's connect()
 * returned. The protocol holds engines as Engine<EngineClient> and hands back only
 * what connect() gave it.
 */
export interface Engine<C extends EngineClient = EngineClient> {
  /** Monotonic time for deadlines and ages, the wall clock, and the engine's one timer. */
  readonly clock: Clock;
  /** Largest body accepted by put (-z), bytes. */
  readonly maxJobSize: number;

  // ---- connections
  /** A new connection: it uses and watches "default". `wake` ends its waits in reserve. */
  connect(wake: Wake): C;
  /** The connection closed: its wait ends, its reservations go back to ready. */
  disconnect(c: C): void;

  // ---- producing
  /**
   * The id for a put whose line was just read (1.12 takes it then: a put whose body
   * is refused still uses its id up). Synchronous: an engine that draws ids from
   * elsewhere keeps some ready.
   */
  takeId(): number;
  /** Store a job in c's used tube. */
  put(c: C, job: NewJob): Answer<PutResult>;

  // ---- consuming
  /**
   * reserve / reserve-with-timeout (Infinity: plain reserve; 0: answer at once). null:
   * the client now waits, and its wake is called later (possibly before a pending
   * answer of null has settled).
   */
  reserve(c: C, timeoutMs: number): Answer<JobOut | WaitEnd | null>;
  /** End c's wait without a job (its peer half-closed): wake gets TIMED_OUT. */
  cancelWait(c: C): void;
  /** reserve-job: a ready, delayed or buried job by id, in any tube. */
  reserveJob(c: C, id: number): Answer<JobOut | undefined>;
  /** A job reserved by c, or one that is ready, delayed or buried. */
  delete(c: C, id: number): Answer<"DELETED" | Refusal>;
  /** A job reserved by c back to ready (or delayed), with a new priority. */
  release(c: C, id: number, pri: number, delaySec: number): Answer<"RELEASED" | Refusal>;
  /** A job reserved by c to its tube's buried list. */
  bury(c: C, id: number, pri: number): Answer<"BURIED" | Refusal>;
  /** A fresh TTR for a job reserved by c; false if c holds no such job. */
  touch(c: C, id: number): Answer<boolean>;
  /** kick on c's used tube: buried jobs if it has any, else delayed ones. */
  kick(c: C, bound: number): Answer<number | "INTERNAL_ERROR">;
  /** kick-job: a buried or delayed job by id, in any tube. */
  kickJob(id: number): Answer<"KICKED" | Refusal>;

  // ---- looking
  /** A job by id, in any state. */
  peek(id: number): Answer<JobOut | undefined>;
  /** The next ready job of c's used tube. */
  peekReady(c: C): Answer<JobOut | undefined>;
  /** The delayed job of c's used tube that is ready soonest. */
  peekDelayed(c: C): Answer<JobOut | undefined>;
  /** The oldest-buried job of c's used tube. */
  peekBuried(c: C): Answer<JobOut | undefined>;
  /** stats-job. */
  statsJob(id: number): Answer<JobStats | undefined>;
  /** stats-tube. */
  statsTube(name: string): Answer<TubeStats | undefined>;
  /** The engine's part of stats. */
  stats(): Answer<EngineStats>;
  /** Every tube name, in list-tubes order. */
  tubeNames(): Answer<string[]>;
  /** Snapshots of these tubes (the metrics port asks in slices); gone tubes are left out. */
  tubes(names: readonly string[]): Answer<TubeSnapshot[]>;
  /**
   * Up to `limit` jobs of a tube in a state, in serving order, after skipping the first
   * `offset` (list-jobs; default 0); undefined if no such tube.
   */
  listJobs(tube: string, state: ListState, limit: number, offset?: number): Answer<JobList | undefined>;
  /** Latency histograms and the log's health, for the metrics port (read at once). */
  metrics(): EngineMetrics;

  // ---- tubes
  /** use: c's puts go to this tube from now on. */
  use(c: C, name: string): void;
  /** Returns the watch count. */
  watch(c: C, name: string): number;
  /** Returns the watch count, or NOT_IGNORED for the only watched tube. */
  ignore(c: C, name: string): number | "NOT_IGNORED";
  /** False if no such tube. */
  pauseTube(name: string, delaySec: number): Answer<boolean>;

  // ---- the server
  /** Drain mode: puts are answered DRAINING from now on. */
  drain(): void;
  /** Drain mode ends (`drain off`): puts are accepted again. */
  undrain(): void;
  /** In drain mode. */
  readonly draining: boolean;
  /**
   * A connection ran a batch of commands and has replies ready (`replies`), some of
   * which report a change (`changed`). Returns false when they may go now; true when
   * they wait until `s.settled()` is called (the log's append, its fsync, a commit).
   */
  settle(s: Settling, changed: boolean, replies: boolean): boolean;
  /** Stop the timer and release what the engine holds (the log: write, fsync, unlock). */
  close(): void;

  // ---- extensions (docs/extensions.md). Optional, so that an engine serves the stock
  // protocol without them; the `capabilities` command lists those this engine has.
  /**
   * delete-tube: every job of the tube in `state` (none: ready, delayed and buried) is
   * deleted now, and without a state the jobs reserved now are deleted when they come
   * back (release, bury, TTR, disconnect). The number deleted now; NOT_FOUND: no such tube.
   */
  deleteTube?(tube: string, state?: TubeState): Answer<number | Refusal>;
  /** kick-tube: as kick on that tube (state: only buried, or only delayed, jobs). NOT_FOUND: no such tube. */
  kickTube?(tube: string, bound: number, state?: "buried" | "delayed"): Answer<number | Refusal>;
  /** peek-tube: peek-ready / -delayed / -buried on a named tube. */
  peekTube?(tube: string, state: ListState): Answer<JobOut | undefined>;
  /** put-at: put with the delay that makes the job ready at `atSec` (Unix seconds; past: now). */
  putAt?(c: C, job: NewJobAt): Answer<PutResult>;
  /** put-unique: put, unless a live job of the used tube has this key (then its id). */
  putUnique?(c: C, job: UniqueJob): Answer<PutResult | Exists>;
  /**
   * set-dlq: after maxAttempts attempts a job of the tube is buried in deadTube (0: no
   * limit). The tube exists (created if needed) while it has a policy.
   */
  setDlq?(tube: string, maxAttempts: number, deadTube: string): Answer<"OK" | "INTERNAL_ERROR">;
  /** set-backoff: a released or timed-out job of the tube comes back delayed (base 0: no backoff). */
  setBackoff?(tube: string, baseSec: number, capSec: number): Answer<"OK" | "INTERNAL_ERROR">;
  /**
   * stats-conn, list-connections: the ids of the jobs each client holds reserved now,
   * ascending, one list per client in their order (a reservation whose TTR ended is none).
   */
  reservedIds?(clients: readonly C[]): Answer<number[][]>;
}
