// Differential suite: the sessions in harness/sessions.ts are played against the real
// beanstalkd 1.12 and against tubeway, and the replies must match byte for byte.
//
// Each session gets a fresh pair of servers, so job ids match exactly. Before comparing,
// values that depend on the process or the clock are replaced with "*" (see normalise),
// and the `OK <n>` byte count is recomputed, so key order and key set still compare
// exactly. Deliberate differences are spelled out per step with differ(): beanstalkd must
// give its 1.12 answer and tubeway its fixed one, both exactly.
//
// Runs unchanged under `deno test -A` and `bun test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import {
  beanstalkd,
  bunPgServer,
  bunServer,
  denoPgServer,
  denoServer,
  inProcessJitter,
  inProcessResolved,
  type Running,
  type Target,
} from "../harness/targets.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { scalar } from "../../protocol/yaml.ts";
import {
  ANY,
  type Dialect,
  type Session,
  SESSIONS,
  STATS_NORMALISED,
  type Step,
  type Want,
} from "../harness/sessions.ts";

/** tubeway under the runtime running this file. */
const TUBEWAY: Target = RUNTIME === "bun" ? bunServer : denoServer;
/** What beanstalkd is compared with. Point it at `beanstalkd` to check the sessions themselves. */
const SUBJECT: Target = TUBEWAY;
/**
 * Also compared, session by session: tubeway in this process on engines whose answers
 * come later (an already-resolved promise; 0-2 ms at random), the engine seam's proof.
 */
const LATE_SUBJECTS: Target[] = SUBJECT === beanstalkd ? [] : [inProcessResolved, inProcessJitter];
/**
 * And one node over PostgreSQL (--pg, a throwaway cluster, a schema per session) on
 * this runtime, when PostgreSQL is installed (or TUBEWAY_REQUIRE_ALL=1 demands it).
 */
const PG_SUBJECT: Target = RUNTIME === "bun" ? bunPgServer : denoPgServer;
if (SUBJECT !== beanstalkd && skipUnless(PG_SUBJECT.unavailable() === undefined, "") === false) {
  LATE_SUBJECTS.push(PG_SUBJECT);
}

/** A beanstalkd subject is held to the 1.12 side of every deliberate difference. */
const SUBJECT_DIALECT: Dialect = SUBJECT === beanstalkd ? "1.12" : "tubeway";

/** Sessions played at once (each one runs two servers). */
const PARALLEL = 6;
const REPLY_MS = 3000;

/**
 * String values, per YAML kind: 1.12 writes them raw, tubeway plain too unless a YAML
 * reader would misread them (then double-quoted, as 1.13 does; see protocol/yaml.ts).
 */
const STRINGS: Record<string, string[]> = {
  stats: ["hostname", "os", "platform"],
  "stats-tube": ["name"],
  "stats-job": ["tube"],
};

const FORMAT: Record<string, RegExp> = {
  pid: /^\d+$/,
  uptime: /^\d+$/,
  "rusage-utime": /^\d+\.\d{6}$/,
  "rusage-stime": /^\d+\.\d{6}$/,
  "current-connections": /^\d+$/,
  "total-connections": /^\d+$/,
  version: /^".+"$/,
  id: /^[0-9a-f]{16}$/,
  hostname: /^.*$/,
  os: /^.*$/,
  platform: /^.*$/,
};

/**
 * Replace process- and time-dependent values in an `OK` reply with "*", strip the quotes
 * that the dialect puts around string values, and recompute the byte count. A value
 * that is not in the expected shape is left as it is (so the comparison shows it).
 */
function normalise(reply: string, dialect: Dialect, exact: readonly string[] = []): string {
  const m = /^OK (\d+)\r\n/.exec(reply);
  if (!m) return reply;
  const body = reply.slice(m[0].length);
  if (!body.endsWith("\r\n") || body.length !== Number(m[1]) + 2) return reply;
  const lines = body.slice(0, -2).split("\n");
  const first = lines[1]?.split(": ")[0];
  const kind = first === "current-jobs-urgent"
    ? "stats"
    : first === "id"
    ? "stats-job"
    : first === "name"
    ? "stats-tube"
    : "";
  if (!kind) return reply;
  const seen: Record<string, string> = {};
  const out = lines.map((line) => {
    const i = line.indexOf(": ");
    if (i < 0) return line;
    const key = line.slice(0, i);
    let value = line.slice(i + 2);
    if (STRINGS[kind]!.includes(key)) {
      // The values compared here need no escapes, so the quotes are all there is to strip.
      const raw = /^".*"$/.test(value) ? value.slice(1, -1) : value;
      const want = dialect === "tubeway" ? scalar(raw) : raw;
      // A wrong quoting is reported as is, never normalised away.
      if (value !== want) return `${key}: ${value} (expected ${want})`;
      value = raw;
    }
    seen[key] = value;
    let replace = false;
    if (kind === "stats") {
      replace = STATS_NORMALISED.includes(key) && !exact.includes(key) && (FORMAT[key]?.test(value) ?? false);
    } else if (kind === "stats-job") {
      replace = (key === "age" && /^\d+$/.test(value)) ||
        (key === "time-left" && /^-?\d+$/.test(value) && (seen["state"] === "reserved" || seen["state"] === "delayed"));
    } else {
      replace = key === "pause-time-left" && /^\d+$/.test(value) && seen["pause"] !== "0";
    }
    return `${key}: ${replace ? ANY : value}`;
  });
  const yaml = out.join("\n");
  return `OK ${yaml.length}\r\n${yaml}\r\n`;
}

interface Entry {
  step: number;
  label: string;
  got: string;
}

function show(data: string): string {
  const s = data.length > 80 ? `${data.slice(0, 40)}…${data.slice(-20)} (${data.length} bytes)` : data;
  return JSON.stringify(s);
}

function label(s: Step): string {
  switch (s.op) {
    case "cmd":
      return `c${s.c} ${show(s.line + "\r\n")}`;
    case "send":
      return `c${s.c} send ${s.data.map(show).join(" + ")}`;
    case "reply":
      return `c${s.c} reply`;
    case "idle":
      return `c${s.c} after ${s.ms} ms`;
    case "closed":
      return `c${s.c} closed?`;
    case "until":
      return `c${s.c} ${show(s.line + "\r\n")} until ${s.match}`;
    default:
      return s.op;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Play a session against a fresh server; returns the normalised transcript. */
async function play(target: Target, session: Session, dialect: Dialect): Promise<Entry[]> {
  const running: Running = await target.start(session.flags ?? []);
  const wires = new Map<number, Wire>();
  const out: Entry[] = [];
  const wire = async (c: number) => {
    let w = wires.get(c);
    if (!w) {
      w = await dial(running.addr);
      wires.set(c, w);
    }
    return w;
  };
  const record = (step: number, s: Step, got: string) =>
    out.push({ step, label: label(s), got: normalise(got, dialect, session.exact) });
  try {
    for (const [i, s] of session.steps.entries()) {
      try {
        switch (s.op) {
          case "cmd": {
            const w = await wire(s.c);
            record(i, s, await w.cmd(s.line, s.ms ?? REPLY_MS));
            break;
          }
          case "send": {
            const w = await wire(s.c);
            for (const [k, d] of s.data.entries()) {
              if (k > 0 && s.gapMs > 0) await pause(s.gapMs);
              w.send(d);
            }
            break;
          }
          case "reply":
            record(i, s, await (await wire(s.c)).reply(s.ms ?? REPLY_MS));
            break;
          case "idle": {
            const w = await wire(s.c);
            await w.silentFor(s.ms);
            const n = w.pending.length;
            record(i, s, n ? (await w.bytes(n)).toString("latin1") : "");
            break;
          }
          case "closed": {
            const w = await wire(s.c);
            let got = "(closed)";
            try {
              await w.closed(REPLY_MS);
            } catch {
              got = "(open)";
            }
            if (w.pending) got += ` after ${JSON.stringify(w.pending)}`;
            record(i, s, got);
            break;
          }
          case "until": {
            const w = await wire(s.c);
            const deadline = Date.now() + REPLY_MS;
            for (let last = ""; !s.match.test(last); await pause(20)) {
              if (Date.now() > deadline) throw new Error(`no reply matched (last ${JSON.stringify(last)})`);
              last = await w.cmd(s.line, REPLY_MS);
            }
            break;
          }
          case "end":
            (await wire(s.c)).end();
            break;
          case "close":
            (await wire(s.c)).close();
            break;
          case "sleep":
            await pause(s.ms);
            break;
          case "signal":
            if (running.child) running.child.kill(s.sig);
            else if (s.sig === "SIGUSR1" && running.drain) running.drain(); // in process: what SIGUSR1 does
            else throw new Error("no server process to signal");
            break;
        }
      } catch (e) {
        // The first failure ends the session; the comparison shows where.
        out.push({ step: i, label: label(s), got: `(error: ${(e as Error).message})` });
        break;
      }
    }
  } finally {
    for (const w of wires.values()) w.close();
    await running.stop();
  }
  return out;
}

function wantFor(want: Want, dialect: Dialect): string {
  return typeof want === "string" ? want : want[dialect];
}

/** The reply a step must give, if it says; cmd/reply wants get their CRLF added. */
function expected(s: Step, dialect: Dialect): string | undefined {
  if (!("want" in s) || s.want === undefined) return undefined;
  const w = wantFor(s.want, dialect);
  return (s.op === "cmd" || s.op === "reply") && !w.endsWith("\r\n") ? w + "\r\n" : w;
}

/** Steps whose want does not hold, as readable lines (empty when all hold). */
function wrongWants(session: Session, got: Entry[], dialect: Dialect): string[] {
  const bad: string[] = [];
  for (const e of got) {
    const step = session.steps[e.step];
    const want = step && expected(step, dialect);
    if (want !== undefined && want !== e.got) {
      bad.push(`step ${e.step} ${e.label}: want ${JSON.stringify(want)}, got ${JSON.stringify(e.got)}`);
    }
  }
  return bad;
}

/** The transcript the subject must produce: beanstalkd's, with the deliberate differences swapped in. */
function subjectTranscript(session: Session, reference: Entry[]): string[] {
  return reference.map((e) => {
    const step = session.steps[e.step];
    const want = step && "want" in step && typeof step.want === "object" ? expected(step, SUBJECT_DIALECT) : undefined;
    return `${e.step} ${e.label} -> ${JSON.stringify(want ?? e.got)}`;
  });
}

const lines = (t: Entry[]) => t.map((e) => `${e.step} ${e.label} -> ${JSON.stringify(e.got)}`);

/** Run `fn` over items with at most `limit` at a time; results keep their order. */
function pool<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R>[] {
  let active = 0;
  const queue: Array<() => void> = [];
  return items.map(async (item) => {
    if (active >= limit) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await fn(item);
    } finally {
      active--;
      queue.shift()?.();
    }
  });
}

const COMMANDS = [
  "put",
  "use",
  "reserve",
  "reserve-with-timeout",
  "reserve-job",
  "delete",
  "release",
  "bury",
  "touch",
  "watch",
  "ignore",
  "peek",
  "peek-ready",
  "peek-delayed",
  "peek-buried",
  "kick",
  "kick-job",
  "stats",
  "stats-job",
  "stats-tube",
  "list-tubes",
  "list-tube-used",
  "list-tubes-watched",
  "pause-tube",
  "quit",
];
// OUT_OF_MEMORY and INTERNAL_ERROR cannot be provoked from the wire (see sessions.ts).
const REPLIES = [
  "INSERTED",
  "BURIED",
  "USING",
  "RESERVED",
  "DEADLINE_SOON",
  "TIMED_OUT",
  "DELETED",
  "RELEASED",
  "TOUCHED",
  "WATCHING",
  "NOT_IGNORED",
  "FOUND",
  "NOT_FOUND",
  "KICKED",
  "OK",
  "PAUSED",
  "EXPECTED_CRLF",
  "JOB_TOO_BIG",
  "DRAINING",
  "BAD_FORMAT",
  "UNKNOWN_COMMAND",
];

describe("differential: normalisation", () => {
  const stats112 = '---\ncurrent-jobs-urgent: 0\npid: 42\nversion: "1.12"\nrusage-utime: 0.001000\n' +
    "uptime: 3\nid: 0123456789abcdef\nhostname: vm\nos: #1 SMP\nplatform: x86_64\n";
  // tubeway quotes only the os, which a YAML reader would take for a comment.
  const statsFixed = stats112.replace("os: #1 SMP", 'os: "#1 SMP"');
  const want = "---\ncurrent-jobs-urgent: 0\npid: *\nversion: *\nrusage-utime: *\nuptime: *\nid: *\n" +
    "hostname: *\nos: *\nplatform: *\n";
  const okOf = (y: string) => `OK ${y.length}\r\n${y}\r\n`;

  it("stats: process values become * and the byte count is recomputed", () => {
    assert.equal(normalise(okOf(stats112), "1.12"), okOf(want));
    assert.equal(normalise(okOf(statsFixed), "tubeway"), okOf(want));
  });

  it("a missing or unexpected quote is kept visible", () => {
    assert.notEqual(normalise(okOf(stats112), "tubeway"), okOf(want));
    assert.notEqual(normalise(okOf(statsFixed), "1.12"), okOf(want));
    assert.notEqual(normalise(okOf(stats112.replace("pid: 42", "pid: x")), "1.12"), okOf(want));
    assert.notEqual(normalise(okOf(statsFixed.replace("hostname: vm", 'hostname: "vm"')), "tubeway"), okOf(want));
  });

  it("stats-job and stats-tube: names quoted only where ambiguous, age, time-left and pause-time-left", () => {
    const job = (tube: string, state: string, left: string) =>
      okOf(`---\nid: 7\ntube: ${tube}\nstate: ${state}\npri: 0\nage: 5\ntime-left: ${left}\n`);
    assert.equal(
      normalise(job("a", "reserved", "59"), "tubeway"),
      job("a", "reserved", "*").replace("age: 5", "age: *"),
    );
    assert.equal(normalise(job('"123"', "ready", "0"), "tubeway"), normalise(job("123", "ready", "0"), "1.12"));
    assert.notEqual(normalise(job('"a"', "ready", "0"), "tubeway"), normalise(job("a", "ready", "0"), "1.12"));
    assert.equal(normalise(job("a", "ready", "0"), "1.12"), job("a", "ready", "0").replace("age: 5", "age: *"));
    const tube = (name: string, pause: string, left: string) =>
      okOf(`---\nname: ${name}\ncurrent-jobs-urgent: 0\npause: ${pause}\npause-time-left: ${left}\n`);
    assert.equal(normalise(tube("default", "10", "9"), "tubeway"), tube("default", "10", "*"));
    assert.equal(normalise(tube("default", "0", "0"), "1.12"), tube("default", "0", "0"));
    assert.equal(normalise("OK 14\r\n---\n- default\n\r\n", "tubeway"), "OK 14\r\n---\n- default\n\r\n");
  });
});

const serverScript = join(ROOT, "server.ts");
const skip = skipUnless(beanstalkd.unavailable() === undefined, beanstalkd.unavailable() ?? "") ||
  skipUnless(SUBJECT.unavailable() === undefined, SUBJECT.unavailable() ?? "") ||
  skipUnless(SUBJECT === beanstalkd || existsSync(serverScript), `${serverScript} does not exist yet`);

describe(`differential: beanstalkd 1.12 vs ${SUBJECT.name}`, { skip }, () => {
  let results: Promise<Entry[][]>[] = [];

  before(() => {
    // Every session starts now, PARALLEL at a time; each test waits for its own.
    results = pool(
      SESSIONS,
      PARALLEL,
      (s) =>
        Promise.all(
          [beanstalkd, SUBJECT, ...LATE_SUBJECTS].map((t, i) => play(t, s, i === 0 ? "1.12" : SUBJECT_DIALECT)),
        ),
    );
    // A failing test must not leave the rest unobserved.
    for (const r of results) r.catch(() => {});
  });

  after(async () => {
    await Promise.allSettled(results);
  });

  it("sessions are well formed", () => {
    const names = new Set<string>();
    for (const s of SESSIONS) {
      assert.ok(!names.has(s.name), `duplicate session name ${s.name}`);
      names.add(s.name);
      const split = s.steps.some((st) => "want" in st && typeof st.want === "object");
      assert.equal(split, s.differs !== undefined, `${s.name}: differ() wants and 'differs' go together`);
    }
  });

  it("between them the sessions use every command and get every reply", { timeout: 120_000 }, async () => {
    const sent = SESSIONS.flatMap((s) =>
      s.steps.flatMap((st) => (st.op === "cmd" ? [st.line] : st.op === "send" ? st.data.join("").split("\r\n") : []))
    );
    const missing = COMMANDS.filter((c) => !sent.some((l) => l === c || l.startsWith(c + " ")));
    assert.deepEqual(missing, [], "commands no session sends");
    const got = (await Promise.all(results)).flatMap(([ref]) => ref!.map((e) => e.got)).join("");
    const unseen = REPLIES.filter((r) => !new RegExp(`(^|\n)${r}[ \r]`).test(got));
    assert.deepEqual(unseen, [], "replies beanstalkd never gave in any session");
  });

  for (const [i, session] of SESSIONS.entries()) {
    it(session.name, { timeout: 120_000 }, async () => {
      const [reference, ...subjects] = await results[i]!;
      assert.deepEqual(
        wrongWants(session, reference!, "1.12"),
        [],
        "beanstalkd 1.12 did not answer as the session expects",
      );
      for (const [k, target] of [SUBJECT, ...LATE_SUBJECTS].entries()) {
        assert.deepEqual(
          lines(subjects[k]!),
          subjectTranscript(session, reference!),
          `${target.name} differs from beanstalkd 1.12`,
        );
        assert.deepEqual(wrongWants(session, subjects[k]!, SUBJECT_DIALECT), [], target.name);
      }
    });
  }
});
