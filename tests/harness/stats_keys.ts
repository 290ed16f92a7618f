// The key lists of stats, stats-job and stats-tube in beanstalkd 1.12's wire order,
// written out in stats_keys.json (not taken from the server) so that the tests check the
// server against the spec rather than against itself. The client scripts of
// tests/system/clients/ (JavaScript, PHP, Ruby) read the same file.
import keys from "./stats_keys.json" with { type: "json" };

export const STATS_KEYS: readonly string[] = keys.stats;
export const JOB_KEYS: readonly string[] = keys["stats-job"];
export const TUBE_KEYS: readonly string[] = keys["stats-tube"];

/**
 * stats-tube-all's keys: beanstalkd-pi's, in its order (tube_all.go, formatAllTubeStats:
 * not stats-tube's order), then tubeway's own (backoff, limits).
 */
export const TUBE_ALL_KEYS: readonly string[] = [
  "name",
  "current-jobs-urgent",
  "current-jobs-ready",
  "current-jobs-reserved",
  "current-jobs-delayed",
  "current-jobs-buried",
  "total-jobs",
  "current-using",
  "current-waiting",
  "current-watching",
  "pause",
  "cmd-delete",
  "cmd-pause-tube",
  "pause-time-left",
  "dlq-max-attempts",
  "dlq-tube",
  "backoff-base",
  "backoff-cap",
  "concurrency-limit",
  "rate-limit",
  "rate-window",
];
