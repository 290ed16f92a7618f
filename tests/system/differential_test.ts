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
  type Target,
} from "../harness/targets.ts";
import { type Dialect, SESSIONS } from "../harness/sessions.ts";
import { type Entry, lines, normalise, play, pool, subjectTranscript, wrongWants } from "../harness/differential.ts";

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
          subjectTranscript(session, reference!, SUBJECT_DIALECT),
          `${target.name} differs from beanstalkd 1.12`,
        );
        assert.deepEqual(wrongWants(session, subjects[k]!, SUBJECT_DIALECT), [], target.name);
      }
    });
  }
});
