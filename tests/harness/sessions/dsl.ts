// The language of the differential suite's scripted sessions (tests/system/differential_test.ts);
// the sessions themselves are in the other files of this folder, gathered by ../sessions.ts.
//
// Each session is plain data: a list of steps played, byte for byte, against a fresh
// beanstalkd 1.12 and a fresh tubeway. Every reply is recorded; the two transcripts
// must be identical after normalisation (see the test file). A step may also carry
// `want`: the exact reply both servers must give, which pins the quirk the session is
// about, so a session cannot silently stop testing what its name says.
//
// Replies that differ on purpose (DESIGN/spec §0 and the list in the suite's brief)
// are written as `differ(v112, tubeway)`: each server must give its own answer exactly.
//
// Not provokable from the wire, so not covered: OUT_OF_MEMORY (needs the heap or the
// binlog to fail to grow) and INTERNAL_ERROR (needs a server fault).

import { JOB_KEYS, STATS_KEYS, TUBE_KEYS } from "../stats_keys.ts";

/** Which answer a server is expected to give where the two deliberately differ. */
export type Dialect = "1.12" | "tubeway";

/** An expected reply, the same for both servers or one per dialect. */
export type Want = string | { readonly "1.12": string; readonly tubeway: string };

/** Placeholder a normalised value is replaced with (pid, uptime, age, ...). */
export const ANY = "*";

export type Step =
  /** Send `line` + CRLF on connection c and read one whole reply. */
  | { op: "cmd"; c: number; line: string; want?: Want | undefined; ms?: number | undefined }
  /** Send raw bytes; several strings are several writes, `gapMs` apart. */
  | { op: "send"; c: number; data: string[]; gapMs: number }
  /** Read one whole reply. */
  | { op: "reply"; c: number; want?: Want | undefined; ms?: number | undefined }
  /** Wait `ms`, then record whatever arrived ("" for nothing). `want` is exact bytes. */
  | { op: "idle"; c: number; ms: number; want?: Want | undefined }
  /**
   * Send `line` + CRLF until the reply matches (bounded); records nothing. For ordering
   * across connections, e.g. waiting until the server has registered a waiter. It changes
   * counters by an unknown amount, so no later `stats` in the session can be compared.
   */
  | { op: "until"; c: number; line: string; match: RegExp }
  /** Expect the server to close the connection; records "(closed)" or "(open)". */
  | { op: "closed"; c: number; want?: Want | undefined }
  /** Half-close (send FIN, keep reading). */
  | { op: "end"; c: number }
  /** Close both directions. */
  | { op: "close"; c: number }
  | { op: "sleep"; ms: number }
  /** Signal the server process (SIGUSR1 = drain mode). */
  | { op: "signal"; sig: "SIGUSR1" };

export interface Session {
  name: string;
  /** Server flags, given to both servers. */
  flags?: string[];
  /**
   * Stats keys that are normally normalised but compared exactly here
   * (current-connections is racy against the harness's own readiness probe).
   */
  exact?: string[];
  /** Set when the session contains deliberate differences: why. */
  differs?: string;
  steps: Step[];
}

/** Replies written without a trailing CRLF get one (idle/closed wants are exact). */
export function cmd(line: string, want?: Want, ms?: number): Step {
  return { op: "cmd", c: 0, line, want, ms };
}
export function send(...data: string[]): Step {
  return { op: "send", c: 0, data, gapMs: 0 };
}
/** Send each piece as its own write, `gapMs` apart. */
export function trickle(gapMs: number, pieces: string[]): Step {
  return { op: "send", c: 0, data: pieces, gapMs };
}
export function reply(want?: Want, ms?: number): Step {
  return { op: "reply", c: 0, want, ms };
}
export function idle(ms: number, want?: Want): Step {
  return { op: "idle", c: 0, ms, want };
}
export function until(line: string, match: RegExp): Step {
  return { op: "until", c: 0, line, match };
}
export function closed(): Step {
  return { op: "closed", c: 0, want: "(closed)" };
}
export function end(): Step {
  return { op: "end", c: 0 };
}
export function close(): Step {
  return { op: "close", c: 0 };
}
export function sleep(ms: number): Step {
  return { op: "sleep", ms };
}
export function signal(sig: "SIGUSR1"): Step {
  return { op: "signal", sig };
}
/** Run the given steps on connection c (connections are dialled on first use). */
export function on(c: number, ...steps: Step[]): Step[] {
  return steps.map((s) => ("c" in s ? { ...s, c } : s));
}
/** A deliberate difference: beanstalkd 1.12 gives `v112`, tubeway gives `tubeway`. */
export function differ(v112: string, tubeway: string): Want {
  return { "1.12": v112, tubeway };
}

const len = (s: string) => s.length; // every string here is latin1: one char, one byte

/** A put command line plus its body (the step adds the body's CRLF). */
export function put(body: string, pri = 0, delay = 0, ttr = 60): string {
  return `put ${pri} ${delay} ${ttr} ${len(body)}\r\n${body}`;
}
/** FOUND/RESERVED reply. */
export function job(word: "FOUND" | "RESERVED", id: number, body: string): string {
  return `${word} ${id} ${len(body)}\r\n${body}\r\n`;
}
/** OK reply around a YAML block. */
export function ok(yaml: string): string {
  return `OK ${len(yaml)}\r\n${yaml}\r\n`;
}
/** list-tubes / list-tubes-watched reply. */
export function list(...names: string[]): string {
  return ok("---\n" + names.map((n) => `- ${n}\n`).join(""));
}

type Val = number | string | boolean;
function yaml(keys: readonly string[], vals: Record<string, Val>): string {
  return "---\n" + keys.map((k) => `${k}: ${vals[k]}\n`).join("");
}

/** Normalised `stats-job` reply (age always, time-left when reserved/delayed, are ANY). */
export function jobStats(
  id: number,
  tube: string,
  state: "ready" | "reserved" | "delayed" | "buried",
  o: Partial<Record<"pri" | "delay" | "ttr" | "reserves" | "timeouts" | "releases" | "buries" | "kicks", number>> = {},
): string {
  const timed = state === "reserved" || state === "delayed";
  return ok(yaml(JOB_KEYS, {
    id,
    tube,
    state,
    pri: 0,
    age: ANY,
    delay: 0,
    ttr: 60,
    "time-left": timed ? ANY : 0,
    file: 0,
    reserves: 0,
    timeouts: 0,
    releases: 0,
    buries: 0,
    kicks: 0,
    ...o,
  }));
}

/** Normalised `stats-tube` reply (pause-time-left is ANY while paused). */
export function tubeStats(name: string, o: Partial<Record<(typeof TUBE_KEYS)[number], number>> = {}): string {
  const v: Record<string, Val> = { name };
  for (const k of TUBE_KEYS.slice(1)) v[k] = 0;
  Object.assign(v, o);
  if (v["pause"] !== 0) v["pause-time-left"] = ANY;
  return ok(yaml(TUBE_KEYS, v));
}

/** The keys of `stats` whose values the suite replaces with ANY (unless a session says `exact`). */
export const STATS_NORMALISED = [
  "current-connections",
  "total-connections",
  "pid",
  "version",
  "rusage-utime",
  "rusage-stime",
  "uptime",
  "id",
  "hostname",
  "os",
  "platform",
];

/** Normalised `stats` reply: all counters 0 unless given. */
export function serverStats(o: Partial<Record<(typeof STATS_KEYS)[number], Val>> = {}): string {
  const v: Record<string, Val> = {};
  for (const k of STATS_KEYS) v[k] = 0;
  for (const k of STATS_NORMALISED) v[k] = ANY;
  Object.assign(v, {
    "max-job-size": 65535,
    "current-tubes": 1,
    "binlog-max-size": 10485760,
    draining: "false",
  }, o);
  return ok(yaml(STATS_KEYS, v));
}

/** A 200-byte tube name (the longest allowed). */
export const N200 = "n".repeat(200);
/** n bytes of "x". */
export const x = (n: number): string => "x".repeat(n);
