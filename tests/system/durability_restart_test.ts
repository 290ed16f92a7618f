// Durability through the real process, 1: restart. The server is started with `-b DIR`,
// driven over the wire through every state and every logged command (spec §6.3, §6.6
// and the README's differences), killed (SIGKILL, or SIGTERM) and started again on the
// same DIR, by this runtime and by the other one; then the stats binlog-* keys, the
// directory lock (exit 10), and a pipelined batch logged before its replies.
//
// Run: node_modules/.bin/deno test -A tests/system/durability_restart_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/durability_restart_test.ts
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { skipUnless } from "../harness/paths.ts";
import { dial } from "../harness/wire.ts";
import {
  expectReply,
  found,
  HERE,
  jobStats,
  kill9,
  listNames,
  OTHER,
  runToExit,
  Scope,
  sigterm,
  sleep,
  Srv,
  statsOf,
  Yaml,
} from "../harness/durability.ts";
import { putId } from "../harness/wire_checks.ts";

// ---- 1. restart: every state and every logged command ------------------------------------

const S_RESTART = 65536;
const Z_RESTART = 1000;

interface Expect {
  id: number;
  tube: string;
  body: string;
  /** State after the restart. */
  state: "ready" | "delayed" | "buried";
  pri: number;
  ttr: number;
  reserves: number;
  releases: number;
  buries: number;
  kicks: number;
  /** For delayed jobs: the delay in seconds and when it was asked for (ms, before sending). */
  delay?: number;
  delayFrom?: number;
}

interface RestartRun {
  expect: Record<string, Expect>;
  deleted: number[];
  recordsExpected: number;
  before: { stats: Yaml; jobs: Map<string, Yaml>; buriedHead: string };
  killed: { code: number | null; signal: string | null };
  after: {
    jobs: Map<string, { stats: Yaml | undefined; peek: string; askedAt: number; answeredAt: number }>;
    deleted: Map<number, { stats: Yaml | undefined; peek: string }>;
    tubes: string[];
    tubeStats: Map<string, Yaml>;
    stats: Yaml;
    peekReadyA: string;
    buriedWalk: string[];
    nextId: number;
    output: string;
  };
}

/** The 1000-byte body of the max-size job: every byte value, CRLFs inside. */
const BIG_BODY = (() => {
  let s = "";
  for (let i = 0; s.length < Z_RESTART; i++) s += i % 97 === 50 ? "\r\n" : String.fromCharCode((i * 7 + 13) % 256);
  return s.slice(0, Z_RESTART);
})();

async function restartRun(sc: Scope, writer: Srv, reader: Srv, how: "SIGKILL" | "SIGTERM"): Promise<RestartRun> {
  const dir = sc.dir();
  const flags = ["-b", dir, "-z", String(Z_RESTART), "-s", String(S_RESTART)];
  const a = await sc.start(writer, flags);
  const w = await dial(a.addr);
  const expect: Record<string, Expect> = {};
  const deleted: number[] = [];
  let records = 0;
  const put = async (
    name: string,
    tube: string,
    body: string,
    pri: number,
    delay = 0,
    ttr = 60,
  ): Promise<number> => {
    const delayFrom = Date.now();
    const id = await putId(w, body, pri, delay, ttr);
    records++;
    expect[name] = {
      id,
      tube,
      body,
      state: delay > 0 ? "delayed" : "ready",
      pri,
      ttr,
      reserves: 0,
      releases: 0,
      buries: 0,
      kicks: 0,
      ...(delay > 0 ? { delay, delayFrom } : {}),
    };
    return id;
  };
  const reserveJob = async (id: number) => {
    const r = await w.cmd(`reserve-job ${id}`);
    assert.ok(r.startsWith(`RESERVED ${id} `), `reserve-job ${id}: ${JSON.stringify(r)}`);
  };

  // tube dur.a: ready, delayed, reserved, deleted, released, and the counters
  await expectReply(w, "use dur.a", "USING dur.a");
  await put("ready", "dur.a", "ready job", 7, 0, 33);
  await put("delayed", "dur.a", "delayed job", 3, 40);
  await put("shortDelay", "dur.a", "delay passes while down", 4, 1);
  expect.shortDelay!.state = "ready";
  delete expect.shortDelay!.delay;
  const x = await put("x", "dur.a", "deleted job", 2);
  await expectReply(w, `delete ${x}`, "DELETED");
  records++;
  deleted.push(x);
  delete expect.x;
  const rel0 = await put("release0", "dur.a", "released with delay 0", 100);
  await reserveJob(rel0);
  await expectReply(w, `release ${rel0} 5 0`, "RELEASED");
  records++;
  Object.assign(expect.release0!, { pri: 5, reserves: 1, releases: 1 });
  const reld = await put("releaseDelay", "dur.a", "released with a delay", 100);
  await reserveJob(reld);
  const reldFrom = Date.now();
  await expectReply(w, `release ${reld} 9 40`, "RELEASED");
  records++;
  Object.assign(expect.releaseDelay!, {
    state: "delayed",
    pri: 9,
    reserves: 1,
    releases: 1,
    delay: 40,
    delayFrom: reldFrom,
  });
  const res = await put("reserved", "dur.a", "reserved at the crash", 11);
  await reserveJob(res); // not logged: comes back ready with reserves 0
  const cnt = await put("counters", "dur.a", "counters", 1);
  await reserveJob(cnt);
  await expectReply(w, `release ${cnt} 1 0`, "RELEASED");
  await reserveJob(cnt);
  await expectReply(w, `bury ${cnt} 1`, "BURIED");
  await expectReply(w, `kick-job ${cnt}`, "KICKED");
  await reserveJob(cnt); // the third reserve is not logged
  records += 3;
  Object.assign(expect.counters!, { reserves: 2, releases: 1, buries: 1, kicks: 1 });

  // tube dur.b: buried in the order B2, B3, B1 (not the id order), each with a new pri
  await expectReply(w, "use dur.b", "USING dur.b");
  const b1 = await put("b1", "dur.b", "buried third", 50);
  const b2 = await put("b2", "dur.b", "buried first", 50);
  const b3 = await put("b3", "dur.b", "buried second", 50);
  for (const [name, id, pri] of [["b2", b2, 20], ["b3", b3, 30], ["b1", b1, 10]] as const) {
    await reserveJob(id);
    await expectReply(w, `bury ${id} ${pri}`, "BURIED");
    records++;
    Object.assign(expect[name]!, { state: "buried", pri, reserves: 1, buries: 1 });
  }
  const buriedHead = await w.cmd("peek-buried");

  // tube dur.c: kick (buried), kick (delayed), kick-job (buried), kick-job (delayed)
  await expectReply(w, "use dur.c", "USING dur.c");
  const kb = await put("kickBuried", "dur.c", "kicked from buried", 21);
  await reserveJob(kb);
  await expectReply(w, `bury ${kb} 22`, "BURIED");
  await expectReply(w, "kick 1", "KICKED 1");
  records += 2;
  Object.assign(expect.kickBuried!, { pri: 22, reserves: 1, buries: 1, kicks: 1 });
  await put("kickDelayed", "dur.c", "kicked from delayed", 23, 40);
  await expectReply(w, "kick 1", "KICKED 1");
  records++;
  Object.assign(expect.kickDelayed!, { state: "ready", kicks: 1 });
  delete expect.kickDelayed!.delay;
  const kjb = await put("kickJobBuried", "dur.c", "kick-job from buried", 24);
  await reserveJob(kjb);
  await expectReply(w, `bury ${kjb} 25`, "BURIED");
  await expectReply(w, `kick-job ${kjb}`, "KICKED");
  records += 2;
  Object.assign(expect.kickJobBuried!, { pri: 25, reserves: 1, buries: 1, kicks: 1 });
  const kjd = await put("kickJobDelayed", "dur.c", "kick-job from delayed", 26, 40);
  await expectReply(w, `kick-job ${kjd}`, "KICKED");
  records++;
  Object.assign(expect.kickJobDelayed!, { state: "ready", kicks: 1 });
  delete expect.kickJobDelayed!.delay;

  // the largest job -z allows, and one in default; a tube whose only job is deleted
  await expectReply(w, "use dur.big", "USING dur.big");
  await put("big", "dur.big", BIG_BODY, 0);
  await expectReply(w, "use default", "USING default");
  await put("default", "default", "in default", 1000);
  await expectReply(w, "use dur.gone", "USING dur.gone");
  const gone = await put("gone", "dur.gone", "only job of dur.gone", 0);
  await expectReply(w, `delete ${gone}`, "DELETED");
  records++;
  deleted.push(gone);
  delete expect.gone;
  await expectReply(w, "use default", "USING default");

  const stats = await statsOf(w, "stats");
  const jobs = new Map<string, Yaml>();
  for (const [name, e] of Object.entries(expect)) jobs.set(name, (await jobStats(w, e.id))!);
  w.close();

  if (how === "SIGKILL") {
    await kill9(a);
  } else {
    await sigterm(a);
  }
  const killed = { code: a.child!.exitCode, signal: a.child!.signalCode };
  // the 1 s delay must run out while the server is down
  const since = Date.now() - expectStart(expect);
  if (since < 1500) await sleep(1500 - since);

  const b = await sc.start(reader, flags);
  const v = await dial(b.addr);
  const afterJobs: RestartRun["after"]["jobs"] = new Map();
  for (const [name, e] of Object.entries(expect)) {
    const askedAt = Date.now();
    const st = await jobStats(v, e.id);
    const answeredAt = Date.now();
    afterJobs.set(name, { stats: st, peek: await v.cmd(`peek ${e.id}`), askedAt, answeredAt });
  }
  const afterDeleted = new Map<number, { stats: Yaml | undefined; peek: string }>();
  for (const id of deleted) afterDeleted.set(id, { stats: await jobStats(v, id), peek: await v.cmd(`peek ${id}`) });
  const tubes = listNames(await v.cmd("list-tubes"));
  const tubeStats = new Map<string, Yaml>();
  for (const t of tubes) tubeStats.set(t, await statsOf(v, `stats-tube ${t}`));
  const afterStats = await statsOf(v, "stats");
  await expectReply(v, "use dur.a", "USING dur.a");
  const peekReadyA = await v.cmd("peek-ready");
  await expectReply(v, "use dur.b", "USING dur.b");
  const buriedWalk: string[] = [];
  for (let i = 0; i < 3; i++) {
    buriedWalk.push(await v.cmd("peek-buried"));
    buriedWalk.push(await v.cmd("kick 1"));
  }
  buriedWalk.push(await v.cmd("peek-buried"));
  await expectReply(v, "use default", "USING default");
  const nextId = await putId(v, "after the restart");
  v.close();
  const output = b.output();
  await kill9(b);
  return {
    expect,
    deleted,
    recordsExpected: records,
    before: { stats, jobs, buriedHead },
    killed,
    after: {
      jobs: afterJobs,
      deleted: afterDeleted,
      tubes,
      tubeStats,
      stats: afterStats,
      peekReadyA,
      buriedWalk,
      nextId,
      output,
    },
  };
}

/** When the first delayed-by-1s job was put (the scenario's clock for "while down"). */
function expectStart(expect: Record<string, Expect>): number {
  return expect.shortDelay?.delayFrom ?? Date.now();
}

function restartSuite(writer: Srv, reader: Srv, how: "SIGKILL" | "SIGTERM"): void {
  const missing = writer.target.unavailable() ?? reader.target.unavailable();
  const label = `restart after ${how}: written by ${writer.name}, recovered by ${reader.name}`;
  describe(label, { skip: skipUnless(missing === undefined, missing ?? "") }, () => {
    const sc = new Scope();
    let run: RestartRun | undefined;
    let failure: unknown;
    before(async () => {
      try {
        run = await restartRun(sc, writer, reader, how);
      } catch (e) {
        failure = e;
      }
    });
    after(() => sc.cleanup());
    const r = (): RestartRun => {
      if (failure) throw failure;
      assert.ok(run, "the scenario did not run");
      return run;
    };
    /** Check one job after the restart against its expectation. */
    const same = (name: string) => {
      const { expect, after } = r();
      const e = expect[name]!;
      const got = after.jobs.get(name)!;
      assert.equal(got.peek, found(e.id, e.body), `${name}: body after the restart`);
      assert.ok(got.stats, `${name}: stats-job ${e.id} is NOT_FOUND after the restart`);
      const s = got.stats;
      const fields = (y: Yaml) => ({
        tube: y.str("tube"),
        state: y.str("state"),
        pri: y.num("pri"),
        ttr: y.num("ttr"),
        reserves: y.num("reserves"),
        releases: y.num("releases"),
        buries: y.num("buries"),
        kicks: y.num("kicks"),
        timeouts: y.num("timeouts"),
      });
      assert.deepEqual(fields(s), {
        tube: e.tube,
        state: e.state,
        pri: e.pri,
        ttr: e.ttr,
        reserves: e.reserves,
        releases: e.releases,
        buries: e.buries,
        kicks: e.kicks,
        timeouts: 0,
      }, `${name} (job ${e.id}) after the restart: ${JSON.stringify(s.reply)}`);
      return s;
    };

    if (how === "SIGKILL") {
      test("the first server died of SIGKILL", () => {
        assert.deepEqual(r().killed, { code: null, signal: "SIGKILL" });
      });
    } else {
      test("SIGTERM: the first server exits 0", () => {
        assert.deepEqual(r().killed, { code: 0, signal: null });
      });
    }

    test("ready jobs keep their priority and ttr; the ready order is by pri", () => {
      same("ready");
      same("default");
      const { expect, after } = r();
      assert.equal(after.peekReadyA, found(expect.counters!.id, expect.counters!.body), "peek-ready in dur.a");
    });

    test("delayed jobs keep their absolute deadline: time-left shrinks across the restart", () => {
      const { expect, before, after } = r();
      for (const name of ["delayed", "releaseDelay"]) {
        const e = expect[name]!;
        const s = same(name);
        const got = after.jobs.get(name)!;
        assert.equal(s.num("delay"), e.delay, `${name}: delay`);
        const tl = s.num("time-left");
        const tlBefore = before.jobs.get(name)!.num("time-left");
        // the server computed time-left between askedAt and answeredAt; the deadline is
        // delay seconds after a moment between delayFrom and the put's reply
        // (250 ms for the command to reach the server)
        const hi = Math.floor((e.delayFrom! + 250 + e.delay! * 1000 - got.askedAt) / 1000);
        const lo = Math.floor((e.delayFrom! + e.delay! * 1000 - got.answeredAt) / 1000);
        assert.ok(
          tl >= lo && tl <= hi,
          `${name}: time-left ${tl} after the restart, expected ${lo}..${hi} ` +
            `(${got.askedAt - e.delayFrom!} ms after the delay began; a deadline restarted from scratch gives ${
              e.delay! - 1
            })`,
        );
        assert.ok(tl < tlBefore, `${name}: time-left ${tl} after the restart, ${tlBefore} before: it must shrink`);
      }
    });

    test("a delay that passed while the server was down comes back ready", () => {
      const s = same("shortDelay");
      assert.equal(s.num("time-left"), 0);
    });

    test("buried jobs keep their bury order (peek-buried and kick) and their new pri", () => {
      const { expect, before, after } = r();
      for (const n of ["b1", "b2", "b3"]) same(n);
      const [b1, b2, b3] = [expect.b1!, expect.b2!, expect.b3!];
      assert.equal(before.buriedHead, found(b2.id, b2.body), "peek-buried before the crash (sanity)");
      assert.deepEqual(after.buriedWalk, [
        found(b2.id, b2.body),
        "KICKED 1\r\n",
        found(b3.id, b3.body),
        "KICKED 1\r\n",
        found(b1.id, b1.body),
        "KICKED 1\r\n",
        "NOT_FOUND\r\n",
      ]);
    });

    test("a job reserved at the crash comes back ready", () => {
      const { before, after } = r();
      assert.equal(before.jobs.get("reserved")!.str("state"), "reserved", "reserved before the crash (sanity)");
      same("reserved");
      assert.equal(after.stats.num("current-jobs-reserved"), 0);
    });

    test("deleted jobs stay deleted; a tube whose jobs are all deleted is gone", () => {
      const { deleted, after } = r();
      for (const id of deleted) {
        const d = after.deleted.get(id)!;
        assert.equal(d.peek, "NOT_FOUND\r\n", `peek ${id}`);
        assert.equal(d.stats, undefined, `stats-job ${id}`);
      }
      assert.ok(!after.tubes.includes("dur.gone"), `list-tubes: ${after.tubes.join(", ")}`);
    });

    test("release with delay 0 keeps its new pri (1.12 bug #597 fixed)", () => {
      same("release0");
    });

    test("release with a delay: delayed, new pri, released count", () => {
      same("releaseDelay");
    });

    test("bury, kick (buried and delayed) and kick-job (buried and delayed)", () => {
      for (const n of ["kickBuried", "kickDelayed", "kickJobBuried", "kickJobDelayed"]) same(n);
    });

    test("jobs in several tubes: the tubes exist again, with their counts", () => {
      const { after } = r();
      assert.deepEqual([...after.tubes].sort(), ["default", "dur.a", "dur.b", "dur.big", "dur.c"]);
      const counts = (t: string) => {
        const y = after.tubeStats.get(t)!;
        return ["ready", "reserved", "delayed", "buried"].map((k) => y.num(`current-jobs-${k}`));
      };
      assert.deepEqual(counts("dur.a"), [5, 0, 2, 0], "dur.a ready/reserved/delayed/buried");
      assert.deepEqual(counts("dur.b"), [0, 0, 0, 3], "dur.b (before the kicks)");
      assert.deepEqual(counts("dur.c"), [4, 0, 0, 0], "dur.c");
      assert.deepEqual(counts("dur.big"), [1, 0, 0, 0], "dur.big");
      assert.deepEqual(counts("default"), [1, 0, 0, 0], "default");
      const s = after.stats;
      assert.deepEqual(
        ["ready", "reserved", "delayed", "buried"].map((k) => s.num(`current-jobs-${k}`)),
        [11, 0, 2, 3],
        "stats current-jobs-*",
      );
    });

    test("job counters come back as of the last record (a later reserve is not logged)", () => {
      const { before } = r();
      assert.equal(before.jobs.get("counters")!.num("reserves"), 3, "reserves before the crash (sanity)");
      same("counters");
    });

    test(`a max-size job (-z ${Z_RESTART}, CRLF inside) replays`, () => {
      same("big");
    });

    test("the next id after the restart is greater than every id handed out before", () => {
      const { expect, deleted, after } = r();
      const max = Math.max(...Object.values(expect).map((e) => e.id), ...deleted);
      assert.ok(after.nextId > max, `next id ${after.nextId}, ids before went up to ${max}`);
    });

    test("stats: binlog-* keys are real", () => {
      const { before, after, recordsExpected } = r();
      const keys = (y: Yaml) => ({
        current: y.num("binlog-current-index"),
        oldest: y.num("binlog-oldest-index"),
        written: y.num("binlog-records-written"),
        max: y.num("binlog-max-size"),
      });
      const b = keys(before.stats);
      const a = keys(after.stats);
      assert.ok(b.current > 0, `binlog-current-index before: ${b.current}`);
      assert.ok(b.oldest > 0 && b.oldest <= b.current, `binlog-oldest-index before: ${b.oldest}`);
      assert.equal(b.written, recordsExpected, "binlog-records-written: one per logged command");
      assert.equal(b.max, S_RESTART, "binlog-max-size = -s");
      assert.ok(a.current > b.current, `each start writes a new file: ${b.current} then ${a.current}`);
      assert.equal(a.max, S_RESTART);
    });

    test("stats-job file is non-zero, before and after the restart", () => {
      const { before, after } = r();
      for (const [name, y] of before.jobs) assert.ok(y.num("file") > 0, `${name} before: file ${y.num("file")}`);
      for (const [name, j] of after.jobs) {
        assert.ok(j.stats && j.stats.num("file") > 0, `${name} after: ${JSON.stringify(j.stats?.reply)}`);
      }
    });

    test("jobs keep their age across the restart", () => {
      const { expect, after } = r();
      const y = after.jobs.get("ready")!.stats!;
      const elapsed = Date.now() - expectStart(expect);
      assert.ok(y.num("age") >= 1, `age ${y.num("age")} after ${elapsed} ms`);
    });
  });
}

restartSuite(HERE, HERE, "SIGKILL");
restartSuite(HERE, OTHER, "SIGKILL");
restartSuite(HERE, HERE, "SIGTERM");

describe(`the wal directory: ${HERE.name}`, () => {
  const sc = new Scope();
  after(() => sc.cleanup());

  test("a second server on the same DIR exits 10 with a clear message; the first keeps serving", async () => {
    const dir = sc.dir();
    const a = await sc.start(HERE, ["-b", dir]);
    const second = await runToExit(HERE, ["-b", dir]);
    assert.equal(second.code, 10, `exit code; output: ${second.output}`);
    assert.match(second.output, /failed to lock wal dir/);
    assert.ok(second.output.includes(dir), `the message names the directory: ${second.output}`);
    const w = await dial(a.addr);
    const id = await putId(w, "still here");
    assert.equal(await w.cmd(`peek ${id}`), found(id, "still here"));
    w.close();
    await kill9(a);
  });

  test("a missing DIR exits 10 with a clear message", async () => {
    const dir = join(sc.dir(), "missing");
    const r = await runToExit(HERE, ["-b", dir]);
    assert.equal(r.code, 10, `exit code; output: ${r.output}`);
    assert.match(r.output, /failed to lock wal dir/);
    assert.ok(r.output.includes(dir), `the message names the directory: ${r.output}`);
  });
});

describe(`a pipelined batch is logged before its replies: ${HERE.name}`, () => {
  const sc = new Scope();
  after(() => sc.cleanup());

  // The log writes each batch of commands with one append, before the batch's replies
  // go out: 500 puts in one write, every one INSERTED, all of them there after kill -9
  // (default -f 50: nothing was fsynced for them; -f 0: the replies waited for it).
  for (const fsync of [[], ["-f", "0"]]) {
    test(`500 puts in one write, then kill -9: all 500 come back (${fsync.join(" ") || "-f 50"})`, async () => {
      const dir = sc.dir();
      const a = await sc.start(HERE, ["-b", dir, ...fsync]);
      const w = await dial(a.addr);
      const N = 500;
      const bodies: string[] = [];
      let batch = "use pipelined\r\n";
      for (let i = 0; i < N; i++) {
        const body = `job ${i} ${"b".repeat(i % 97)}`;
        bodies.push(body);
        batch += `put ${i % 7} 0 60 ${body.length}\r\n${body}\r\n`;
      }
      w.send(batch);
      assert.equal(await w.reply(), "USING pipelined\r\n");
      const ids: number[] = [];
      for (let i = 0; i < N; i++) {
        const r = await w.reply();
        const m = /^INSERTED (\d+)\r\n$/.exec(r);
        assert.ok(m, `reply ${i}: ${JSON.stringify(r)}`);
        ids.push(Number(m[1]));
      }
      assert.equal(new Set(ids).size, N);
      await kill9(a);
      const b = await sc.start(HERE, ["-b", dir]);
      const r = await dial(b.addr);
      const st = await statsOf(r, "stats-tube pipelined");
      assert.equal(st.num("current-jobs-ready"), N);
      for (let i = 0; i < N; i++) assert.equal(await r.cmd(`peek ${ids[i]}`), found(ids[i]!, bodies[i]!));
      const js = await jobStats(r, ids[N - 1]!);
      assert.equal(js?.num("pri"), (N - 1) % 7);
      r.close();
      await kill9(b);
    });
  }
});
