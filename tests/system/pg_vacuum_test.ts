// A node vacuums the jobs table itself after many deletes (core/pg/vacuum.ts):
// autovacuum looks at a table once a minute by default, and a queue whose jobs are
// deleted as fast as they come fills its claim index with dead entries meanwhile
// (docs/pg.md#measured). 21,000 puts and deletes, pipelined on 50 connections; then
// the table's vacuum_count (manual vacuums) in pg_stat_user_tables moves.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bunServer, denoServer } from "../harness/targets.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";
import { pgNode } from "../harness/pg_node.ts";
import { dial } from "../harness/wire.ts";

const N = 21_000;

for (const target of [denoServer, bunServer]) {
  describe(`${target.name}: the jobs table after many deletes`, { skip: skipWithoutPostgres }, () => {
    const h = pgNode(target, "vacuum");

    it(`is vacuumed by the node after ${N} deletes`, { timeout: 180_000 }, async () => {
      const vacuums = async () =>
        Number(
          (await h.sql!.query(
            "select vacuum_count from pg_stat_user_tables where schemaname = $1 and relname = 'jobs'",
            [h.schema],
          ))[0]?.vacuum_count ?? 0,
        );
      const before = await vacuums();
      // 50 connections (one command of each runs per turn), each pipelining its share
      const per = N / 50;
      await Promise.all(Array.from({ length: 50 }, async () => {
        const w = await dial(h.node!.addr);
        h.open.push(w);
        w.send("put 0 0 60 1\r\nx\r\n".repeat(per));
        const ids: string[] = [];
        for (let i = 0; i < per; i++) {
          const line = await w.line(60_000);
          const m = /^INSERTED (\d+)$/.exec(line);
          assert.ok(
            m,
            `put ${i + 1} of ${per} answered ${line}; the node printed (its end):\n${h.node!.output().slice(-3000)}`,
          );
          ids.push(m[1]!);
        }
        w.send(ids.map((id) => `delete ${id}\r\n`).join(""));
        for (let i = 0; i < per; i++) {
          const line = await w.line(60_000);
          assert.equal(
            line,
            "DELETED",
            `delete ${i + 1} of ${per}; the node printed (its end):\n${h.node!.output().slice(-3000)}`,
          );
        }
      }));
      const deadline = Date.now() + 30_000;
      while ((await vacuums()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.ok((await vacuums()) > before, "the node vacuumed the jobs table");
    });
  });
}
