// Switching from the real beanstalkd 1.12 and back, through real processes and
// real files, for this runtime's server and for the compiled binary:
//   1. beanstalkd -b DIR writes jobs in every state; it is killed; tubeway started
//      on DIR has every job (ids, tubes, bodies, pri, ttr, counters, states, delays,
//      bury order), continues the ids above them, and leaves beanstalkd's files
//      byte for byte as they were, so beanstalkd started on DIR again has its jobs;
//   2. a beanstalkd holding DIR/lock stops tubeway with exit 10;
//   3. tubeway export-binlog writes tubeway's jobs as a directory beanstalkd reads.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, RUNTIME, skipUnless } from "../harness/paths.ts";
import {
  beanstalkd,
  binary,
  buildBinary,
  bunServer,
  denoServer,
  type Running,
  runToEnd as run,
  type Target,
} from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { assertSame, buriedOrder, killed, view, viewAll, WRITE_JOBS_Z, writeJobs } from "../harness/job_views.ts";

const HERE: { target: Target; argv: () => Promise<string[]> } = RUNTIME === "bun"
  ? { target: bunServer, argv: () => Promise.resolve([...BUN_SERVER]) }
  : {
    target: denoServer,
    argv: () => Promise.resolve([...DENO_SERVER]),
  };
const BINARY = { target: binary, argv: async () => [await buildBinary()] };
const KINDS = [HERE, BINARY];

const skip = skipUnless(beanstalkd.unavailable() === undefined, "beanstalkd is not installed");
const base = mkdtempSync(join(tmpdir(), "tubeway-takeover-"));
after(() => rmSync(base, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => mkdtempSync(join(base, `d${dirs++}-`));

/** -z for writeJobs's jobs: a body of exactly this size is among them. */
const Z = WRITE_JOBS_Z;

/** sha256 of every file in dir whose name passes `keep`. */
function hashes(dir: string, keep: (name: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of readdirSync(dir).filter(keep).sort()) {
    out[n] = createHash("sha256").update(readFileSync(join(dir, n))).digest("hex");
  }
  return out;
}
const beanstalkdFile = (n: string) => n === "lock" || /^binlog\.\d+$/.test(n);

for (const kind of KINDS) {
  describe(`switching from beanstalkd 1.12: ${kind.target.name}`, { skip }, () => {
    it("takes over every job, leaves beanstalkd's files as they were, and beanstalkd still has its jobs", {
      timeout: 120_000,
    }, async () => {
      const dir = freshDir();
      const bs = await beanstalkd.start(["-b", dir, "-z", String(Z)]);
      let tw: Running | undefined;
      try {
        const { w, ids, buried } = await writeJobs(bs);
        const before = await viewAll(w, ids);
        assert.equal(before.get(10)?.stats.state, "reserved");
        const killedAt = Date.now();
        await killed(bs);
        w.close();
        const files = hashes(dir, beanstalkdFile);
        assert.ok(
          Object.keys(files).includes("binlog.1") && Object.keys(files).includes("lock"),
          Object.keys(files).join(),
        );

        // the same -z as beanstalkd: 1.12 itself could not read its job of exactly -z bytes back
        tw = await kind.target.start(["-b", dir, "-z", String(Z)]);
        const t = await dial(tw.addr);
        const down = Math.ceil((Date.now() - killedAt) / 1000);
        const after = await viewAll(t, ids);
        for (const id of ids) assertSame(after.get(id), before.get(id), down);
        assert.match(
          tw.output(),
          /imported beanstalkd's binlog from .*: 11 jobs: 7 ready, 2 delayed, 2 buried; 1 file read, 0 problems; next id 13\n/,
        );
        assert.match(await t.put("new after the switch"), /^INSERTED 13\r\n$/);
        assert.deepEqual(await buriedOrder(t, "beta"), buried, "kick takes the buried jobs in bury order");
        t.close();
        await tw.stop();
        tw = undefined;

        assert.deepEqual(hashes(dir, beanstalkdFile), files, "beanstalkd's files are byte for byte as they were");
        const ours = readdirSync(dir).filter((n) => n.startsWith("tubeway."));
        assert.ok(ours.includes("tubeway.imported") && ours.includes("tubeway.1"), ours.join());

        // beanstalkd started on the directory again: its own jobs, as it left them (-z + 2: its off-by-two)
        const again = await beanstalkd.start(["-b", dir, "-z", String(Z + 2)]);
        try {
          const b = await dial(again.addr);
          const back = await viewAll(b, ids);
          for (const id of ids) assertSame(back.get(id), before.get(id), Math.ceil((Date.now() - killedAt) / 1000), 1);
          assert.equal(await b.cmd("peek 13"), "NOT_FOUND\r\n", "tubeway's own job is not beanstalkd's");
          b.close();
        } finally {
          await killed(again);
        }
        for (const n of ours) assert.ok(readdirSync(dir).includes(n), `beanstalkd left ${n} alone`);

        // tubeway again: no second import; its own changes (the kicks, job 13) are there
        tw = await kind.target.start(["-b", dir]);
        const t2 = await dial(tw.addr);
        assert.doesNotMatch(tw.output(), /imported beanstalkd's binlog/);
        // beanstalkd's restart above wrote binlog.2: named, not read
        assert.match(tw.output(), /beanstalkd files written after the import are not read \(binlog\.2\); remove /);
        assert.equal(await t2.cmd("peek 13"), "FOUND 13 20\r\nnew after the switch\r\n");
        assert.match(await t2.cmd("stats-job 8"), /\nstate: ready\n/);
        assert.equal(await view(t2, 11), undefined);
        t2.close();
      } finally {
        await killed(bs);
        await tw?.stop();
      }
    });

    it("refuses to start while a running beanstalkd holds DIR/lock (exit 10)", { timeout: 120_000 }, async () => {
      const dir = freshDir();
      const bs = await beanstalkd.start(["-b", dir]);
      try {
        const r = await run(await kind.argv(), ["-l", "127.0.0.1", "-p", "1", "-b", dir]);
        assert.equal(r.code, 10, r.err);
        assert.match(
          r.err,
          new RegExp(`${dir}/lock is locked by a running beanstalkd \\(pid ${bs.child!.pid}\\); stop it first`),
        );
        assert.deepEqual(
          readdirSync(dir).filter((n) => n.startsWith("tubeway")),
          [],
          "nothing of tubeway's was written",
        );
        const w = await dial(bs.addr);
        assert.equal(await w.cmd("put 0 0 1 1\r\nx"), "INSERTED 1\r\n", "beanstalkd keeps serving");
        w.close();
      } finally {
        await killed(bs);
      }
    });

    it(
      "export-binlog writes tubeway's jobs as a log the real beanstalkd reads back",
      { timeout: 120_000 },
      async () => {
        const dir = freshDir();
        const out = join(freshDir(), "out");
        const tw = await kind.target.start(["-b", dir, "-z", String(Z)]);
        let before;
        let jobs;
        try {
          jobs = await writeJobs(tw);
          before = await viewAll(jobs.w, jobs.ids);
          const busy = await run(await kind.argv(), ["export-binlog", "-b", dir, out]);
          assert.equal(busy.code, 10, "a running tubeway holds the directory");
          assert.match(busy.err, /failed to lock wal dir/);
          jobs.w.close();
        } finally {
          await tw.stop();
        }
        const stoppedAt = Date.now();
        const usage = await run(await kind.argv(), ["export-binlog", out]);
        assert.deepEqual([usage.code, usage.err.split("\n")[0]], [5, "tubeway: export-binlog: -b DIR is required"]);
        const r = await run(await kind.argv(), ["export-binlog", "-b", dir, out]);
        assert.equal(r.code, 0, r.err);
        assert.equal(
          r.out,
          `exported 11 jobs (7 ready, 2 delayed, 2 buried) to ${out}/binlog.1; start beanstalkd with -b ${out}\n`,
        );
        assert.deepEqual(readdirSync(out), ["binlog.1"]);
        const bs = await beanstalkd.start(["-b", out, "-z", String(Z + 2)]);
        try {
          const b = await dial(bs.addr);
          const back = await viewAll(b, jobs.ids);
          const down = Math.ceil((Date.now() - stoppedAt) / 1000);
          // 1.12's replay counts one more bury for each buried job
          for (const id of jobs.ids) assertSame(back.get(id), before.get(id), down, 1);
          assert.match(await b.put("after the way back"), /^INSERTED (\d+)\r\n$/);
          const next = Number(/^INSERTED (\d+)/.exec(await b.put("and another"))![1]);
          assert.ok(next > 13, `beanstalkd continues above tubeway's ids: ${next}`);
          assert.deepEqual(await buriedOrder(b, "beta"), jobs.buried);
          b.close();
        } finally {
          await killed(bs);
        }
      },
    );
  });
}

describe(`beanstalkd's files, damaged or old: ${HERE.target.name}`, { skip }, () => {
  it("a damaged record is reported as <path>:<offset>: <reason> and the records after it still come over", {
    timeout: 120_000,
  }, async () => {
    const dir = freshDir();
    const bs = await beanstalkd.start(["-b", dir]);
    const w = await dial(bs.addr);
    assert.equal(await w.cmd("use t"), "USING t\r\n");
    for (const body of ["one", "two", "three"]) assert.match(await w.put(body), /^INSERTED \d\r\n$/);
    await killed(bs);
    w.close();
    // job 2's record starts after the header (4) and job 1's record (4 + "t" + 80 + "one\r\n")
    const second = 4 + 4 + 1 + 80 + 5;
    const path = join(dir, "binlog.1");
    const bytes = readFileSync(path);
    bytes.writeInt32LE(0x7fffffff, second); // its tube name length
    writeFileSync(path, bytes);
    const copy = freshDir();
    cpSync(dir, copy, { recursive: true });

    const tw = await HERE.target.start(["-b", dir]);
    try {
      const t = await dial(tw.addr);
      assert.match(tw.output(), new RegExp(`${path}:${second}: bad tube name length 2147483647; skipped 90 bytes\n`));
      assert.match(tw.output(), /: 2 jobs: 2 ready, 0 delayed, 0 buried; 1 file read, 1 problem; next id 4\n/);
      assert.equal(await t.cmd("peek 1"), "FOUND 1 3\r\none\r\n");
      assert.equal(await t.cmd("peek 2"), "NOT_FOUND\r\n");
      assert.equal(await t.cmd("peek 3"), "FOUND 3 5\r\nthree\r\n");
      t.close();
    } finally {
      await tw.stop();
    }

    // beanstalkd 1.12 on the same damage drops the rest of the file: job 3 is lost there
    const again = await beanstalkd.start(["-b", copy]);
    try {
      const b = await dial(again.addr);
      assert.equal(await b.cmd("peek 1"), "FOUND 1 3\r\none\r\n");
      assert.equal(await b.cmd("peek 3"), "NOT_FOUND\r\n");
      b.close();
    } finally {
      await killed(again);
    }
  });

  it("an earlier tubeway's binlog.N files are renamed to tubeway.N and replayed, never imported", {
    timeout: 120_000,
  }, async () => {
    const dir = freshDir();
    const first = await HERE.target.start(["-b", dir]);
    const w = await dial(first.addr);
    assert.equal(await w.put("kept", 3), "INSERTED 1\r\n");
    w.close();
    await first.stop();
    // what an earlier release left behind: its log under beanstalkd's names
    for (const n of readdirSync(dir)) {
      const m = /^tubeway\.(\d+)$/.exec(n);
      if (m) renameSync(join(dir, n), join(dir, `binlog.${m[1]}`));
    }
    assert.ok(readdirSync(dir).includes("binlog.1"));
    const second = await HERE.target.start(["-b", dir]);
    try {
      const r = await dial(second.addr);
      assert.equal(await r.cmd("peek 1"), "FOUND 1 4\r\nkept\r\n");
      assert.match(second.output(), /renamed \d+ log files of an earlier tubeway from binlog.N to tubeway.N/);
      assert.doesNotMatch(second.output(), /imported/);
      assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith("binlog.")), []);
      r.close();
    } finally {
      await second.stop();
    }
  });
});
