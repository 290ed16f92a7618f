// Durability through the real process, 3: damaged files (a torn tail, a flipped byte,
// a garbage tubeway.N) are reported and skipped; everything else is recovered.
//
// Run: node_modules/.bin/deno test -A tests/system/durability_damaged_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/durability_damaged_test.ts
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Running } from "../harness/targets.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { copyBinlogs, KIND_FULL, newestBinlog, recordSpans } from "../harness/binlog_dir.ts";
import { expectReply, found, HERE, jobStats, kill9, outputHas, Scope, statsOf } from "../harness/durability.ts";
import { putId } from "../harness/wire_checks.ts";

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
      const { dir, r, w } = await damaged((d) => truncateSync(join(d, `tubeway.${newest.seq}`), cut));
      const where = `${join(dir, `tubeway.${newest.seq}`)}:${last.offset}: `;
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
      const p = join(d, `tubeway.${newest.seq}`);
      const b = readFileSync(p);
      b[mid] = b[mid]! ^ 0x20;
      writeFileSync(p, b);
    });
    const where = `${join(dir, `tubeway.${newest.seq}`)}:${hit.offset}: `;
    try {
      assert.ok(await outputHas(r, where), `expected "${where}<reason>" in:\n${r.output()}`);
      await intact(w, [hit.id!]);
    } finally {
      w.close();
      await kill9(r);
    }
  });

  test("a garbage tubeway.<N> file is reported and skipped", async () => {
    const seq = newestBinlog(pristine)!.seq + 1;
    let x = 12345;
    const junk = Buffer.alloc(3000, 0);
    for (let i = 0; i < junk.length; i++) junk[i] = (x = (x * 1103515245 + 12345) % 2 ** 31) & 0xff || 1;
    const { dir, r, w } = await damaged((d) => writeFileSync(join(d, `tubeway.${seq}`), junk));
    const where = `${join(dir, `tubeway.${seq}`)}:0: `;
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
