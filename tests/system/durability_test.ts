// Durability through the real process: the server is started with `-b DIR`, driven
// over the wire, killed (SIGKILL, or SIGTERM), started again on the same DIR, and
// what it serves is compared with what it acknowledged before. Runs the server on
// this test's runtime (deno run server.ts under Deno, bun run server.ts under Bun),
// plus one case written by this runtime and recovered by the other.
//
//   1. restart: every state and every logged command (spec §6.3, §6.6 and the README's
//      differences), the stats binlog-* keys, the directory lock (exit 10);
//   2. a crash under load with durable acks (-f 0): every acknowledged change is there;
//   3. damaged files: a torn tail, a flipped byte, a garbage binlog.N;
//   4. disk use stays bounded: put/delete churn, and jobs released with a delay
//      again and again (beanstalkd #622), with a small -s.
//
// Run: node_modules/.bin/deno test -A tests/durability_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/durability_test.ts
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, DENO, ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { bunServer, denoServer, freePort, type Running, startProcess, type Target } from "../harness/targets.ts";
import { type Address, dial, type Wire } from "../harness/wire.ts";
import {
  binlogBytes,
  binlogFiles,
  copyBinlogs,
  KIND_FULL,
  newestBinlog,
  recordSpans,
  vmRssKb,
} from "../harness/binlog_dir.ts";

// ---- servers ------------------------------------------------------------------------

interface Srv {
  name: string;
  target: Target;
  /** The command line startProcess runs (the same as target.start's). */
  argv: string[];
}

const SERVER_TS = join(ROOT, "server.ts");
const DENO_SRV: Srv = {
  name: "deno",
  target: denoServer,
  argv: [DENO, "run", "--allow-all", "--quiet", SERVER_TS],
};
const BUN_SRV: Srv = { name: "bun", target: bunServer, argv: [BUN, "run", SERVER_TS] };
/** The server on this test's runtime, and the other one (for the cross-runtime case). */
const HERE = RUNTIME === "bun" ? BUN_SRV : DENO_SRV;
const OTHER = RUNTIME === "bun" ? DENO_SRV : BUN_SRV;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolve with p, or reject after ms (the timer is always cleared). */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}

/** Temp dirs and servers of one describe block, removed/stopped by cleanup(). */
class Scope {
  #dirs: string[] = [];
  #servers: Running[] = [];

  dir(): string {
    const d = mkdtempSync(join(tmpdir(), "tubeway-durability-"));
    this.#dirs.push(d);
    return d;
  }

  async start(s: Srv, flags: string[]): Promise<Running> {
    const r = await startProcess(s.argv, flags);
    this.#servers.push(r);
    return r;
  }

  async cleanup(): Promise<void> {
    for (const r of this.#servers) await kill9(r);
    this.#servers = [];
    for (const d of this.#dirs) rmSync(d, { recursive: true, force: true });
    this.#dirs = [];
  }
}

function exited(r: Running): boolean {
  const c = r.child!;
  return c.exitCode !== null || c.signalCode !== null;
}

/** kill -9 and wait for the exit. */
async function kill9(r: Running): Promise<void> {
  const c = r.child!;
  if (exited(r)) return;
  const gone = new Promise<void>((res) => c.once("exit", () => res()));
  c.kill("SIGKILL");
  await within(gone, 10000, "exit after SIGKILL");
}

/**
 * SIGTERM and wait for the exit (SIGKILL after 10 s). Sent with process.kill, not
 * child.kill: under Deno, a ChildProcess killed through child.kill() reports the
 * signal sent as its exit status whatever the process really did, so a clean exit 0
 * would read as "killed by SIGTERM" there.
 */
async function sigterm(r: Running): Promise<void> {
  const c = r.child!;
  if (exited(r)) return;
  const gone = new Promise<void>((res) => c.once("exit", () => res()));
  process.kill(c.pid!, "SIGTERM");
  try {
    await within(gone, 10000, "exit after SIGTERM");
  } catch (e) {
    await kill9(r);
    throw e;
  }
}

/** Run the server until it exits by itself (for the start-up failures); bounded. */
async function runToExit(
  s: Srv,
  flags: string[],
  timeoutMs = 20000,
): Promise<{ code: number | null; signal: string | null; output: string }> {
  const port = await freePort();
  const [cmd, ...args] = s.argv;
  const child = spawn(cmd!, [...args, "-l", "127.0.0.1", "-p", String(port), ...flags], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const done = new Promise<{ code: number | null; signal: string | null }>((res) =>
    child.once("close", (code, signal) => res({ code, signal }))
  );
  try {
    const r = await within(done, timeoutMs, `${s.name} ${flags.join(" ")} to exit`);
    return { ...r, output };
  } catch (e) {
    child.kill("SIGKILL");
    await within(done, 5000, "exit after SIGKILL");
    throw new Error(`${(e as Error).message}; output so far:\n${output}`);
  }
}

/** Wait (bounded) until the server's output contains s. */
async function outputHas(r: Running, s: string, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 300 && !r.output().includes(s); i++) {
    if (Date.now() > deadline) break;
    await sleep(10);
  }
  return r.output().includes(s);
}

// ---- wire helpers ----------------------------------------------------------------------

/** A YAML reply as a map (stats, stats-job, stats-tube). */
class Yaml {
  readonly map = new Map<string, string>();
  constructor(readonly reply: string) {
    const m = /^OK (\d+)\r\n---\n([\s\S]*)\r\n$/.exec(reply);
    assert.ok(m, `expected a YAML reply, got ${JSON.stringify(reply)}`);
    for (const l of m[2]!.split("\n")) {
      const i = l.indexOf(": ");
      if (i > 0) this.map.set(l.slice(0, i), l.slice(i + 2));
    }
  }
  str(k: string): string {
    const v = this.map.get(k);
    assert.ok(v !== undefined, `missing key ${k} in ${JSON.stringify(this.reply)}`);
    return v.startsWith('"') ? v.slice(1, -1) : v;
  }
  num(k: string): number {
    const v = this.str(k);
    assert.match(v, /^-?\d+$/, `${k} should be an integer, got ${JSON.stringify(v)}`);
    return Number(v);
  }
}

async function putId(w: Wire, body: string, pri = 0, delay = 0, ttr = 60): Promise<number> {
  const r = await w.put(body, pri, delay, ttr);
  const m = /^INSERTED (\d+)\r\n$/.exec(r);
  assert.ok(m, `put ${pri} ${delay} ${ttr}: expected INSERTED <id>, got ${JSON.stringify(r)}`);
  return Number(m[1]);
}

async function expectReply(w: Wire, line: string, want: string): Promise<void> {
  assert.equal(await w.cmd(line), want + "\r\n", line);
}

async function statsOf(w: Wire, line: string): Promise<Yaml> {
  return new Yaml(await w.cmd(line));
}

/** stats-job, or undefined for NOT_FOUND. */
async function jobStats(w: Wire, id: number): Promise<Yaml | undefined> {
  const r = await w.cmd(`stats-job ${id}`);
  return r === "NOT_FOUND\r\n" ? undefined : new Yaml(r);
}

function found(id: number, body: string): string {
  return `FOUND ${id} ${Buffer.byteLength(body, "latin1")}\r\n${body}\r\n`;
}

function listNames(reply: string): string[] {
  const m = /^OK \d+\r\n---\n([\s\S]*)\r\n$/.exec(reply);
  assert.ok(m, `expected a list, got ${JSON.stringify(reply)}`);
  return m[1]!.split("\n").filter((l) => l.startsWith("- ")).map((l) => l.slice(2));
}

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

// ---- 2. a crash under load, durable acks ----------------------------------------------

type LState = "ready" | "delayed" | "buried" | "absent";

/** A logged change of one job, in the order the server applied them. */
interface LOp {
  to: LState;
  acked: boolean;
}

interface TJob {
  id: number;
  body: string;
  tube: string;
  ops: LOp[];
}

/** What the clients were told, per job. */
class Tracker {
  jobs = new Map<number, TJob>();
  /** Bodies put whose INSERTED has not arrived (and no one reserved them yet). */
  pendingPuts = new Map<string, { tube: string; to: LState }>();
  /** Buried or delayed jobs (as acknowledged) that a client may kick-job. */
  kickable: number[] = [];
  problems: string[] = [];
  maxIdSeen = 0;
  killed = false;
  stats = { puts: 0, deletes: 0, buries: 0, releases: 0, kicks: 0, reserves: 0 };

  problem(s: string): void {
    if (this.problems.length < 20) this.problems.push(s);
  }

  /** The states the job may be in after a crash: after any prefix that includes every acked op. */
  allowed(j: TJob): Set<LState> {
    let k = -1;
    j.ops.forEach((o, i) => {
      if (o.acked) k = i;
    });
    const out = new Set<LState>(k < 0 ? ["absent"] : []);
    for (let i = Math.max(k, 0); i < j.ops.length; i++) out.add(j.ops[i]!.to);
    return out;
  }

  inserted(id: number, body: string, tube: string, to: LState): void {
    this.maxIdSeen = Math.max(this.maxIdSeen, id);
    this.pendingPuts.delete(body);
    const j = this.jobs.get(id);
    if (j) {
      if (j.body !== body) this.problem(`INSERTED ${id} for a body another reply gave a different id`);
      j.ops[0]!.acked = true;
      return;
    }
    this.jobs.set(id, { id, body, tube, ops: [{ to, acked: true }] });
    if (to === "delayed") this.kickable.push(id);
  }

  /** A job a reserve returned; it may be one whose INSERTED has not arrived yet. */
  reserved(id: number, body: string): TJob | undefined {
    this.maxIdSeen = Math.max(this.maxIdSeen, id);
    const j = this.jobs.get(id);
    if (j) {
      if (j.body !== body) this.problem(`RESERVED ${id} with a body other than the one put`);
      return j;
    }
    const p = this.pendingPuts.get(body);
    if (!p) {
      this.problem(`RESERVED ${id} with a body no client put: ${JSON.stringify(body.slice(0, 60))}`);
      return undefined;
    }
    this.pendingPuts.delete(body);
    const n: TJob = { id, body, tube: p.tube, ops: [{ to: p.to, acked: false }] };
    this.jobs.set(id, n);
    return n;
  }
}

function loadBody(client: number, round: number, n: number): string {
  let s = `c${client}.r${round}.n${n}|`;
  const extra = Math.floor(Math.random() * 200);
  for (let i = 0; i < extra; i++) {
    s += Math.random() < 0.03 ? "\r\n" : String.fromCharCode(32 + Math.floor(Math.random() * 95));
  }
  return s;
}

/** One load client: put, reserve + delete/bury/release, kick-job, until `until` or the crash. */
async function loadClient(tr: Tracker, addr: Address, idx: number, round: number, until: number): Promise<void> {
  let w: Wire;
  try {
    w = await dial(addr);
  } catch (e) {
    if (!tr.killed) tr.problem(`client ${idx}: cannot connect: ${e}`);
    return;
  }
  const tube = `load.${idx % 2}`;
  try {
    await expectReply(w, `use ${tube}`, `USING ${tube}`);
    await expectReply(w, "watch load.0", "WATCHING 2");
    await expectReply(w, "watch load.1", "WATCHING 3");
    for (let n = 0; n < 1_000_000 && Date.now() < until && !tr.killed; n++) {
      const r = Math.random();
      if (r < 0.45) {
        const body = loadBody(idx, round, n);
        const delayed = Math.random() < 0.08;
        const to: LState = delayed ? "delayed" : "ready";
        tr.pendingPuts.set(body, { tube, to });
        const reply = await w.put(body, n % 1000, delayed ? 3600 : 0, 120);
        const m = /^INSERTED (\d+)\r\n$/.exec(reply);
        if (!m) return tr.problem(`client ${idx}: put: ${JSON.stringify(reply)}`);
        tr.stats.puts++;
        tr.inserted(Number(m[1]), body, tube, to);
      } else if (r < 0.92) {
        const reply = await w.cmd("reserve-with-timeout 0");
        if (reply === "TIMED_OUT\r\n") continue;
        const m = /^RESERVED (\d+) (\d+)\r\n/.exec(reply);
        if (!m) return tr.problem(`client ${idx}: reserve-with-timeout 0: ${JSON.stringify(reply)}`);
        tr.stats.reserves++;
        const id = Number(m[1]);
        const j = tr.reserved(id, reply.slice(m[0].length, -2));
        if (!j) return;
        const a = Math.random();
        const [line, want, to]: [string, string, LState] = a < 0.5
          ? [`delete ${id}`, "DELETED", "absent"]
          : a < 0.75
          ? [`bury ${id} ${n % 100}`, "BURIED", "buried"]
          : [`release ${id} ${n % 100} 0`, "RELEASED", "ready"];
        const op: LOp = { to, acked: false };
        j.ops.push(op);
        const got = await w.cmd(line);
        if (got !== want + "\r\n") return tr.problem(`client ${idx}: ${line}: ${JSON.stringify(got)}`);
        op.acked = true;
        if (to === "buried") tr.kickable.push(id);
        if (to === "absent") tr.stats.deletes++;
        else if (to === "buried") tr.stats.buries++;
        else tr.stats.releases++;
      } else if (tr.kickable.length > 0) {
        const i = Math.floor(Math.random() * tr.kickable.length);
        const id = tr.kickable[i]!;
        tr.kickable[i] = tr.kickable[tr.kickable.length - 1]!;
        tr.kickable.pop();
        const op: LOp = { to: "ready", acked: false };
        tr.jobs.get(id)!.ops.push(op);
        const got = await w.cmd(`kick-job ${id}`);
        if (got !== "KICKED\r\n") return tr.problem(`client ${idx}: kick-job ${id}: ${JSON.stringify(got)}`);
        op.acked = true;
        tr.stats.kicks++;
      }
    }
  } catch (e) {
    // after the kill every client loses its connection; before it, that is a failure
    if (!tr.killed) tr.problem(`client ${idx}: ${e}`);
  } finally {
    w.close();
  }
}

interface Seen {
  id: number;
  state: string;
  tube: string;
  body: string;
}

/** Every job of the ids given (pipelined stats-job + peek), after the restart. */
async function scanJobs(w: Wire, ids: number[]): Promise<Seen[]> {
  const out: Seen[] = [];
  for (let i = 0; i < ids.length; i += 400) {
    const chunk = ids.slice(i, i + 400);
    w.send(chunk.map((id) => `stats-job ${id}\r\npeek ${id}\r\n`).join(""));
    for (const id of chunk) {
      const st = await w.reply(10000);
      const pk = await w.reply(10000);
      if (st === "NOT_FOUND\r\n") {
        assert.equal(pk, "NOT_FOUND\r\n", `job ${id}: stats-job NOT_FOUND but peek ${JSON.stringify(pk)}`);
        continue;
      }
      const y = new Yaml(st);
      const m = /^FOUND (\d+) (\d+)\r\n/.exec(pk);
      assert.ok(m && Number(m[1]) === id, `peek ${id}: ${JSON.stringify(pk.slice(0, 80))}`);
      out.push({ id, state: y.str("state"), tube: y.str("tube"), body: pk.slice(m[0].length, -2) });
    }
  }
  return out;
}

describe(`crash under load with durable acks (-f 0): ${HERE.name}`, () => {
  const sc = new Scope();
  after(() => sc.cleanup());

  test("every acknowledged change survives kill -9 at a random moment (3 rounds)", async () => {
    const CLIENTS = 8;
    const ROUNDS = 3;
    const LOAD_MS = 1500;
    const t0 = Date.now();
    const deadline = t0 + 28000;
    const dir = sc.dir();
    const flags = ["-b", dir, "-f", "0"];
    const tr = new Tracker();
    let server = await sc.start(HERE, flags);
    let lo = 1; // the lowest id this round's puts can get
    const lines: string[] = [];
    let rounds = 0;
    for (let round = 1; round <= ROUNDS && Date.now() < deadline - 8000; round++) {
      tr.killed = false;
      Object.assign(tr.stats, { puts: 0, deletes: 0, buries: 0, releases: 0, kicks: 0, reserves: 0 });
      const start = Date.now();
      const until = start + LOAD_MS;
      const killAt = 200 + Math.floor(Math.random() * (LOAD_MS - 300));
      const clients = Array.from({ length: CLIENTS }, (_, i) => loadClient(tr, server.addr, i, round, until));
      await sleep(killAt);
      tr.killed = true;
      await kill9(server);
      await within(Promise.all(clients), 15000, "the load clients to stop");
      assert.deepEqual(tr.problems, [], `round ${round}: problems during the load`);

      server = await sc.start(HERE, flags);
      const w = await dial(server.addr);
      const probe = await putId(w, "probe after the restart");
      assert.ok(probe > tr.maxIdSeen, `round ${round}: id ${probe} after the restart, ${tr.maxIdSeen} seen before`);
      const ids = new Set<number>(tr.jobs.keys());
      for (let id = lo; id <= Math.min(tr.maxIdSeen + 64, probe - 1); id++) ids.add(id);
      const seen = await scanJobs(w, [...ids].sort((a, b) => a - b));
      await expectReply(w, `delete ${probe}`, "DELETED");
      const st = await statsOf(w, "stats");
      const total = ["ready", "reserved", "delayed", "buried"].reduce((n, k) => n + st.num(`current-jobs-${k}`), 0);
      w.close();
      assert.equal(seen.length, total, `round ${round}: the scan found ${seen.length} jobs, stats counts ${total}`);

      const byId = new Map(seen.map((s) => [s.id, s]));
      const bodies = new Set<string>();
      const wrong: string[] = [];
      const note = (s: string) => wrong.length < 20 && wrong.push(s);
      let acked = 0;
      for (const s of seen) {
        if (bodies.has(s.body)) note(`job ${s.id}: a body that another job also has`);
        bodies.add(s.body);
        if (s.state === "reserved") note(`job ${s.id} is reserved right after a restart`);
        const j = tr.jobs.get(s.id);
        if (j) {
          if (j.body !== s.body) {
            note(
              `job ${s.id}: body ${JSON.stringify(s.body.slice(0, 60))}, put ${JSON.stringify(j.body.slice(0, 60))}`,
            );
          }
          if (j.tube !== s.tube) note(`job ${s.id}: tube ${s.tube}, put in ${j.tube}`);
          continue;
        }
        const p = tr.pendingPuts.get(s.body);
        if (!p) {
          note(`job ${s.id} (${s.state}, ${s.tube}): a body no client put: ${JSON.stringify(s.body.slice(0, 60))}`);
          continue;
        }
        if (p.to !== s.state || p.tube !== s.tube) {
          note(`job ${s.id}: unacknowledged put came back ${s.state} in ${s.tube}`);
        }
        tr.pendingPuts.delete(s.body);
      }
      for (const j of tr.jobs.values()) {
        const s = byId.get(j.id);
        const state = (s ? s.state : "absent") as LState;
        const ok = tr.allowed(j);
        if (j.ops.some((o) => o.acked)) acked++;
        if (!ok.has(state)) {
          note(
            `job ${j.id}: ${state} after the restart; allowed ${[...ok].join("/")}; ops ${
              j.ops.map((o) => o.to + (o.acked ? "(acked)" : "(no reply)")).join(" > ")
            }`,
          );
        }
      }
      assert.deepEqual(wrong, [], `round ${round}: jobs after the restart`);
      const s = tr.stats;
      lines.push(
        `round ${round}: killed at ${killAt} ms; acked puts ${s.puts}, reserves ${s.reserves}, deletes ${s.deletes}, ` +
          `buries ${s.buries}, releases ${s.releases}, kick-jobs ${s.kicks}; ${acked} tracked jobs with acks checked, ` +
          `${seen.length} present after the restart`,
      );

      // what the restarted server holds is the starting point of the next round
      tr.jobs = new Map(
        seen.map((
          x,
        ) => [x.id, { id: x.id, body: x.body, tube: x.tube, ops: [{ to: x.state as LState, acked: true }] }]),
      );
      tr.pendingPuts.clear();
      tr.kickable = seen.filter((x) => x.state === "buried" || x.state === "delayed").map((x) => x.id);
      tr.maxIdSeen = probe;
      lo = probe + 1;
      rounds++;
    }
    await kill9(server);
    console.log(`durability (${HERE.name}) crash under load, ${Date.now() - t0} ms:\n  ${lines.join("\n  ")}`);
    assert.equal(rounds, ROUNDS, `only ${rounds} rounds fitted in the time bound`);
    assert.ok(Date.now() - t0 < 30000, `took ${Date.now() - t0} ms`);
  });
});

// ---- 3. damaged files ---------------------------------------------------------------

describe(`damaged binlog files: ${HERE.name}`, () => {
  const sc = new Scope();
  let pristine = "";
  /** id -> body and state of every job in the pristine directory. */
  const jobs = new Map<number, { body: string; state: string }>();
  let deletedId = 0;
  let lastId = 0;
  let maxId = 0;
  let failure: unknown;

  before(async () => {
    try {
      pristine = sc.dir();
      const a = await sc.start(HERE, ["-b", pristine]);
      const w = await dial(a.addr);
      await expectReply(w, "use cor", "USING cor");
      const ids: number[] = [];
      for (let i = 1; i <= 12; i++) {
        const body = `cor-${i}-` + "x".repeat(i * 13) + "\r\n" + "y".repeat(i);
        const id = await putId(w, body, i);
        ids.push(id);
        jobs.set(id, { body, state: "ready" });
      }
      deletedId = ids[2]!;
      await expectReply(w, `delete ${deletedId}`, "DELETED");
      jobs.delete(deletedId);
      const buried = ids[4]!;
      assert.ok((await w.cmd(`reserve-job ${buried}`)).startsWith(`RESERVED ${buried} `));
      await expectReply(w, `bury ${buried} 5`, "BURIED");
      jobs.get(buried)!.state = "buried";
      lastId = await putId(w, "the last job, in the last record", 13);
      jobs.set(lastId, { body: "the last job, in the last record", state: "ready" });
      maxId = lastId;
      w.close();
      await kill9(a);
    } catch (e) {
      failure = e;
    }
  });
  after(() => sc.cleanup());

  /** Copy the pristine log into a new directory, damage it, start a server there. */
  async function damaged(damage: (dir: string) => void): Promise<{ dir: string; r: Running; w: Wire }> {
    if (failure) throw failure;
    const dir = sc.dir();
    copyBinlogs(pristine, dir);
    damage(dir);
    const r = await sc.start(HERE, ["-b", dir]);
    return { dir, r, w: await dial(r.addr) };
  }

  /** Every job but `lost` is there with its body and state; `lost` and the deleted one are not; a new id is above all. */
  async function intact(w: Wire, lost: number[]): Promise<void> {
    for (const [id, j] of jobs) {
      if (lost.includes(id)) {
        assert.equal(await w.cmd(`peek ${id}`), "NOT_FOUND\r\n", `job ${id} was in the damaged record`);
        continue;
      }
      assert.equal(await w.cmd(`peek ${id}`), found(id, j.body), `job ${id}`);
      assert.equal((await jobStats(w, id))!.str("state"), j.state, `job ${id} state`);
    }
    assert.equal(await w.cmd(`peek ${deletedId}`), "NOT_FOUND\r\n", "the deleted job");
    await expectReply(w, "use cor", "USING cor");
    const id = await putId(w, "after the damage");
    assert.ok(id > maxId, `new id ${id}, ids before went up to ${maxId}`);
  }

  test("a torn tail: the newest file cut at several offsets inside its last record", async () => {
    const newest = newestBinlog(pristine)!;
    const spans = recordSpans(newest.path);
    const last = spans.at(-1)!;
    assert.equal(last.end, newest.size, "the records cover the whole file");
    assert.deepEqual([last.kind, last.id], [KIND_FULL, lastId], "the last record is the last put");
    const cuts = [1, 7, 15, 16, 16 + 40, last.end - last.offset - 1].map((d) => last.offset + d);
    for (const cut of cuts) {
      const { dir, r, w } = await damaged((d) => truncateSync(join(d, `binlog.${newest.seq}`), cut));
      const where = `${join(dir, `binlog.${newest.seq}`)}:${last.offset}: `;
      try {
        assert.ok(await outputHas(r, where), `cut at ${cut}: expected "${where}<reason>" in:\n${r.output()}`);
        await intact(w, [lastId]);
      } finally {
        w.close();
        await kill9(r);
      }
    }
  });

  test("a flipped byte in the middle of a file costs that record only", async () => {
    const newest = newestBinlog(pristine)!;
    const spans = recordSpans(newest.path);
    const mid = Math.floor(newest.size / 2);
    const hit = spans.find((s) => s.offset <= mid && mid < s.end)!;
    assert.ok(
      hit.kind === KIND_FULL && hit.id !== undefined && jobs.has(hit.id),
      `the middle byte is in ${JSON.stringify(hit)}`,
    );
    const { dir, r, w } = await damaged((d) => {
      const p = join(d, `binlog.${newest.seq}`);
      const b = readFileSync(p);
      b[mid] = b[mid]! ^ 0x20;
      writeFileSync(p, b);
    });
    const where = `${join(dir, `binlog.${newest.seq}`)}:${hit.offset}: `;
    try {
      assert.ok(await outputHas(r, where), `expected "${where}<reason>" in:\n${r.output()}`);
      await intact(w, [hit.id!]);
    } finally {
      w.close();
      await kill9(r);
    }
  });

  test("a garbage binlog.<N> file is reported and skipped", async () => {
    const seq = newestBinlog(pristine)!.seq + 1;
    let x = 12345;
    const junk = Buffer.alloc(3000, 0);
    for (let i = 0; i < junk.length; i++) junk[i] = (x = (x * 1103515245 + 12345) % 2 ** 31) & 0xff || 1;
    const { dir, r, w } = await damaged((d) => writeFileSync(join(d, `binlog.${seq}`), junk));
    const where = `${join(dir, `binlog.${seq}`)}:0: `;
    try {
      assert.ok(await outputHas(r, where), `expected "${where}<reason>" in:\n${r.output()}`);
      await intact(w, []);
      const cur = (await statsOf(w, "stats")).num("binlog-current-index");
      assert.ok(cur > seq, `the new file goes above the garbage one: binlog-current-index ${cur}`);
    } finally {
      w.close();
      await kill9(r);
    }
  });
});

// ---- 4. disk use stays bounded ---------------------------------------------------------

const S_SMALL = 16384;
/** Allowed: 4 x -s plus this much (a few records' worth). */
const SLACK = 8192;

describe(`disk use with -s ${S_SMALL}: ${HERE.name}`, () => {
  const sc = new Scope();
  after(() => sc.cleanup());

  test("20000 put/delete cycles", async () => {
    const dir = sc.dir();
    const flags = ["-b", dir, "-s", String(S_SMALL)];
    const a = await sc.start(HERE, flags);
    const w = await dial(a.addr);
    const body = "p".repeat(128);
    const CYCLES = 20000;
    const BATCH = 16;
    const t0 = Date.now();
    const deadline = t0 + 25000;
    let peak = 0;
    let rss = 0;
    let done = 0;
    const sample = () => {
      peak = Math.max(peak, binlogBytes(dir));
      rss = Math.max(rss, vmRssKb(a.child!.pid) ?? 0);
    };
    for (let batch = 0; done < CYCLES && Date.now() < deadline; batch++) {
      w.send(`put 0 0 60 ${body.length}\r\n${body}\r\n`.repeat(BATCH));
      const ids: number[] = [];
      for (let i = 0; i < BATCH; i++) {
        const l = await w.line();
        const m = /^INSERTED (\d+)$/.exec(l);
        assert.ok(m, `put: ${l}`);
        ids.push(Number(m[1]));
      }
      sample();
      w.send(ids.map((id) => `delete ${id}\r\n`).join(""));
      for (let i = 0; i < BATCH; i++) assert.equal(await w.line(), "DELETED");
      done += BATCH;
      sample();
    }
    const st = await statsOf(w, "stats");
    w.close();
    const ms = Date.now() - t0;
    console.log(
      `durability (${HERE.name}) put/delete: ${done} cycles in ${ms} ms; binlog.* peak ${peak} bytes ` +
        `(${(peak / S_SMALL).toFixed(2)} x -s), ${binlogFiles(dir).length} files at the end, ` +
        `records written ${st.num("binlog-records-written")}, migrated ${st.num("binlog-records-migrated")}; ` +
        `server VmRSS peak ${rss} kB`,
    );
    assert.equal(done, CYCLES, `only ${done} cycles within the time bound`);
    assert.ok(peak <= 4 * S_SMALL + SLACK, `binlog.* files took ${peak} bytes, bound ${4 * S_SMALL + SLACK}`);

    await kill9(a);
    const b = await sc.start(HERE, flags);
    const v = await dial(b.addr);
    const s2 = await statsOf(v, "stats");
    assert.deepEqual(
      ["ready", "reserved", "delayed", "buried"].map((k) => s2.num(`current-jobs-${k}`)),
      [0, 0, 0, 0],
      "no job comes back",
    );
    const id = await putId(v, "after");
    assert.ok(id > CYCLES, `new id ${id}`);
    v.close();
    await kill9(b);
  });

  test("jobs released with a delay again and again (beanstalkd #622)", async () => {
    const dir = sc.dir();
    const flags = ["-b", dir, "-s", String(S_SMALL)];
    const a = await sc.start(HERE, flags);
    const w = await dial(a.addr);
    const JOBS = 5;
    const ROUNDS = 2000;
    const REPS = 10;
    const ids: number[] = [];
    for (let i = 0; i < JOBS; i++) ids.push(await putId(w, `released again and again ${i} ` + "r".repeat(100), i));
    const t0 = Date.now();
    const deadline = t0 + 20000;
    let peak = 0;
    let rss = 0;
    let rounds = 0;
    for (; rounds < ROUNDS && Date.now() < deadline; rounds += REPS) {
      let s = "";
      for (let k = 0; k < REPS; k++) {
        for (const [i, id] of ids.entries()) s += `reserve-job ${id}\r\nrelease ${id} ${1000 + i} 1000\r\n`;
      }
      w.send(s);
      for (let k = 0; k < REPS; k++) {
        for (const id of ids) {
          const r = await w.reply();
          assert.ok(r.startsWith(`RESERVED ${id} `), `reserve-job ${id}: ${JSON.stringify(r.slice(0, 40))}`);
          assert.equal(await w.line(), "RELEASED");
        }
      }
      peak = Math.max(peak, binlogBytes(dir));
      rss = Math.max(rss, vmRssKb(a.child!.pid) ?? 0);
    }
    const st = await statsOf(w, "stats");
    w.close();
    console.log(
      `durability (${HERE.name}) release with delay: ${rounds * JOBS} releases of ${JOBS} jobs in ${
        Date.now() - t0
      } ms; binlog.* peak ${peak} bytes (${(peak / S_SMALL).toFixed(2)} x -s), ` +
        `records written ${st.num("binlog-records-written")}, migrated ${st.num("binlog-records-migrated")}; ` +
        `server VmRSS peak ${rss} kB`,
    );
    assert.equal(rounds, ROUNDS, `only ${rounds} rounds within the time bound`);
    assert.ok(peak <= 4 * S_SMALL + SLACK, `binlog.* files took ${peak} bytes, bound ${4 * S_SMALL + SLACK}`);

    await kill9(a);
    const b = await sc.start(HERE, flags);
    const v = await dial(b.addr);
    for (const [i, id] of ids.entries()) {
      const y = (await jobStats(v, id))!;
      assert.ok(y, `job ${id} after the restart`);
      assert.deepEqual(
        [y.str("state"), y.num("pri"), y.num("releases"), y.num("reserves"), y.num("delay")],
        ["delayed", 1000 + i, ROUNDS, ROUNDS, 1000],
        `job ${id}: ${y.reply}`,
      );
      assert.ok(y.num("time-left") > 900 && y.num("file") > 0, y.reply);
    }
    v.close();
    await kill9(b);
  });
});
