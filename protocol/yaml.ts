// The YAML documents of stats, stats-job, stats-tube and the tube lists, in 1.12's
// wire key order. String values are written plain, as 1.12 writes them, unless a YAML
// reader would misread the plain value; only then are they double-quoted, as 1.13
// always does. Both matter to real clients: jackd parses YAML and reads 1.12's
// `os: #1 SMP ...` as a comment, while greenstalk splits lines at ": " and keeps quotes
// as part of the value (1.13's `tube: "default"` reaches its users as `"default"`).
import type { EngineStats, JobStats, RetryPolicy, TubeLimits, TubeStats } from "../core/engine.ts";
import { CMD_KEYS, type Counters } from "./counters.ts";
import type { HostInfo } from "./host.ts";

/** Quote a string for YAML: printable ASCII kept, the rest escaped. */
export function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (c >= 32 && c < 127) out += ch;
    else if (c <= 0xff) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c <= 0xffff) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += "\\U" + c.toString(16).padStart(8, "0");
  }
  return out + '"';
}

/** YAML 1.1 and 1.2 spellings of numbers (ints, sexagesimals, floats, hex, octal, binary, inf, nan). */
const NUMBER =
  /^(?:[-+]?(?:[0-9][0-9_]*(?::[0-5]?[0-9])*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
/** Booleans and nulls of YAML 1.1 and 1.2. */
const WORD = /^(?:y|yes|n|no|true|false|on|off|null|~)$/i;
/** A date, alone or starting a timestamp. */
const DATE = /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:$|[Tt \t])/;
/** A first character that makes YAML read something other than a plain string. */
const INDICATOR = /^[#&*!|>'"%@`\-?:{}[\],\s]/;
/** A comment start, a mapping separator, a trailing colon or space, or a byte that needs escaping. */
const INSIDE = /: |:\t|[ \t]#|:$|\s$|[^\x20-\x7e]/;

/** A string value: plain when a YAML reader reads it back as that same string, else quoted. */
export function scalar(s: string): string {
  const ambiguous = s === "" || INDICATOR.test(s) || INSIDE.test(s) || NUMBER.test(s) || WORD.test(s) ||
    DATE.test(s);
  return ambiguous ? quote(s) : s;
}

/** Seconds with 6 decimals, from microseconds (rusage-utime style). */
function secs(us: number): string {
  const whole = Math.floor(us / 1e6);
  return `${whole}.${String(Math.floor(us - whole * 1e6)).padStart(6, "0")}`;
}

export interface ServerFacts {
  host: HostInfo;
  /** Random per start. */
  id: string;
  version: string;
  /** Monotonic ms at start. */
  startedAt: number;
}

/** `stats`: the engine's jobs and tubes, this server's counters and facts; `now` monotonic ms. */
export function statsYaml(g: EngineStats, c: Counters, f: ServerFacts, maxJobSize: number, now: number): string {
  const w = g.binlog;
  const cpu = f.host.cpu();
  let y = "---\n";
  y += `current-jobs-urgent: ${g.urgent}\n`;
  y += `current-jobs-ready: ${g.ready}\n`;
  y += `current-jobs-reserved: ${g.reserved}\n`;
  y += `current-jobs-delayed: ${g.delayed}\n`;
  y += `current-jobs-buried: ${g.buried}\n`;
  for (let i = 0; i < CMD_KEYS.length; i++) y += `cmd-${CMD_KEYS[i]}: ${c.cmd[i]}\n`;
  y += `job-timeouts: ${g.jobTimeouts}\n`;
  y += `total-jobs: ${g.totalJobs}\n`;
  y += `max-job-size: ${maxJobSize}\n`;
  y += `current-tubes: ${g.tubes}\n`;
  y += `current-connections: ${c.connections}\n`;
  y += `current-producers: ${c.producers}\n`;
  y += `current-workers: ${c.workers}\n`;
  y += `current-waiting: ${g.waiting}\n`;
  y += `total-connections: ${c.totalConnections}\n`;
  y += `pid: ${f.host.pid}\n`;
  y += `version: ${quote(f.version)}\n`;
  y += `rusage-utime: ${secs(cpu.user)}\n`;
  y += `rusage-stime: ${secs(cpu.system)}\n`;
  y += `uptime: ${Math.trunc((now - f.startedAt) / 1000)}\n`;
  y += `binlog-oldest-index: ${w.oldestIndex}\n`;
  y += `binlog-current-index: ${w.currentIndex}\n`;
  y += `binlog-records-migrated: ${w.recordsMigrated}\n`;
  y += `binlog-records-written: ${w.recordsWritten}\n`;
  y += `binlog-max-size: ${w.maxSize}\n`;
  y += `draining: ${g.draining}\n`;
  y += `id: ${f.id}\n`;
  y += `hostname: ${scalar(f.host.hostname)}\n`;
  y += `os: ${scalar(f.host.os)}\n`;
  y += `platform: ${scalar(f.host.platform)}\n`;
  return y;
}

/**
 * stats-job. The extension keys (docs/extensions.md) follow 1.12's, and only for jobs
 * that have them, so a stock client never sees them: `dlq-from-tube` (beanstalkd-pi's
 * name) on a dead letter, `unique-key` on a put-unique job.
 */
export function statsJobYaml(s: JobStats): string {
  return "---\n" +
    `id: ${s.id}\n` +
    `tube: ${scalar(s.tube)}\n` +
    `state: ${s.state}\n` +
    `pri: ${s.pri}\n` +
    `age: ${s.age}\n` +
    `delay: ${s.delay}\n` +
    `ttr: ${s.ttr}\n` +
    `time-left: ${s.timeLeft}\n` +
    `file: ${s.file}\n` +
    `reserves: ${s.reserves}\n` +
    `timeouts: ${s.timeouts}\n` +
    `releases: ${s.releases}\n` +
    `buries: ${s.buries}\n` +
    `kicks: ${s.kicks}\n` +
    (s.deadLetterFrom === undefined ? "" : `dlq-from-tube: ${scalar(s.deadLetterFrom)}\n`) +
    (s.key === undefined ? "" : `unique-key: ${scalar(s.key)}\n`);
}

/**
 * stats-tube. A tube with a retry policy (set-dlq, set-backoff) also shows it, after
 * 1.12's keys: beanstalkd-pi's `dlq-max-attempts` and `dlq-tube`, then tubeway's
 * `backoff-base` and `backoff-cap`; a tube with limits (set-concurrency, set-rate) shows
 * them last. A tube without either shows 1.12's keys only.
 */
export function statsTubeYaml(s: TubeStats): string {
  const p = s.policy;
  const l = s.limits;
  return "---\n" +
    `name: ${scalar(s.name)}\n` +
    `current-jobs-urgent: ${s.urgent}\n` +
    `current-jobs-ready: ${s.ready}\n` +
    `current-jobs-reserved: ${s.reserved}\n` +
    `current-jobs-delayed: ${s.delayed}\n` +
    `current-jobs-buried: ${s.buried}\n` +
    `total-jobs: ${s.totalJobs}\n` +
    `current-using: ${s.using}\n` +
    `current-watching: ${s.watching}\n` +
    `current-waiting: ${s.waiting}\n` +
    `cmd-delete: ${s.cmdDelete}\n` +
    `cmd-pause-tube: ${s.cmdPauseTube}\n` +
    `pause: ${s.pause}\n` +
    `pause-time-left: ${s.pauseTimeLeft}\n` +
    (p === undefined ? "" : policyYaml(p, "")) +
    (l === undefined ? "" : limitsYaml(l, ""));
}

/** A retry policy's keys, each line after `pad`. */
export function policyYaml(p: RetryPolicy, pad: string): string {
  return `${pad}dlq-max-attempts: ${p.maxAttempts}\n` +
    `${pad}dlq-tube: ${p.deadTube}\n` +
    `${pad}backoff-base: ${p.backoffBaseSec}\n` +
    `${pad}backoff-cap: ${p.backoffCapSec}\n`;
}

/** Limits' keys, each line after `pad`: at once, per window, the window in seconds. */
export function limitsYaml(l: TubeLimits, pad: string): string {
  return `${pad}concurrency-limit: ${l.concurrency}\n` +
    `${pad}rate-limit: ${l.rateCount}\n` +
    `${pad}rate-window: ${l.rateWindowSec}\n`;
}

/** list-tubes / list-tubes-watched: names raw, unquoted, in every version. */
export function listYaml(names: readonly string[]): string {
  let y = "---\n";
  for (const n of names) y += `- ${n}\n`;
  return y;
}
