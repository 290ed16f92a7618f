// What a Binlog is built from: the flags it runs with, the engine's live-job lookup,
// and the parts open.ts rebuilds from the replayed files (BinlogParts).
import type { JobRecord } from "../wal.ts";
import type { Ballast } from "./ballast.ts";
import type { Homes } from "./homes.ts";
import type { IdMark } from "./ids.ts";
import type { Segments } from "./segments.ts";
import type { StandingState } from "./standing.ts";

/** -s when not given: a log file's size, bytes (beanstalkd's default). */
export const DEFAULT_BINLOG_SIZE = 10485760;
/** -f when not given: fsync at most every this many ms (beanstalkd's default). */
export const DEFAULT_FSYNC_MS = 50;

export interface BinlogOptions {
  dir: string;
  /** -f MS: fsync at most every MS ms (0: after every write); -F: "never". */
  fsyncMs: number | "never";
  /** Replies wait for synced(); implies an fsync per group of commands. */
  durableAcks: boolean;
  /** -s: a new file is started when a record would take the current one past this. */
  maxFileSize: number;
  /** -z: not checked on replay (a job once accepted is always replayed). */
  maxJobSize: number;
  log: (msg: string) => void;
}

/** The engine's current view of a live job, body included (for compaction). */
export type LiveLookup = (id: number) => JobRecord | undefined;

/** The replayed log, rebuilt by openBinlog (open.ts) before the Binlog takes it over. */
export interface BinlogParts {
  segs: Segments;
  ids: IdMark;
  homes: Homes;
  ballast: Ballast;
  /** Highest id and bury order found in the files. */
  maxId: number;
  maxBuryOrder: number;
  /** Tube policies and limits in force, schedules with their last runs (standing.ts). */
  standing: StandingState;
}
