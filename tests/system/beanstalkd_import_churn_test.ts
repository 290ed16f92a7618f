// Importing a log that beanstalkd 1.12 has rotated and compacted: with -s 4096 and
// put/delete churn it writes many small files, collects old ones (so short records
// of jobs whose full record is gone remain) and copies live jobs forward. Every live
// job must come over as beanstalkd showed it, and buried jobs in bury order.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { beanstalkd, bunServer, denoServer } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { assertSame, buriedOrder, killed, viewAll } from "../harness/job_views.ts";

const HERE = RUNTIME === "bun" ? bunServer : denoServer;
const skip = skipUnless(beanstalkd.unavailable() === undefined, "beanstalkd is not installed");
const dir = mkdtempSync(join(tmpdir(), "tubeway-churn-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const PUTS = 600;
const TUBES = ["c0", "c1", "c2"];

/** A small seeded generator, so a failure can be replayed. */
function lcg(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x % n;
  };
}

describe(`importing a rotated and compacted beanstalkd log: ${HERE.name}`, { skip }, () => {
  it("every live job comes over as beanstalkd showed it", { timeout: 120_000 }, async () => {
    const rand = lcg(7);
    const bs = await beanstalkd.start(["-b", dir, "-s", "4096"]);
    let tw;
    try {
      const w = await dial(bs.addr);
      const live: number[] = [];
      const buried: Record<string, number[]> = { c0: [], c1: [], c2: [] };
      const tubeOf = new Map<number, string>();
      for (let i = 0; i < PUTS; i++) {
        const tube = TUBES[i % 3]!;
        assert.equal(await w.cmd(`use ${tube}`), `USING ${tube}\r\n`);
        const m = /^INSERTED (\d+)\r\n$/.exec(await w.put(`job ${i} `.repeat(1 + rand(30)), rand(1000)));
        const id = Number(m![1]);
        live.push(id);
        tubeOf.set(id, tube);
        if (live.length > 20 && rand(10) < 8) {
          const gone = live.splice(rand(live.length), 1)[0]!;
          assert.equal(await w.cmd(`delete ${gone}`), "DELETED\r\n");
        }
      }
      for (const id of live) {
        const x = rand(10);
        if (x >= 4) continue;
        assert.match(await w.cmd(`reserve-job ${id}`), /^RESERVED /);
        if (x < 2) {
          assert.equal(await w.cmd(`bury ${id} ${rand(10)}`), "BURIED\r\n");
          buried[tubeOf.get(id)!]!.push(id);
        } else if (x < 3) {
          assert.equal(await w.cmd(`release ${id} 5 ${100 + rand(400)}`), "RELEASED\r\n");
        } // else: held reserved by this connection
      }
      const before = await viewAll(w, live);
      const killedAt = Date.now();
      await killed(bs);
      w.close();
      const files = readdirSync(dir).filter((n) => n.startsWith("binlog."));
      assert.ok(files.length > 3, `beanstalkd rotated its log: ${files.join(" ")}`);
      assert.ok(!files.includes("binlog.1"), "and collected its oldest files");

      tw = await HERE.start(["-b", dir]);
      const t = await dial(tw.addr);
      const down = Math.ceil((Date.now() - killedAt) / 1000);
      const after = await viewAll(t, live);
      for (const id of live) assertSame(after.get(id), before.get(id), down);
      assert.match(tw.output(), new RegExp(`: ${live.length} jobs: .*; ${files.length} files read, 0 problems; `));
      for (const tube of TUBES) assert.deepEqual(await buriedOrder(t, tube), buried[tube], `bury order in ${tube}`);
      t.close();
    } finally {
      await killed(bs);
      await tw?.stop();
    }
  });
});
