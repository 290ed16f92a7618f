// Scripted sessions for the differential suite (tests/system/differential_test.ts).
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

import { JOB_KEYS, STATS_KEYS, TUBE_KEYS } from "./stats_keys.ts";

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

const N200 = "n".repeat(200);
const x = (n: number) => "x".repeat(n);

export const SESSIONS: Session[] = [
  {
    name: "put, peek, delete: bodies with NUL and CRLF, zero length, extreme pri and ttr",
    steps: [
      cmd(put("hello"), "INSERTED 1"),
      cmd(put("", 10), "INSERTED 2"),
      cmd(put("a\r\nb\0c\r\n", 5), "INSERTED 3"),
      cmd("peek 1", job("FOUND", 1, "hello")),
      cmd("peek 2", job("FOUND", 2, "")),
      cmd("peek 3", job("FOUND", 3, "a\r\nb\0c\r\n")),
      cmd("peek-ready", job("FOUND", 1, "hello")),
      cmd("stats-job 3", jobStats(3, "default", "ready", { pri: 5 })),
      cmd("delete 1", "DELETED"),
      cmd("delete 1", "NOT_FOUND"),
      cmd("peek 1", "NOT_FOUND"),
      cmd("peek-ready", job("FOUND", 3, "a\r\nb\0c\r\n")),
      cmd("reserve", job("RESERVED", 3, "a\r\nb\0c\r\n")),
      cmd(put("\x80\xff\x00", 4294967295, 0, 4294967295), "INSERTED 4"),
      cmd("stats-job 4", jobStats(4, "default", "ready", { pri: 4294967295, ttr: 4294967295 })),
      cmd("put 4294967296 0 60 1", "BAD_FORMAT"),
      cmd("reserve-job 4", job("RESERVED", 4, "\x80\xff\x00")),
      cmd(
        "stats-tube default",
        tubeStats("default", {
          "current-jobs-urgent": 1,
          "current-jobs-ready": 1,
          "current-jobs-reserved": 2,
          "total-jobs": 4,
          "current-using": 1,
          "current-watching": 1,
          "cmd-delete": 1,
        }),
      ),
      cmd("stats"),
    ],
  },
  {
    name: "ttr values are reported unchanged, ttr 0 becomes 1",
    steps: [0, 1, 120, 4294, 4295, 4296, 4297, 5000, 21600, 4294967295].flatMap((ttr, i) => [
      cmd(put("t", 0, 0, ttr), `INSERTED ${i + 1}`),
      cmd(`stats-job ${i + 1}`, jobStats(i + 1, "default", "ready", { ttr: Math.max(ttr, 1) })),
    ]),
  },
  {
    name: "put line format: integers, spaces, tabs, signs, overflow, trailing garbage",
    steps: [
      cmd("put", "UNKNOWN_COMMAND"),
      cmd("put ", "BAD_FORMAT"),
      cmd("put 0 0 60", "BAD_FORMAT"),
      cmd("put 0 0 60 -1", "BAD_FORMAT"),
      cmd("put -1 0 60 1", "BAD_FORMAT"),
      cmd("put +1 0 60 1", "BAD_FORMAT"),
      cmd("put 512 -1 100 0", "BAD_FORMAT"),
      cmd("put -1kkdj39sdf 0 60 1", "BAD_FORMAT"),
      cmd("put 0 4294967296 60 1", "BAD_FORMAT"),
      cmd("put 0 0 4294967296 1", "BAD_FORMAT"),
      cmd("put 0 0 60 4294967296", "BAD_FORMAT"),
      cmd("put 0 0 60 10b", "BAD_FORMAT"),
      cmd("put\t0 0 60 1", "UNKNOWN_COMMAND"),
      cmd("put 0\t0 60 1", "BAD_FORMAT"),
      // BAD_FORMAT does not consume the body: it is read as the next command.
      send("put 0 0 60 3x\r\nabc\r\n"),
      reply("BAD_FORMAT"),
      reply("UNKNOWN_COMMAND"),
      send("put 0 0 60 3 \r\nabc\r\n"),
      reply("BAD_FORMAT"),
      reply("UNKNOWN_COMMAND"),
      send("put 0 0 60 1 2\r\nz\r\n"),
      reply("BAD_FORMAT"),
      reply("UNKNOWN_COMMAND"),
      // ...and uses up no id.
      cmd(put("z"), "INSERTED 1"),
      cmd("put 00000000000000000001 0000 00060 0001\r\nz", "INSERTED 2"),
      cmd("put  1   0  5    1\r\nz", "INSERTED 3"),
      cmd("put 0 0 60 0\r\n", "INSERTED 4"),
      cmd(put("z", 0, 4294967295, 0), "INSERTED 5"),
      cmd("stats-job 3", jobStats(3, "default", "ready", { pri: 1, ttr: 5 })),
      cmd("stats-job 5", jobStats(5, "default", "delayed", { delay: 4294967295, ttr: 1 })),
      cmd("stats"),
    ],
  },
  {
    name: "EXPECTED_CRLF uses up an id; the bytes after the body are the next command",
    steps: [
      send("put 0 0 10 3\r\nabcde\r\n"),
      reply("EXPECTED_CRLF"),
      reply("UNKNOWN_COMMAND"),
      cmd(put("a"), "INSERTED 2"),
      send("put 0 0 10 3\r\nabc\n\r\nput 0 0 1 1\r\nx\r\n"),
      reply("EXPECTED_CRLF"),
      reply("UNKNOWN_COMMAND"),
      reply("UNKNOWN_COMMAND"),
      cmd(put("b"), "INSERTED 4"),
      // A body that arrives in pieces is waited for.
      send("put 0 0 10 2\r\nab"),
      idle(200, ""),
      send("\r"),
      idle(100, ""),
      send("\n"),
      reply("INSERTED 5"),
      send("put 0 0 10 0\r\nXY\r\n"),
      reply("EXPECTED_CRLF"),
      reply("UNKNOWN_COMMAND"),
      cmd("stats-job 1", "NOT_FOUND"),
      cmd("stats-job 3", "NOT_FOUND"),
      cmd("peek 5", job("FOUND", 5, "ab")),
      cmd(put("c"), "INSERTED 7"),
      cmd("stats"),
    ],
  },
  {
    name: "JOB_TOO_BIG (-z 10) swallows body+2 bytes first and uses up no id",
    flags: ["-z", "10"],
    steps: [
      cmd(put("0123456789"), "INSERTED 1"),
      send("put 0 0 60 11\r\n"),
      idle(200, ""),
      send("0123456789a"),
      idle(100, ""),
      send("bc"),
      reply("JOB_TOO_BIG"),
      cmd("list-tube-used", "USING default"),
      cmd(put("0123456789"), "INSERTED 2"),
      // Too big wins over trailing garbage on the line.
      send("put 0 0 60 99999 junk\r\n"),
      idle(100, ""),
      send(x(99999) + "\r\n"),
      reply("JOB_TOO_BIG"),
      cmd("list-tube-used", "USING default"),
      send("put 0 0 60 11\r\ndelete 1234\r\npeek 1\r\n"),
      reply("JOB_TOO_BIG"),
      reply(job("FOUND", 1, "0123456789")),
      cmd("put 0 0 60 4294967296", "BAD_FORMAT"),
      cmd(put(""), "INSERTED 3"),
      cmd("stats"),
    ],
  },
  {
    name: "drain mode (SIGUSR1): put gets DRAINING after its body, everything else works",
    flags: ["-z", "10"],
    steps: [
      cmd(put("a"), "INSERTED 1"),
      cmd(put("b", 0, 100), "INSERTED 2"),
      cmd("stats"),
      signal("SIGUSR1"),
      sleep(500),
      cmd(put("c"), "DRAINING"),
      send("put 0 0 60 1\r\nxyz\r\n"),
      reply("EXPECTED_CRLF"),
      reply("UNKNOWN_COMMAND"),
      send("put 0 0 60 11\r\n"),
      idle(150, ""),
      send("0123456789abc"),
      reply("JOB_TOO_BIG"),
      cmd("put 0 0 60 1x", "BAD_FORMAT"),
      cmd("reserve", job("RESERVED", 1, "a")),
      cmd("release 1 0 0", "RELEASED"),
      cmd("reserve-job 2", job("RESERVED", 2, "b")),
      cmd("bury 2 0", "BURIED"),
      cmd("kick 1", "KICKED 1"),
      cmd("delete 1", "DELETED"),
      cmd("use foo", "USING foo"),
      cmd(put("d"), "DRAINING"),
      cmd("peek 3", "NOT_FOUND"),
      cmd("stats-tube foo", tubeStats("foo", { "current-using": 1 })),
      ...on(1, cmd(put("e"), "DRAINING"), cmd("reserve-with-timeout 0", job("RESERVED", 2, "b"))),
      cmd("stats"),
    ],
  },
  {
    name: "command recognition: unknown commands and prefix quirks",
    steps: [
      cmd("", "UNKNOWN_COMMAND"),
      cmd("foo", "UNKNOWN_COMMAND"),
      cmd("PUT 0 0 60 1", "UNKNOWN_COMMAND"),
      cmd("Stats", "UNKNOWN_COMMAND"),
      cmd(" stats", "UNKNOWN_COMMAND"),
      ...[
        "put",
        "peek",
        "delete",
        "release",
        "bury",
        "kick",
        "kick-job",
        "touch",
        "use",
        "watch",
        "ignore",
        "peek1",
        "peek-",
        "list-tube",
        "use\tfoo",
        "pause_tube default 0",
      ].map((l) => cmd(l, "UNKNOWN_COMMAND")),
      ...[
        "reserve-job",
        "stats-job",
        "stats-tube",
        "reserve-with-timeout",
        "statsfoo",
        "stats ",
        "stats-jobs 1",
        "list-tubesX",
        "list-tubes ",
        "list-tube-usedX",
        "list-tubes-watched ",
        "peek-readyX",
        "peek-delayed ",
        "peek-buried1",
        "reserve ",
        "reserves",
        "reserve\t",
        "reserve-jobs 1",
        "reserve_job 1",
      ].map((l) => cmd(l, "BAD_FORMAT")),
      cmd("pause-tubedefault 1", "PAUSED"),
      cmd("pause-tube  default 0", "PAUSED"),
      cmd("pause-tube", "BAD_FORMAT"),
      cmd("pause-tube default", "BAD_FORMAT"),
      cmd("pause-tubes default 0"),
      cmd("kick-job 5", "NOT_FOUND"),
      cmd("kick 5", "KICKED 0"),
      cmd("stats"),
      ...on(1, send("quitXYZ\r\n"), closed()),
      ...on(2, send("quit\r\nlist-tube-used\r\n"), closed()),
      ...on(3, send("quit 1\r\n"), closed()),
      cmd("quit-tube"),
    ],
  },
  {
    name: "NUL anywhere in a command line is BAD_FORMAT",
    steps: [
      ...["\0stats", "stats\0", "use fo\0o", "\0", "quit\0", "put 0 0 60 1\0", "peek 1\0", "\0foo", "list-tubes\0x"]
        .map((l) => cmd(l, "BAD_FORMAT")),
      cmd("list-tubes", list("default")),
      cmd("stats"),
    ],
  },
  {
    name: "integer arguments: leading zeros, spaces, tab, sign, u32/u64 overflow, missing and extra args",
    steps: [
      cmd(put("a"), "INSERTED 1"),
      cmd("peek 00000000000000000001", job("FOUND", 1, "a")),
      cmd("peek  1", job("FOUND", 1, "a")),
      cmd("peek 18446744073709551615", "NOT_FOUND"),
      cmd("stats-job 18446744073709551615", "NOT_FOUND"),
      ...[
        "peek 18446744073709551616",
        "peek 99999999999999999999999",
        "peek foo111",
        "peek 111foo",
        "peek 1 ",
        "peek +1",
        "peek -1",
        "peek \t1",
        "peek 1\t",
        "peek ",
        "peek 0x1",
        "delete 1 2",
        "delete ",
        "bury 1",
        "bury 1 ",
        "release 1 2",
        "release 1 2 3 4",
        "release 1 2 3 ",
        "touch a111",
        "touch 111a",
        "touch !@#",
        "kick-job abc",
        "kick-job 1 ",
        "stats-job 111ABC",
        "stats-job 111 222",
        "reserve-job x",
        "reserve-job -1",
        "bury 1 4294967296",
        "release 1 4294967296 0",
        "release 1 0 4294967296",
        "pause-tube default 4294967296",
        "pause-tube default -1",
        "pause-tube default +1",
        "pause-tube default 1x",
        "delete 18446744073709551616",
      ].map((l) => cmd(l, "BAD_FORMAT")),
      cmd("release 1  2   3", "NOT_FOUND"),
      cmd("release 1 4294967295 4294967295", "NOT_FOUND"),
      cmd("bury 00001 0004294967295", "NOT_FOUND"),
      cmd("pause-tube default 01", "PAUSED"),
      cmd("pause-tube default   0", "PAUSED"),
      cmd("kick-job  1", "NOT_FOUND"),
      cmd("touch 0", "NOT_FOUND"),
      cmd("delete 0", "NOT_FOUND"),
      cmd("reserve-job 0", "NOT_FOUND"),
      cmd("stats"),
    ],
  },
  {
    name: "kick bound is lax (strtoul): sign, tab, trailing garbage, 32-bit truncation",
    steps: [
      ...[1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((i) => [
        cmd(put(`j${i}`), `INSERTED ${i}`),
        cmd("reserve", job("RESERVED", i, `j${i}`)),
        cmd(`bury ${i} 0`, "BURIED"),
      ]),
      cmd("kick 2abc", "KICKED 2"),
      cmd("kick +1", "KICKED 1"),
      cmd("kick \t1", "KICKED 1"),
      cmd("kick  1 ", "KICKED 1"),
      cmd("kick 4294967296", "KICKED 0"),
      cmd("kick 0x10", "KICKED 0"),
      cmd("kick 0", "KICKED 0"),
      cmd("kick -18446744073709551615", "KICKED 1"),
      cmd("kick abc", "BAD_FORMAT"),
      cmd("kick ", "BAD_FORMAT"),
      cmd("kick -", "BAD_FORMAT"),
      cmd("kick 99999999999999999999999", "BAD_FORMAT"),
      cmd("kick 18446744073709551616", "BAD_FORMAT"),
      cmd("kick -1", "KICKED 3"),
      cmd("kick 18446744073709551615", "KICKED 0"),
      cmd("stats"),
    ],
  },
  {
    name: "reserve-with-timeout is lax (strtol): garbage, sign, tab, truncation to int",
    steps: [
      ...["abc", "", "0", "\t0", " 0", "+0", "0x", "0 0", "-0", "00"].map((t) =>
        cmd(`reserve-with-timeout ${t}`, "TIMED_OUT")
      ),
      cmd("reserve-with-timeout 99999999999999999999", "BAD_FORMAT"),
      cmd("reserve-with-timeout -99999999999999999999", "BAD_FORMAT"),
      // These three wait one second.
      ...on(1, send("reserve-with-timeout 1abc\r\n")),
      ...on(2, send("reserve-with-timeout 4294967297\r\n")),
      ...on(3, send("reserve-with-timeout 1 \r\n")),
      // These wait forever: -1, and 2147483648 (an int overflow, so negative).
      ...on(4, send("reserve-with-timeout -1\r\n")),
      ...on(
        5,
        cmd("watch t5", "WATCHING 2"),
        cmd("ignore default", "WATCHING 1"),
        send("reserve-with-timeout 2147483648\r\n"),
      ),
      ...on(1, idle(400, "")),
      ...on(1, reply("TIMED_OUT")),
      ...on(2, reply("TIMED_OUT")),
      ...on(3, reply("TIMED_OUT")),
      sleep(200),
      ...on(4, idle(0, "")),
      ...on(5, idle(0, "")),
      cmd(put("a"), "INSERTED 1"),
      ...on(4, reply(job("RESERVED", 1, "a"))),
      cmd("use t5", "USING t5"),
      cmd(put("b"), "INSERTED 2"),
      ...on(5, reply(job("RESERVED", 2, "b"))),
      cmd("use default", "USING default"),
      cmd(put("c"), "INSERTED 3"),
      cmd("reserve-with-timeout 0", job("RESERVED", 3, "c")),
      cmd("stats"),
    ],
  },
  {
    name: "tube names: charset, 200-byte limit, leading '-', whole rest of line",
    steps: [
      cmd("use AZaz09-+/;.$_()", "USING AZaz09-+/;.$_()"),
      cmd("list-tube-used", "USING AZaz09-+/;.$_()"),
      cmd("use foo-", "USING foo-"),
      cmd("use _", "USING _"),
      cmd(`use ${N200}`, `USING ${N200}`),
      ...[
        "use -foo",
        "use a*b",
        "use  foo",
        "use foo ",
        "use ",
        "use a b",
        "use \xe9",
        "use a\tb",
        "use a!",
        "use a:b",
        `use ${N200}n`,
        `use ${x(218)}`,
        "watch -x",
        "watch ",
        `watch ${N200}n`,
        "ignore -x",
        `ignore ${N200}n`,
        "ignore ",
        "stats-tube -x",
        "stats-tube ",
        "stats-tube a*",
        `stats-tube ${N200}n`,
        "pause-tube -foo 1",
        "pause-tube foo* 1",
        "pause-tube foo 1 ",
        `pause-tube ${N200}n 1`,
        "pause-tube  1",
      ].map((l) => cmd(l, "BAD_FORMAT")),
      cmd("use a", "USING a"),
      cmd(`use ${x(300)}`, "BAD_FORMAT"),
      cmd("list-tube-used", "USING a"),
      cmd(`watch ${N200}`, "WATCHING 2"),
      cmd("watch ($)", "WATCHING 3"),
      cmd("stats-tube nosuch", "NOT_FOUND"),
      cmd("pause-tube nosuch 1", "NOT_FOUND"),
      cmd(`pause-tube ${N200} 4294967295`, "PAUSED"),
      cmd(`stats-tube ${N200}`, tubeStats(N200, { "current-watching": 1, "cmd-pause-tube": 1, pause: 4294967295 })),
      // Tubes named by an earlier `use` went away when the connection moved on.
      cmd("list-tubes", list("default", "a", N200, "($)")),
      cmd("list-tubes-watched", list("default", N200, "($)")),
      cmd("stats"),
    ],
  },
  {
    name: "line framing: 224-byte limit, over-long lines recover, LF alone is not a terminator",
    steps: [
      cmd(`use ${N200}`, `USING ${N200}`),
      // The longest legal command is exactly 224 bytes with its CRLF.
      cmd(`pause-tube ${N200} 4294967295`, "PAUSED"),
      cmd(x(222), "UNKNOWN_COMMAND"),
      send(x(224) + "\r\nlist-tube-used\r\n"),
      reply("BAD_FORMAT"),
      reply(`USING ${N200}`),
      send(x(498) + "\r\n" + put("z") + "\r\n"),
      reply("BAD_FORMAT"),
      reply("INSERTED 1"),
      send(x(2000) + "\r\nlist-tube-used\r\n"),
      reply("BAD_FORMAT"),
      reply(`USING ${N200}`),
      trickle(30, [x(100), x(100), x(100), "\r\nlist-tube-used\r\n"]),
      reply("BAD_FORMAT"),
      reply(`USING ${N200}`),
      send("stats\n"),
      idle(200, ""),
      send("\r\n"),
      reply("BAD_FORMAT"),
      send("list-tube-used\r"),
      idle(200, ""),
      send("\n"),
      reply(`USING ${N200}`),
      send("use a\nb\r\n"),
      reply("BAD_FORMAT"),
      send("\n\r\n"),
      reply("UNKNOWN_COMMAND"),
      cmd("stats"),
    ],
  },
  {
    name: "a line ends at the first CRLF, even after a stray CR",
    differs: "1.12 only looks at the first CR in the buffer; tubeway ends a line at the first CRLF anywhere",
    steps: [
      send("abc\rdef\r\n"),
      idle(300, differ("", "UNKNOWN_COMMAND\r\n")),
      // 1.12 stays stuck until 224 bytes have piled up, then gives one BAD_FORMAT.
      send(`${"y".repeat(220)}\r\nlist-tube-used\r\n`),
      idle(300, differ("BAD_FORMAT\r\nUSING default\r\n", "UNKNOWN_COMMAND\r\nUSING default\r\n")),
      cmd("list-tubes", list("default")),
      ...on(1, send("use foo\r\r\nlist-tube-used\r\n"), idle(300, differ("", "BAD_FORMAT\r\nUSING default\r\n"))),
      ...on(2, send("stats\rx\r\nlist-tubes-watched\r\n"), idle(300, differ("", "BAD_FORMAT\r\n" + list("default")))),
    ],
  },
  {
    name: "a 225-byte line (CR ends a 224-byte chunk) does not swallow the next command",
    differs: "1.12 drops the CR with the first 224-byte chunk, so the next command's CRLF ends the bad line",
    steps: [
      send(x(223) + "\r\nlist-tube-used\r\n"),
      idle(300, differ("BAD_FORMAT\r\n", "BAD_FORMAT\r\nUSING default\r\n")),
      cmd("list-tubes", list("default")),
      // The same chunk boundary one chunk later (449 = 2 x 224 + 1).
      ...on(
        1,
        send(x(447) + "\r\nlist-tube-used\r\nlist-tube-used\r\n"),
        idle(300, differ("BAD_FORMAT\r\nUSING default\r\n", "BAD_FORMAT\r\nUSING default\r\nUSING default\r\n")),
      ),
    ],
  },
  {
    name: "pipelining: many commands in one write, one command in many writes, reserve blocks the pipeline",
    steps: [
      // Blocked in reserve, a connection reads nothing further.
      ...on(
        2,
        send("watch empty\r\nignore default\r\nreserve\r\nlist-tube-used\r\n"),
        reply("WATCHING 2"),
        reply("WATCHING 1"),
        idle(300, ""),
      ),
      send(
        "use a\r\nuse b\r\n" + put("abc") + "\r\n" + put("he\r\no", 1) + "\r\nlist-tube-used\r\npeek-ready\r\n" +
          "watch b\r\nignore default\r\nreserve\r\ndelete 1\r\nstats-tube b\r\nlist-tubes\r\nbogus\r\nquit\r\nstats\r\n",
      ),
      reply("USING a"),
      reply("USING b"),
      reply("INSERTED 1"),
      reply("INSERTED 2"),
      reply("USING b"),
      reply(job("FOUND", 1, "abc")),
      reply("WATCHING 2"),
      reply("WATCHING 1"),
      reply(job("RESERVED", 1, "abc")),
      reply("DELETED"),
      reply(),
      reply(list("default", "empty", "b")),
      reply("UNKNOWN_COMMAND"),
      closed(),
      ...on(
        1,
        trickle(3, [..."put 0 0 60 5\r\nhello\r\n"]),
        reply("INSERTED 3"),
        trickle(20, ["sta", "ts-tube de", "fault\r", "\n"]),
        reply(),
        trickle(20, ["put 0 0 60 2\r", "\nab\r", "\n"]),
        reply("INSERTED 4"),
        cmd("use empty", "USING empty"),
        cmd(put("w"), "INSERTED 5"),
      ),
      ...on(2, reply(job("RESERVED", 5, "w")), reply("USING default")),
      ...on(
        3,
        send(Array.from({ length: 100 }, (_, i) => put(`p${i}`) + "\r\n").join("") + "stats-tube default\r\n"),
        ...Array.from({ length: 100 }, (_, i) => reply(`INSERTED ${i + 6}`)),
        reply(),
      ),
      ...on(
        3,
        send(Array.from({ length: 100 }, (_, i) => `delete ${i + 6}\r\n`).join("")),
        ...Array.from({ length: 100 }, () => reply("DELETED")),
      ),
      ...on(3, cmd("stats")),
    ],
  },
  {
    name: "use/watch/ignore, list order after removal (swap-remove), NOT_IGNORED, ignore of an unwatched tube",
    steps: [
      cmd("list-tubes", list("default")),
      cmd("list-tubes-watched", list("default")),
      cmd("list-tube-used", "USING default"),
      cmd("watch a", "WATCHING 2"),
      cmd("watch b", "WATCHING 3"),
      cmd("watch c", "WATCHING 4"),
      cmd("watch b", "WATCHING 4"),
      cmd("list-tubes-watched", list("default", "a", "b", "c")),
      cmd("list-tubes", list("default", "a", "b", "c")),
      cmd("ignore a", "WATCHING 3"),
      cmd("list-tubes-watched", list("default", "c", "b")),
      cmd("list-tubes", list("default", "c", "b")),
      cmd("ignore zzz", "WATCHING 3"),
      cmd("stats-tube zzz", "NOT_FOUND"),
      cmd("use x", "USING x"),
      cmd("ignore x", "WATCHING 3"),
      cmd("ignore default", "WATCHING 2"),
      cmd("list-tubes-watched", list("b", "c")),
      cmd("list-tubes", list("default", "c", "b", "x")),
      cmd("ignore c", "WATCHING 1"),
      cmd("ignore b", "NOT_IGNORED"),
      cmd("ignore default", "WATCHING 1"),
      cmd("list-tubes-watched", list("b")),
      cmd("list-tubes", list("default", "x", "b")),
      cmd("use default", "USING default"),
      cmd("list-tubes", list("default", "b")),
      ...on(
        1,
        cmd("list-tubes-watched", list("default")),
        cmd("watch b", "WATCHING 2"),
        cmd("use b", "USING b"),
        cmd("watch new", "WATCHING 3"),
        cmd("ignore default", "WATCHING 2"),
      ),
      cmd("stats-tube b", tubeStats("b", { "current-using": 1, "current-watching": 2 })),
      cmd("stats-tube default", tubeStats("default", { "current-using": 1 })),
      cmd("list-tubes", list("default", "b", "new")),
      ...on(1, close()),
      sleep(150),
      cmd("list-tubes", list("default", "b")),
      cmd("stats"),
    ],
  },
  {
    name: "pause-tube: PAUSED/NOT_FOUND, counters, pause does not keep a tube alive",
    steps: [
      cmd("use foo", "USING foo"),
      cmd("pause-tube foo 100", "PAUSED"),
      cmd("stats-tube foo", tubeStats("foo", { "current-using": 1, "cmd-pause-tube": 1, pause: 100 })),
      cmd(put("a"), "INSERTED 1"),
      cmd("peek-ready", job("FOUND", 1, "a")),
      cmd("watch foo", "WATCHING 2"),
      cmd("ignore default", "WATCHING 1"),
      cmd("reserve-with-timeout 0", "TIMED_OUT"),
      cmd("reserve-job 1", job("RESERVED", 1, "a")),
      cmd("release 1 0 0", "RELEASED"),
      cmd("pause-tube foo 0", "PAUSED"),
      cmd("stats-tube foo"),
      cmd("reserve-with-timeout 0", job("RESERVED", 1, "a")),
      cmd("delete 1", "DELETED"),
      cmd("pause-tube foo 100", "PAUSED"),
      cmd("watch default", "WATCHING 2"),
      cmd("ignore foo", "WATCHING 1"),
      cmd("use default", "USING default"),
      cmd("stats-tube foo", "NOT_FOUND"),
      cmd("pause-tube foo 1", "NOT_FOUND"),
      cmd("use foo", "USING foo"),
      cmd("stats-tube foo", tubeStats("foo", { "current-using": 1 })),
      cmd("pause-tube -bad 1", "BAD_FORMAT"),
      cmd("pause-tube nosuch 5", "NOT_FOUND"),
      cmd("pause-tube default 0", "PAUSED"),
      cmd("stats-tube default", tubeStats("default", { "current-watching": 1, "cmd-pause-tube": 1 })),
      cmd("stats"),
    ],
  },
  {
    name: "delete: ready, delayed, buried, reserved by self; NOT_FOUND when reserved by another; tube goes away",
    steps: [
      cmd(put("a"), "INSERTED 1"),
      cmd(put("b", 0, 100), "INSERTED 2"),
      cmd(put("c"), "INSERTED 3"),
      cmd("reserve", job("RESERVED", 1, "a")),
      cmd("bury 1 0", "BURIED"),
      cmd("reserve", job("RESERVED", 3, "c")),
      ...on(1, cmd("delete 3", "NOT_FOUND"), cmd("delete 2", "DELETED"), cmd("delete 1", "DELETED")),
      cmd("delete 3", "DELETED"),
      cmd("delete 3", "NOT_FOUND"),
      cmd("delete 99", "NOT_FOUND"),
      cmd(put("d"), "INSERTED 4"),
      ...on(1, cmd("delete 4", "DELETED")),
      cmd(
        "stats-tube default",
        tubeStats("default", { "total-jobs": 4, "current-using": 2, "current-watching": 2, "cmd-delete": 4 }),
      ),
      cmd("use t", "USING t"),
      cmd(put("e"), "INSERTED 5"),
      cmd("use default", "USING default"),
      cmd("list-tubes", list("default", "t")),
      cmd("stats-tube t", tubeStats("t", { "current-jobs-urgent": 1, "current-jobs-ready": 1, "total-jobs": 1 })),
      cmd("delete 5", "DELETED"),
      cmd("list-tubes", list("default")),
      cmd("stats-tube t", "NOT_FOUND"),
      cmd("stats"),
    ],
  },
  {
    name: "kick prefers buried, peek-buried is oldest-buried, kick-job on every state",
    steps: [
      cmd(put("a", 0, 100), "INSERTED 1"),
      cmd(put("b", 0, 50), "INSERTED 2"),
      cmd(put("c"), "INSERTED 3"),
      cmd(put("d"), "INSERTED 4"),
      cmd(put("e"), "INSERTED 5"),
      cmd("bury 3 0", "NOT_FOUND"),
      cmd("reserve", job("RESERVED", 3, "c")),
      cmd("reserve", job("RESERVED", 4, "d")),
      cmd("bury 4 7", "BURIED"),
      cmd("bury 3 0", "BURIED"),
      cmd("peek-buried", job("FOUND", 4, "d")),
      cmd("peek-delayed", job("FOUND", 2, "b")),
      cmd("stats-tube default"),
      cmd("kick 10", "KICKED 2"),
      cmd("peek-buried", "NOT_FOUND"),
      cmd("peek-delayed", job("FOUND", 2, "b")),
      cmd("kick 1", "KICKED 1"),
      cmd("peek-delayed", job("FOUND", 1, "a")),
      cmd("peek-ready", job("FOUND", 2, "b")),
      cmd("kick 10", "KICKED 1"),
      cmd("peek-delayed", "NOT_FOUND"),
      cmd("kick 10", "KICKED 0"),
      cmd("stats-job 2", jobStats(2, "default", "ready", { delay: 50, kicks: 1 })),
      cmd("stats-job 4", jobStats(4, "default", "ready", { pri: 7, reserves: 1, buries: 1, kicks: 1 })),
      cmd(put("f", 0, 100), "INSERTED 6"),
      cmd("kick-job 6", "KICKED"),
      cmd("kick-job 6", "NOT_FOUND"),
      cmd("reserve", job("RESERVED", 1, "a")),
      cmd("kick-job 1", "NOT_FOUND"),
      cmd("bury 1 0", "BURIED"),
      cmd("kick-job 1", "KICKED"),
      cmd("kick-job 999", "NOT_FOUND"),
      cmd("use other", "USING other"),
      cmd(put("g", 0, 100), "INSERTED 7"),
      cmd("peek-buried", "NOT_FOUND"),
      cmd("kick 5", "KICKED 1"),
      cmd(put("h", 0, 100), "INSERTED 8"),
      cmd("use default", "USING default"),
      cmd("kick 5", "KICKED 0"),
      cmd("kick-job 8", "KICKED"),
      cmd("stats-job 8", jobStats(8, "other", "ready", { delay: 100, kicks: 1 })),
      cmd("stats"),
    ],
  },
  {
    name: "reserve, release, bury, touch: ownership, pri/delay changes, job counters",
    steps: [
      cmd(put("a", 5), "INSERTED 1"),
      cmd(put("b", 3), "INSERTED 2"),
      cmd("reserve", job("RESERVED", 2, "b")),
      cmd("stats-job 2", jobStats(2, "default", "reserved", { pri: 3, reserves: 1 })),
      cmd("touch 2", "TOUCHED"),
      ...on(
        1,
        cmd("touch 2", "NOT_FOUND"),
        cmd("release 2 0 0", "NOT_FOUND"),
        cmd("bury 2 0", "NOT_FOUND"),
        cmd("peek 2", job("FOUND", 2, "b")),
      ),
      cmd("release 2 10 0", "RELEASED"),
      cmd("stats-job 2", jobStats(2, "default", "ready", { pri: 10, reserves: 1, releases: 1 })),
      cmd("touch 2", "NOT_FOUND"),
      cmd("release 2 0 0", "NOT_FOUND"),
      cmd("reserve", job("RESERVED", 1, "a")),
      cmd("release 1 7 100", "RELEASED"),
      cmd("stats-job 1", jobStats(1, "default", "delayed", { pri: 7, delay: 100, reserves: 1, releases: 1 })),
      cmd("peek-delayed", job("FOUND", 1, "a")),
      cmd("touch 1", "NOT_FOUND"),
      cmd("reserve", job("RESERVED", 2, "b")),
      cmd("bury 2 99", "BURIED"),
      cmd("stats-job 2", jobStats(2, "default", "buried", { pri: 99, reserves: 2, releases: 1, buries: 1 })),
      cmd("bury 2 99", "NOT_FOUND"),
      cmd("release 2 0 0", "NOT_FOUND"),
      cmd("touch 2", "NOT_FOUND"),
      cmd(
        "stats-tube default",
        tubeStats("default", {
          "current-jobs-delayed": 1,
          "current-jobs-buried": 1,
          "total-jobs": 2,
          "current-using": 2,
          "current-watching": 2,
        }),
      ),
      cmd("delete 2", "DELETED"),
      cmd("reserve-job 1", job("RESERVED", 1, "a")),
      cmd("release 1 0 0", "RELEASED"),
      cmd("stats"),
    ],
  },
  {
    name: "reserve-job: ready, delayed, buried, any tube, ignores pause; NOT_FOUND when reserved",
    steps: [
      cmd(put("a"), "INSERTED 1"),
      cmd(put("b", 0, 100), "INSERTED 2"),
      cmd(put("c"), "INSERTED 3"),
      cmd("reserve", job("RESERVED", 1, "a")),
      cmd("bury 1 0", "BURIED"),
      cmd("use other", "USING other"),
      cmd(put("d"), "INSERTED 4"),
      ...on(
        1,
        cmd("reserve-job 4", job("RESERVED", 4, "d")),
        cmd("reserve-job 4", "NOT_FOUND"),
        cmd("reserve-job 2", job("RESERVED", 2, "b")),
        cmd("stats-job 2", jobStats(2, "default", "reserved", { delay: 100, reserves: 1 })),
        cmd("release 2 0 0", "RELEASED"),
        cmd("stats-job 2", jobStats(2, "default", "ready", { delay: 0, reserves: 1, releases: 1 })),
        cmd("reserve-job 1", job("RESERVED", 1, "a")),
        cmd("release 1 0 0", "RELEASED"),
        cmd("reserve-job 999", "NOT_FOUND"),
        cmd("release 4 0 0", "RELEASED"),
      ),
      cmd("pause-tube other 100", "PAUSED"),
      ...on(1, cmd("reserve-job 4", job("RESERVED", 4, "d"))),
      cmd("reserve-job 4", "NOT_FOUND"),
      ...on(2, cmd("reserve-job 4", "NOT_FOUND"), cmd("reserve-job 77", "NOT_FOUND")),
      cmd("stats"),
      ...on(1, close()),
      sleep(150),
      cmd("stats-job 4", jobStats(4, "other", "ready", { reserves: 2, releases: 1 })),
      cmd("stats"),
    ],
  },
  {
    name: "peek family: any tube and state by id; ready/delayed/buried of the used tube only",
    steps: [
      cmd("peek-ready", "NOT_FOUND"),
      cmd("peek-delayed", "NOT_FOUND"),
      cmd("peek-buried", "NOT_FOUND"),
      cmd("peek 1", "NOT_FOUND"),
      cmd(put("five", 5), "INSERTED 1"),
      cmd(put("one", 1), "INSERTED 2"),
      cmd(put("one again", 1), "INSERTED 3"),
      cmd("peek-ready", job("FOUND", 2, "one")),
      ...on(1, cmd("reserve", job("RESERVED", 2, "one"))),
      cmd("peek 2", job("FOUND", 2, "one")),
      cmd("peek-ready", job("FOUND", 3, "one again")),
      cmd("pause-tube default 100", "PAUSED"),
      cmd("peek-ready", job("FOUND", 3, "one again")),
      cmd("use d", "USING d"),
      cmd("peek-ready", "NOT_FOUND"),
      cmd("peek 3", job("FOUND", 3, "one again")),
      cmd(put("later", 0, 99), "INSERTED 4"),
      cmd(put("sooner", 0, 50), "INSERTED 5"),
      cmd(put("latest", 0, 98), "INSERTED 6"),
      cmd("peek-delayed", job("FOUND", 5, "sooner")),
      cmd("peek 18446744073709551615", "NOT_FOUND"),
      cmd("stats"),
    ],
  },
  {
    name: "scheduling across watched tubes: best (pri, id) wins, a waiter on several tubes",
    steps: [
      cmd("use a", "USING a"),
      cmd(put("A", 5), "INSERTED 1"),
      cmd("use b", "USING b"),
      cmd(put("B", 3), "INSERTED 2"),
      cmd("use c", "USING c"),
      cmd(put("C", 3), "INSERTED 3"),
      cmd("use d", "USING d"),
      cmd(put("D", 1), "INSERTED 4"),
      cmd("use abc", "USING abc"),
      cmd(put("big", 999999), "INSERTED 5"),
      cmd("use def", "USING def"),
      cmd(put("small", 99), "INSERTED 6"),
      ...on(
        1,
        cmd("watch d", "WATCHING 2"),
        cmd("watch c", "WATCHING 3"),
        cmd("watch a", "WATCHING 4"),
        cmd("watch b", "WATCHING 5"),
        cmd("ignore default", "WATCHING 4"),
        cmd("reserve", job("RESERVED", 4, "D")),
        cmd("reserve", job("RESERVED", 2, "B")),
        cmd("reserve", job("RESERVED", 3, "C")),
        cmd("reserve", job("RESERVED", 1, "A")),
        cmd("reserve-with-timeout 0", "TIMED_OUT"),
      ),
      ...on(
        2,
        cmd("watch abc", "WATCHING 2"),
        cmd("watch def", "WATCHING 3"),
        cmd("reserve", job("RESERVED", 6, "small")),
        cmd("reserve", job("RESERVED", 5, "big")),
      ),
      ...on(3, cmd("watch x", "WATCHING 2"), cmd("watch y", "WATCHING 3"), send("reserve\r\n")),
      sleep(150),
      cmd("stats-tube x", tubeStats("x", { "current-watching": 1, "current-waiting": 1 })),
      cmd(
        "stats-tube default",
        tubeStats("default", { "current-using": 3, "current-watching": 3, "current-waiting": 1 }),
      ),
      cmd("use y", "USING y"),
      cmd(put("Y"), "INSERTED 7"),
      ...on(3, reply(job("RESERVED", 7, "Y"))),
      cmd("stats-tube x", tubeStats("x", { "current-watching": 1 })),
      cmd("stats"),
    ],
  },
  {
    name: "stats: fresh server, then every counter after one of each command",
    steps: [
      cmd("stats", serverStats({ "cmd-stats": 1 })),
      cmd("stats-tube default", tubeStats("default", { "current-using": 1, "current-watching": 1 })),
      cmd(put("u", 1023), "INSERTED 1"),
      cmd(put("n", 1024), "INSERTED 2"),
      cmd(put("d", 0, 100), "INSERTED 3"),
      cmd(put("b"), "INSERTED 4"),
      cmd("peek 1", job("FOUND", 1, "u")),
      cmd("peek-ready", job("FOUND", 4, "b")),
      cmd("peek-delayed", job("FOUND", 3, "d")),
      cmd("peek-buried", "NOT_FOUND"),
      cmd("reserve", job("RESERVED", 4, "b")),
      cmd("bury 4 0", "BURIED"),
      cmd("reserve-with-timeout 0", job("RESERVED", 1, "u")),
      cmd("release 1 1023 0", "RELEASED"),
      cmd("touch 1", "NOT_FOUND"),
      cmd("kick 0", "KICKED 0"),
      cmd("kick-job 3", "KICKED"),
      cmd("reserve-job 3", job("RESERVED", 3, "d")),
      cmd("delete 3", "DELETED"),
      cmd("use t", "USING t"),
      cmd("watch t", "WATCHING 2"),
      cmd("ignore t", "WATCHING 1"),
      cmd("stats-job 1", jobStats(1, "default", "ready", { pri: 1023, reserves: 1, releases: 1 })),
      cmd("stats-tube t", tubeStats("t", { "current-using": 1 })),
      cmd("list-tubes", list("default", "t")),
      cmd("list-tube-used", "USING t"),
      cmd("list-tubes-watched", list("default")),
      cmd("pause-tube t 0", "PAUSED"),
      cmd(
        "stats",
        serverStats({
          "current-jobs-urgent": 1,
          "current-jobs-ready": 2,
          "current-jobs-buried": 1,
          "cmd-put": 4,
          "cmd-peek": 1,
          "cmd-peek-ready": 1,
          "cmd-peek-delayed": 1,
          "cmd-peek-buried": 1,
          "cmd-reserve": 1,
          "cmd-reserve-with-timeout": 1,
          "cmd-delete": 1,
          "cmd-release": 1,
          "cmd-use": 1,
          "cmd-watch": 1,
          "cmd-ignore": 1,
          "cmd-bury": 1,
          "cmd-kick": 1,
          "cmd-touch": 1,
          "cmd-stats": 2,
          "cmd-stats-job": 1,
          "cmd-stats-tube": 2,
          "cmd-list-tubes": 1,
          "cmd-list-tube-used": 1,
          "cmd-list-tubes-watched": 1,
          "cmd-pause-tube": 1,
          "total-jobs": 4,
          "current-tubes": 2,
          "current-producers": 1,
          "current-workers": 1,
        }),
      ),
    ],
  },
  {
    name: "stats-tube with every field non-zero; current-* gauges with several connections",
    exact: ["current-connections"],
    steps: [
      sleep(150),
      cmd("stats"),
      cmd("use busy", "USING busy"),
      cmd(put("urgent", 0), "INSERTED 1"),
      cmd(put("lazy", 2000), "INSERTED 2"),
      cmd(put("later", 0, 100), "INSERTED 3"),
      cmd(put("mine"), "INSERTED 4"),
      cmd(put("bury me"), "INSERTED 5"),
      cmd(put("gone"), "INSERTED 6"),
      cmd("delete 6", "DELETED"),
      ...on(
        1,
        cmd("reserve-job 4", job("RESERVED", 4, "mine")),
        cmd("reserve-job 5", job("RESERVED", 5, "bury me")),
        cmd("bury 5 0", "BURIED"),
      ),
      cmd("pause-tube busy 100", "PAUSED"),
      ...on(2, cmd("watch busy", "WATCHING 2"), send("reserve\r\n")),
      sleep(150),
      cmd(
        "stats-tube busy",
        tubeStats("busy", {
          "current-jobs-urgent": 1,
          "current-jobs-ready": 2,
          "current-jobs-reserved": 1,
          "current-jobs-delayed": 1,
          "current-jobs-buried": 1,
          "total-jobs": 6,
          "current-using": 1,
          "current-watching": 1,
          "current-waiting": 1,
          "cmd-delete": 1,
          "cmd-pause-tube": 1,
          pause: 100,
        }),
      ),
      cmd(
        "stats-tube default",
        tubeStats("default", { "current-using": 2, "current-watching": 3, "current-waiting": 1 }),
      ),
      cmd("stats"),
      cmd("pause-tube busy 0", "PAUSED"),
      ...on(2, reply(job("RESERVED", 1, "urgent"))),
      ...on(1, close()),
      sleep(200),
      cmd(
        "stats-tube busy",
        tubeStats("busy", {
          // c1's job 4 is back (ready, urgent); c2 holds job 1.
          "current-jobs-urgent": 1,
          "current-jobs-ready": 2,
          "current-jobs-reserved": 1,
          "current-jobs-delayed": 1,
          "current-jobs-buried": 1,
          "total-jobs": 6,
          "current-using": 1,
          "current-watching": 1,
          "cmd-delete": 1,
          "cmd-pause-tube": 2,
        }),
      ),
      cmd("stats"),
    ],
  },
  // Sessions that take real time (1-second values); they run concurrently.
  {
    name: "delayed job becomes ready after 1 s; release with delay 1",
    steps: [
      cmd(put("d", 0, 1), "INSERTED 1"),
      cmd(
        "stats-tube default",
        tubeStats("default", { "current-jobs-delayed": 1, "total-jobs": 1, "current-using": 1, "current-watching": 1 }),
      ),
      cmd("peek-delayed", job("FOUND", 1, "d")),
      cmd("reserve-with-timeout 0", "TIMED_OUT"),
      sleep(1400),
      cmd(
        "stats-tube default",
        tubeStats("default", {
          "current-jobs-urgent": 1,
          "current-jobs-ready": 1,
          "total-jobs": 1,
          "current-using": 1,
          "current-watching": 1,
        }),
      ),
      cmd("stats-job 1", jobStats(1, "default", "ready", { delay: 1 })),
      cmd("peek-ready", job("FOUND", 1, "d")),
      cmd("reserve", job("RESERVED", 1, "d")),
      cmd("release 1 0 1", "RELEASED"),
      ...on(1, send("reserve\r\n"), idle(400, ""), reply(job("RESERVED", 1, "d"), 3000)),
      cmd("stats-job 1", jobStats(1, "default", "reserved", { delay: 1, reserves: 2, releases: 1 })),
      cmd("stats"),
    ],
  },
  {
    name: "TTR: DEADLINE_SOON (at once, while waiting, after reserve-job), timeout back to ready, every job counter",
    steps: [
      cmd(put("short", 0, 0, 1), "INSERTED 1"),
      cmd("reserve", job("RESERVED", 1, "short")),
      cmd("reserve-with-timeout 5", "DEADLINE_SOON", 900),
      cmd("reserve", "DEADLINE_SOON", 900),
      cmd("stats-job 1", jobStats(1, "default", "reserved", { ttr: 1, reserves: 1 })),
      // A ready job is handed out even inside the safety margin.
      cmd(put("other"), "INSERTED 2"),
      cmd("reserve", job("RESERVED", 2, "other")),
      cmd("delete 2", "DELETED"),
      ...on(
        1,
        cmd("use t1", "USING t1"),
        cmd("watch t1", "WATCHING 2"),
        cmd("ignore default", "WATCHING 1"),
        cmd(put("two", 0, 0, 2), "INSERTED 3"),
        cmd("reserve", job("RESERVED", 3, "two")),
        send("reserve\r\n"),
        idle(300, ""),
      ),
      ...on(
        2,
        cmd("use t2", "USING t2"),
        cmd("watch t2", "WATCHING 2"),
        cmd("ignore default", "WATCHING 1"),
        cmd(put("delayed", 0, 100, 1), "INSERTED 4"),
        cmd("reserve-job 4", job("RESERVED", 4, "delayed")),
        cmd("reserve-with-timeout 0", "DEADLINE_SOON", 900),
      ),
      ...on(1, reply("DEADLINE_SOON", 3000), cmd("delete 3", "DELETED")),
      sleep(1200),
      cmd("list-tube-used", "USING default"),
      cmd("stats-job 1", jobStats(1, "default", "ready", { ttr: 1, reserves: 1, timeouts: 1 })),
      ...on(
        2,
        cmd("list-tube-used", "USING t2"),
        cmd("stats-job 4", jobStats(4, "t2", "ready", { delay: 100, ttr: 1, reserves: 1, timeouts: 1 })),
      ),
      cmd("reserve", job("RESERVED", 1, "short")),
      cmd("release 1 5 0", "RELEASED"),
      cmd("reserve", job("RESERVED", 1, "short")),
      cmd("bury 1 6", "BURIED"),
      cmd("kick 1", "KICKED 1"),
      cmd(
        "stats-job 1",
        jobStats(1, "default", "ready", { pri: 6, ttr: 1, reserves: 3, timeouts: 1, releases: 1, buries: 1, kicks: 1 }),
      ),
      cmd("stats"),
    ],
  },
  {
    name: "TIMED_OUT: reserve-with-timeout 1, two waiters, half-close while waiting",
    steps: [
      ...on(1, send("reserve-with-timeout 1\r\n")),
      ...on(2, send("reserve-with-timeout 1\r\n")),
      ...on(3, send("reserve\r\n")),
      ...on(4, send("reserve-with-timeout 100\r\n")),
      ...on(1, idle(300, "")),
      ...on(3, end(), reply("TIMED_OUT"), closed()),
      ...on(4, end(), reply("TIMED_OUT"), closed()),
      ...on(1, reply("TIMED_OUT", 3000)),
      ...on(2, reply("TIMED_OUT", 3000)),
      // Half-close with commands still pending: they are answered first.
      ...on(5, send("list-tube-used\r\nwatch x\r\n"), end(), reply("USING default"), reply("WATCHING 2"), closed()),
      sleep(100),
      cmd("stats"),
    ],
  },
  {
    name: "quit and close release reserved jobs to other connections",
    steps: [
      cmd(put("a"), "INSERTED 1"),
      ...on(1, cmd("reserve", job("RESERVED", 1, "a")), send("quit\r\n"), closed()),
      ...on(2, cmd("reserve", job("RESERVED", 1, "a")), close()),
      sleep(200),
      ...on(3, cmd("reserve-with-timeout 2", job("RESERVED", 1, "a"))),
      cmd("stats-job 1", jobStats(1, "default", "reserved", { reserves: 3 })),
      // A connection already waiting gets the job the moment its holder leaves.
      ...on(4, send("reserve\r\n"), idle(200, "")),
      ...on(3, send("quitXYZ\r\n"), closed()),
      ...on(4, reply(job("RESERVED", 1, "a"))),
      ...on(5, send("reserve\r\n"), idle(200, "")),
      ...on(4, close()),
      ...on(5, reply(job("RESERVED", 1, "a"))),
      cmd("stats-job 1", jobStats(1, "default", "reserved", { reserves: 5 })),
      cmd("stats"),
    ],
  },
  {
    name: "pause-tube 1 delays reserve by a second; pause-tube 0 wakes a waiter at once",
    steps: [
      cmd(put("a"), "INSERTED 1"),
      cmd("pause-tube default 1", "PAUSED"),
      ...on(1, send("reserve\r\n"), idle(500, ""), reply(job("RESERVED", 1, "a"), 3000)),
      cmd(
        "stats-tube default",
        tubeStats("default", {
          "current-jobs-reserved": 1,
          "total-jobs": 1,
          "current-using": 2,
          "current-watching": 2,
          "cmd-pause-tube": 1,
        }),
      ),
      cmd("use bar", "USING bar"),
      cmd("pause-tube bar 86400", "PAUSED"),
      cmd(put("b"), "INSERTED 2"),
      ...on(2, cmd("watch bar", "WATCHING 2"), cmd("ignore default", "WATCHING 1"), send("reserve\r\n"), idle(200, "")),
      cmd("pause-tube bar 0", "PAUSED"),
      ...on(2, reply(job("RESERVED", 2, "b"))),
      cmd("stats"),
    ],
  },
  {
    name: "waiting reservers are served in arrival order",
    differs: "1.12 takes waiters from an unordered set with a rotating cursor; tubeway serves first come, first served",
    steps: [
      ...[1, 2, 3, 4].flatMap((c) => [
        ...on(c, send("reserve\r\n")),
        until("stats-tube default", new RegExp(`\ncurrent-waiting: ${c}\n`)),
      ]),
      ...[1, 2, 3, 4].map((i) => cmd(put(`j${i}`), `INSERTED ${i}`)),
      ...on(1, reply(job("RESERVED", 1, "j1"))),
      ...on(2, reply(job("RESERVED", 2, "j2"))),
      ...on(3, reply(differ(job("RESERVED", 4, "j4"), job("RESERVED", 3, "j3")))),
      ...on(4, reply(differ(job("RESERVED", 3, "j3"), job("RESERVED", 4, "j4")))),
      // Six waiters on a fresh tube: 1.12 serves 1,2,3,6,5,4 (upstream ms_take_sequence).
      cmd("use six", "USING six"),
      ...[5, 6, 7, 8, 9, 10].flatMap((c) => [
        ...on(c, cmd("watch six", "WATCHING 2"), cmd("ignore default", "WATCHING 1"), send("reserve\r\n")),
        until("stats-tube six", new RegExp(`\ncurrent-waiting: ${c - 4}\n`)),
      ]),
      ...[5, 6, 7, 8, 9, 10].map((i) => cmd(put(`j${i}`), `INSERTED ${i}`)),
      ...on(5, reply(job("RESERVED", 5, "j5"))),
      ...on(6, reply(job("RESERVED", 6, "j6"))),
      ...on(7, reply(job("RESERVED", 7, "j7"))),
      ...on(8, reply(differ(job("RESERVED", 10, "j10"), job("RESERVED", 8, "j8")))),
      ...on(9, reply(differ(job("RESERVED", 9, "j9"), job("RESERVED", 9, "j9")))),
      ...on(10, reply(differ(job("RESERVED", 8, "j8"), job("RESERVED", 10, "j10")))),
    ],
  },
];
