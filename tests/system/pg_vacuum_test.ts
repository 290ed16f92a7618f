// A node vacuums the jobs table itself after many deletes (core/pg/vacuum.ts):
// autovacuum looks at a table once a minute by default, and a queue whose jobs are
// deleted as fast as they come fills its claim index with dead entries meanwhile
// (docs/pg.md#measured). 21,000 puts and deletes, pipelined on 50 connections; then
// the table's vacuum_count (manual vacuums) in pg_stat_user_tables moves.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { bunServer, denoServer, type Running } from "../harness/targets.ts";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { pgClient } from "../../adapters/pg_client.ts";
import type { SqlClient } from "../../core/pg/sql.ts";

const N = 21_000;

for (const target of [denoServer, bunServer]) {
  describe(`${target.name}: the jobs table after many deletes`, { skip: skipWithoutPostgres }, () => {
    let node: Running | undefined;
    let sql: SqlClient | undefined;
    let release = () => {};
    const schema = uniqueSchema("vacuum");
    const open: Wire[] = [];
    before(async () => {
      const got = await acquirePostgres();
      release = got.release;
      sql = pgClient(got.pg.url);
      node = await target.start(["--pg", got.pg.url, "--pg-schema", schema]);
    });
    after(async () => {
      for (const w of open) w.close();
      await node?.stop();
      await sql?.close();
      release();
    });

    it(`is vacuumed by the node after ${N} deletes`, { timeout: 180_000 }, async () => {
      const vacuums = async () =>
        Number(
          (await sql!.query(
            "select vacuum_count from pg_stat_user_tables where schemaname = $1 and relname = 'jobs'",
            [schema],
          ))[0]?.vacuum_count ?? 0,
        );
      const before = await vacuums();
      // 50 connections (one command of each runs per turn), each pipelining its share
      const per = N / 50;
      await Promise.all(Array.from({ length: 50 }, async () => {
        const w = await dial(node!.addr);
        open.push(w);
        w.send("put 0 0 60 1\r\nx\r\n".repeat(per));
        const ids: string[] = [];
        for (let i = 0; i < per; i++) ids.push(/^INSERTED (\d+)$/.exec(await w.line(60_000))![1]!);
        w.send(ids.map((id) => `delete ${id}\r\n`).join(""));
        for (let i = 0; i < per; i++) assert.equal(await w.line(60_000), "DELETED");
      }));
      const deadline = Date.now() + 30_000;
      while ((await vacuums()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.ok((await vacuums()) > before, "the node vacuumed the jobs table");
    });
  });
}
