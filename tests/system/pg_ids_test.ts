// A node takes a put's id from a block of ids it holds (core/pg/ids.ts) and asks the
// database for the next block when half of this one is used. When that answer is late
// (here: the sequence held by another transaction's ALTER SEQUENCE, which nextval waits
// behind), puts read after the block ran out wait for the next block, as they would
// wait for a database that is slow to commit; they are not refused with INTERNAL_ERROR.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bunServer, denoServer } from "../harness/targets.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";
import { pgNode } from "../harness/pg_node.ts";
import { dial } from "../harness/wire.ts";
import { ID_BLOCK } from "../../core/pg/schema.ts";

/** More puts than the block a node starts with holds. */
const N = ID_BLOCK + ID_BLOCK / 5;
const CONNS = 20;

for (const target of [denoServer, bunServer]) {
  describe(`${target.name}: puts while the next block of ids is late`, { skip: skipWithoutPostgres }, () => {
    const h = pgNode(target, "ids");

    it(`wait for it: ${N} puts, every one INSERTED once the block comes, ids unique`, { timeout: 60_000 }, async () => {
      let unlock = () => {};
      const unlocked = new Promise<void>((r) => (unlock = r));
      let locked = () => {};
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = h.sql!.transaction(async (tx) => {
        await tx.query(`alter sequence "${h.schema}".job_ids increment by ${ID_BLOCK}`);
        locked();
        await unlocked;
      });
      await isLocked;
      const per = N / CONNS;
      const ws = await Promise.all(Array.from({ length: CONNS }, () => dial(h.node!.addr)));
      h.open.push(...ws);
      const answered: string[][] = ws.map(() => []);
      const reading = ws.map(async (w, k) => {
        w.send("put 0 0 60 1\r\nx\r\n".repeat(per));
        for (let i = 0; i < per; i++) {
          const line = await w.line(30_000);
          assert.match(
            line,
            /^INSERTED \d+$/,
            `put ${i + 1} on connection ${k}; the node printed (its end):\n${h.node!.output().slice(-3000)}`,
          );
          answered[k]!.push(line);
        }
      });
      const all = Promise.all(reading);
      let failed = false;
      all.catch(() => (failed = true));
      try {
        // the block the node holds is used up and stored; the puts read after it wait
        const stored = async () => Number((await h.sql!.query(`select count(*) as n from "${h.schema}".jobs`))[0]!.n);
        const deadline = Date.now() + 20_000;
        while (!failed && (await stored()) < ID_BLOCK && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
        }
        await new Promise((r) => setTimeout(r, 300));
        if (!failed) assert.equal(await stored(), ID_BLOCK, "stored while the next block could not be taken");
      } finally {
        unlock();
        await holder;
      }
      await all;
      const ids = answered.flat().map((l) => Number(l.split(" ")[1]));
      assert.equal(new Set(ids).size, N, "every id once");
      const stats = await ws[0]!.cmd("stats");
      assert.match(stats, new RegExp(`\\ncurrent-jobs-ready: ${N}\\n`));
      assert.match(await ws[0]!.cmd("peek-ready"), /^FOUND \d+ 1\r\n/);
    });
  });
}
