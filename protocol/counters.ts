// What this server saw of its clients, for `stats` and the metrics port: commands by
// verb (beanstalkd's op_ct), connections, producers and workers. These are the
// protocol's, counted per server process (per node when several share an engine);
// jobs and tubes are the engine's.

/** The visible cmd-* keys, in beanstalkd 1.12's wire order. */
export const CMD_KEYS = [
  "put",
  "peek",
  "peek-ready",
  "peek-delayed",
  "peek-buried",
  "reserve",
  "reserve-with-timeout",
  "delete",
  "release",
  "use",
  "watch",
  "ignore",
  "bury",
  "kick",
  "touch",
  "stats",
  "stats-job",
  "stats-tube",
  "list-tubes",
  "list-tube-used",
  "list-tubes-watched",
  "pause-tube",
] as const;

/**
 * The extension commands (docs/extensions.md), counted apart: stock `stats` never shows them (its
 * keys stay 1.12's); the metrics port does.
 */
export const EXT_KEYS = [
  "ping",
  "put-at",
  "kick-tube",
  "delete-tube",
  "peek-tube",
  "list-jobs",
  "list-tubes-paused",
  "stats-tube-all",
  "stats-conn",
  "list-connections",
  "set-dlq",
  "capabilities",
  "drain",
  "put-unique",
  "set-backoff",
  "set-concurrency",
  "set-rate",
  "schedule",
  "unschedule",
  "list-schedules",
] as const;

export class Counters {
  /** cmd-* counters, indexed like CMD_KEYS. */
  readonly cmd = new Float64Array(CMD_KEYS.length);
  /** Extension commands, indexed like EXT_KEYS. */
  readonly ext = new Float64Array(EXT_KEYS.length);
  /** Count one command (an index into CMD_KEYS). */
  bump(i: number): void {
    this.cmd[i] = this.cmd[i]! + 1;
  }
  /** Count one extension command (an index into EXT_KEYS). */
  bumpExt(i: number): void {
    this.ext[i] = this.ext[i]! + 1;
  }
  totalConnections = 0;
  /** Open connections, and those of them that sent a put line / a reserve (1.12's producers and workers). */
  connections = 0;
  producers = 0;
  workers = 0;
}
