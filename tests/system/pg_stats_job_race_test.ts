// Found by pg_three_nodes_test.ts and differential_test.ts on a loaded machine (one node
// over PostgreSQL, session "delayed job becomes ready after 1 s; release with delay 1"):
// beanstalkd 1.12 answered
//   stats-tube default -> current-jobs-ready: 1, current-jobs-delayed: 0
//   stats-job 1        -> state: ready, time-left: 0
// and the node answered the same stats-tube, then, on the same connection,
//   stats-job 1        -> state: delayed, time-left: 0 (normalised *)
// A turn's sweep skips rows another transaction holds (FOR UPDATE SKIP LOCKED): the node's
// other turn in flight, or another node's, moving the job to ready. stats-tube counts the
// job as the next sweep would leave it (ready), stats-job reads the row as committed
// (delayed), so one client sees the job ready, then delayed. Here a PostgreSQL connection of
// the test holds the row the way that other transaction does. Now stats-job shows the job
// as the counts do (core/pg/statements.ts: NOW_READY); a TTR that ended likewise.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import postgres from "postgres";
import { RUNTIME } from "../harness/paths.ts";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { bunServer, denoServer } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { putId, statsJob, statsTube } from "../harness/wire_checks.ts";

describe("one node over PostgreSQL: a job whose delay ended while another transaction holds it", {
  skip: skipWithoutPostgres,
}, () => {
  it("stats-job says ready where stats-tube counts it ready", async () => {
    const { pg, release } = await acquirePostgres();
    const schema = uniqueSchema("race");
    const node = await (RUNTIME === "bun" ? bunServer : denoServer).start(["--pg", pg.url, "--pg-schema", schema]);
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    const w = await dial(node.addr);
    try {
      const id = await putId(w, "d", 0, 1);
      await sql.begin(async (tx) => {
        await tx.unsafe(`select id from ${schema}.jobs where id = $1 for update`, [id]);
        await new Promise((r) => setTimeout(r, 1300));
        const tube = await statsTube(w, "default");
        assert.deepEqual([tube.num("current-jobs-ready"), tube.num("current-jobs-delayed")], [1, 0]);
        assert.equal((await statsJob(w, id)).str("state"), "ready", "stats-job after stats-tube, same connection");
      });
    } finally {
      w.close();
      await sql.end();
      await node.stop();
      release();
    }
  });

  it("a reservation whose TTR ended: ready, with the timeout counted, where stats-tube counts it ready", async () => {
    const { pg, release } = await acquirePostgres();
    const schema = uniqueSchema("race");
    const node = await (RUNTIME === "bun" ? bunServer : denoServer).start(["--pg", pg.url, "--pg-schema", schema]);
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    const w = await dial(node.addr);
    const worker = await dial(node.addr);
    try {
      const id = await putId(w, "t", 0, 0, 1);
      assert.match(await worker.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${id} 1\r\n`));
      await sql.begin(async (tx) => {
        await tx.unsafe(`select id from ${schema}.jobs where id = $1 for update`, [id]);
        await new Promise((r) => setTimeout(r, 1300));
        const tube = await statsTube(w, "default");
        assert.deepEqual([tube.num("current-jobs-ready"), tube.num("current-jobs-reserved")], [1, 0]);
        const job = await statsJob(w, id);
        assert.deepEqual([job.str("state"), job.num("timeouts"), job.num("time-left")], ["ready", 1, 0]);
      });
    } finally {
      w.close();
      worker.close();
      await sql.end();
      await node.stop();
      release();
    }
  });
});
