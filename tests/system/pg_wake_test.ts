// One node over PostgreSQL, one producer and one worker on it, one job at a time: the
// worker's reserve and the producer's put run in two transactions in flight at once
// (turn.ts), so the put's claims may run before the worker waits, and the worker's claim
// before the put commits. The worker must still get the job at once, whichever commits
// first (the bench's wake-1 row found it waiting forever).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { bunServer, denoServer, type Running } from "../harness/targets.ts";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";

for (const target of [denoServer, bunServer]) {
  describe(`${target.name}: a worker waiting on the node a put comes through`, { skip: skipWithoutPostgres }, () => {
    let node: Running | undefined;
    let release = () => {};
    const open: Wire[] = [];
    before(async () => {
      const got = await acquirePostgres();
      release = got.release;
      node = await target.start(["--pg", got.pg.url, "--pg-schema", uniqueSchema("wake")]);
    });
    after(async () => {
      for (const w of open) w.close();
      await node?.stop();
      release();
    });

    it("gets every job put while its reserve is in flight, 300 times", async () => {
      const [producer, worker] = [await dial(node!.addr), await dial(node!.addr)];
      open.push(producer, worker);
      const deadline = Date.now() + 60_000;
      for (let i = 0; i < 300 && Date.now() < deadline; i++) {
        worker.send("reserve-with-timeout 3\r\n");
        // the put goes out at once, at a varying point of the reserve's transaction
        if (i % 3 === 1) await new Promise((r) => setTimeout(r, 0));
        if (i % 3 === 2) await new Promise((r) => setTimeout(r, 1));
        producer.send(`put 0 0 60 1\r\nx\r\n`);
        const inserted = await producer.line();
        assert.match(inserted, /^INSERTED \d+$/);
        const t0 = Date.now();
        const reserved = await worker.line(5000);
        assert.match(reserved, /^RESERVED \d+ 1$/, `round ${i}`);
        assert.ok(Date.now() - t0 < 2000, `round ${i}: the job waited ${Date.now() - t0} ms for a waiting worker`);
        await worker.line(); // the body
        const id = /^RESERVED (\d+)/.exec(reserved)![1];
        worker.send(`delete ${id}\r\n`);
        assert.equal(await worker.line(), "DELETED");
      }
    });
  });
}
