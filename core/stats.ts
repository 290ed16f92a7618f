import type { Job, Tube } from "./model.ts";

// Counters behind `stats`. The visible cmd-* keys, in beanstalkd 1.12's wire order.
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

export type CountedCmd = (typeof CMD_KEYS)[number];

/** Index of each counted command in Counters.cmd. */
export const CMD = Object.fromEntries(CMD_KEYS.map((k, i) => [k, i])) as Record<CountedCmd, number>;

export class Counters {
  /** cmd-* counters, indexed by CMD. */
  readonly cmd = new Float64Array(CMD_KEYS.length);
  /** Count one command (index from CMD). */
  bump(i: number): void {
    this.cmd[i] = this.cmd[i]! + 1;
  }
  jobTimeouts = 0;
  totalJobs = 0;
  totalConnections = 0;
}

/** A snapshot of one job for stats-job (times in whole seconds). */
export interface JobStats {
  id: number;
  tube: string;
  state: string;
  pri: number;
  age: number;
  delay: number;
  ttr: number;
  timeLeft: number;
  file: number;
  reserves: number;
  timeouts: number;
  releases: number;
  buries: number;
  kicks: number;
}

/** A snapshot of one tube for stats-tube. */
export interface TubeStats {
  name: string;
  urgent: number;
  ready: number;
  reserved: number;
  delayed: number;
  buried: number;
  totalJobs: number;
  using: number;
  watching: number;
  waiting: number;
  cmdDelete: number;
  cmdPauseTube: number;
  pause: number;
  pauseTimeLeft: number;
}

/** stats-job for j at monotonic time now; `file` is the log file holding it (0 without -b). */
export function jobStats(j: Job, now: number, file: number): JobStats {
  const timed = j.state === "reserved" || j.state === "delayed";
  return {
    id: j.id,
    tube: j.tube.name,
    state: j.state,
    pri: j.pri,
    age: Math.trunc((now - j.createdAt) / 1000),
    delay: Math.trunc(j.delayMs / 1000),
    ttr: Math.trunc(j.ttrMs / 1000),
    timeLeft: timed ? Math.trunc((j.deadline - now) / 1000) : 0,
    file,
    reserves: j.reserves,
    timeouts: j.timeouts,
    releases: j.releases,
    buries: j.buries,
    kicks: j.kicks,
  };
}

/** stats-tube for t at monotonic time now; an expired pause shows as 0 until the tick clears it. */
export function tubeStats(t: Tube, now: number): TubeStats {
  const paused = t.unpauseAt > now;
  return {
    name: t.name,
    urgent: t.urgent,
    ready: t.ready.size,
    reserved: t.reserved,
    delayed: t.delayed.size,
    buried: t.buried.size,
    totalJobs: t.totalJobs,
    using: t.using,
    watching: t.watching,
    waiting: t.waiting,
    cmdDelete: t.cmdDelete,
    cmdPauseTube: t.cmdPauseTube,
    pause: paused ? Math.trunc(t.pauseMs / 1000) : 0,
    pauseTimeLeft: paused ? Math.trunc((t.unpauseAt - now) / 1000) : 0,
  };
}

/** The job gauges of `stats`, summed over every tube. */
export function jobGauges(tubes: readonly Tube[]) {
  let urgent = 0, ready = 0, reserved = 0, delayed = 0, buried = 0;
  for (const t of tubes) {
    urgent += t.urgent;
    ready += t.ready.size;
    reserved += t.reserved;
    delayed += t.delayed.size;
    buried += t.buried.size;
  }
  return { urgent, ready, reserved, delayed, buried };
}

/** The gauges of `stats`: jobs by state, tubes, connections by kind. */
export type Gauges = ReturnType<typeof jobGauges> & {
  tubes: number;
  connections: number;
  producers: number;
  workers: number;
  waiting: number;
};
