// The engine seam: what the protocol asks of whatever keeps the jobs. Types only.
//
// protocol/ is written against this interface and the snapshots it reads
// (snapshots.ts) and nothing else of either engine, so that the in-memory engine
// (core/memory/, with its write-ahead log) and an engine that answers later (core/pg/,
// a database's) serve the same wire. An answer is a value or a promise
// of one (Answer<T>): the in-memory engine always answers at once and allocates no
// promise; a connection whose answer is pending processes nothing else until it comes,
// so replies still leave in command order.
//
// What an engine owns besides the jobs: its time (Clock, with the one timer), and
// when a connection's replies may go (settle(): the log's shared append and fsync for
// the in-memory engine, a commit for a database). Connections, command counters and
// producer/worker counts are the protocol's (per node); jobs and tubes the engine's.
import type { Clock } from "./clock.ts";
import type {
  EngineMetrics,
  EngineStats,
  JobList,
  JobStats,
  ListState,
  ScheduleInfo,
  TubeSnapshot,
  TubeStats,
} from "./snapshots.ts";

// The seam names every type of it: the snapshots are declared in core/snapshots.ts.
export type {
  ClusterNode,
  DatabaseHealth,
  EngineMetrics,
  EngineStats,
  HistogramView,
  JobList,
  JobSnapshot,
  JobState,
  JobStats,
  ListState,
  LogHealth,
  LogStats,
  RetryPolicy,
  ScheduleInfo,
  TubeLimits,
  TubeSnapshot,
  TubeStats,
} from "./snapshots.ts";

/**
 * An answer now, or later. A later answer that fails makes the protocol answer
 * INTERNAL_ERROR and log the error, unless the error carries `logged: true` (the engine
 * said why already, e.g. once per database outage, not once per command).
 */
export type Answer<T> = T | Promise<T>;

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

/** schedule's recurring job: its name, its spec (core/schedule_spec.ts) and the job each due time puts. */
export interface NewSchedule {
  /** Its name (replaces a schedule of that name). */
  readonly name: string;
  /** The tube each run puts its job into. */
  readonly tube: string;
  /** `every:<seconds>` or a cron expression with `_` between its fields, as the command gave it (well-formed). */
  readonly spec: string;
  /** The job's priority. */
  readonly pri: number;
  /** The job's time to run, seconds. */
  readonly ttrSec: number;
  /** The job's body with its trailing CRLF; the engine may keep it. */
  readonly body: Uint8Array;
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

/** What put-unique can answer beyond put's answers: the live job that holds the key. */
export interface Exists {
  /** The id of the job that holds the key. */
  readonly exists: number;
}

/** The states delete-tube and kick-tube may be limited to (none: every state the command covers). */
export type TubeState = ListState;

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
  /**
   * A worker's reserve already read behind its delete may be called before the delete is
   * answered (an engine that answers later: both then go in one transaction). The engine
   * runs them in that order, settles the delete's answer first, and fails both or neither.
   */
  readonly reserveBehindDelete?: boolean;
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
   * set-concurrency: at most `max` jobs of the tube reserved at once (0: no limit); a reserve
   * waits, as on an empty tube, while the tube is at its limit. The tube exists (created if
   * needed) while it has a limit.
   */
  setConcurrency?(tube: string, max: number): Answer<"OK" | "INTERNAL_ERROR">;
  /** set-rate: at most `count` reservations of the tube in any window of `windowSec` seconds (count 0: none). */
  setRate?(tube: string, count: number, windowSec: number): Answer<"OK" | "INTERNAL_ERROR">;
  /** schedule: add or replace a recurring job; each of its due times puts one job. */
  schedule?(s: NewSchedule): Answer<"OK" | "INTERNAL_ERROR">;
  /** unschedule: remove a schedule by name. */
  unschedule?(name: string): Answer<"DELETED" | Refusal>;
  /** list-schedules: every schedule, by name. */
  listSchedules?(): Answer<ScheduleInfo[]>;
  /**
   * stats-conn, list-connections: the ids of the jobs each client holds reserved now,
   * ascending, one list per client in their order (a reservation whose TTR ended is none).
   */
  reservedIds?(clients: readonly C[]): Answer<number[][]>;
}
