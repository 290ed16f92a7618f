// Durability through the real process, 4: disk use stays bounded with a small -s:
// put/delete churn, and jobs released with a delay again and again (beanstalkd #622).
//
// Run: node_modules/.bin/deno test -A tests/system/durability_disk_use_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/durability_disk_use_test.ts
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { dial } from "../harness/wire.ts";
import { binlogBytes, binlogFiles, vmRssKb } from "../harness/binlog_dir.ts";
import { HERE, jobStats, kill9, Scope, statsOf } from "../harness/durability.ts";
import { putId } from "../harness/wire_checks.ts";

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
      `durability (${HERE.name}) put/delete: ${done} cycles in ${ms} ms; tubeway.* peak ${peak} bytes ` +
        `(${(peak / S_SMALL).toFixed(2)} x -s), ${binlogFiles(dir).length} files at the end, ` +
        `records written ${st.num("binlog-records-written")}, migrated ${st.num("binlog-records-migrated")}; ` +
        `server VmRSS peak ${rss} kB`,
    );
    assert.equal(done, CYCLES, `only ${done} cycles within the time bound`);
    assert.ok(peak <= 4 * S_SMALL + SLACK, `tubeway.* files took ${peak} bytes, bound ${4 * S_SMALL + SLACK}`);

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
    /** The files at the peak, for the failure message ("seq:bytes ..."). */
    let peakFiles = "";
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
      const files = binlogFiles(dir);
      const bytes = files.reduce((n, f) => n + f.size, 0);
      if (bytes > peak) {
        peak = bytes;
        peakFiles = `${files.map((f) => `tubeway.${f.seq}:${f.size}`).join(" ")} after ${rounds + REPS} rounds`;
      }
      rss = Math.max(rss, vmRssKb(a.child!.pid) ?? 0);
    }
    const st = await statsOf(w, "stats");
    w.close();
    console.log(
      `durability (${HERE.name}) release with delay: ${rounds * JOBS} releases of ${JOBS} jobs in ${
        Date.now() - t0
      } ms; tubeway.* peak ${peak} bytes (${(peak / S_SMALL).toFixed(2)} x -s), ` +
        `records written ${st.num("binlog-records-written")}, migrated ${st.num("binlog-records-migrated")}; ` +
        `server VmRSS peak ${rss} kB`,
    );
    assert.equal(rounds, ROUNDS, `only ${rounds} rounds within the time bound`);
    assert.ok(
      peak <= 4 * S_SMALL + SLACK,
      `tubeway.* files took ${peak} bytes, bound ${4 * S_SMALL + SLACK}; at the peak: ${peakFiles}`,
    );

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
