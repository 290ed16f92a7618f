// One node over PostgreSQL, on the runtime running the test: what a reply shows must be one
// state the jobs were in, as one beanstalkd 1.12 (and the memory engine) shows it.
// - A reservation whose TTR ended is ready in stats from the moment it ended (the counts
//   read the rows as the next sweep will leave them), so its timeout must be counted in
//   that same reply, not only once the sweep has committed.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME } from "../harness/paths.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";
import { bunPgServer, denoPgServer, type Running } from "../harness/targets.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { putId, sleep, stats, statsJob } from "../harness/wire_checks.ts";

const target = RUNTIME === "bun" ? bunPgServer : denoPgServer;

describe(`${target.name}: counts and releases as one state`, { skip: skipWithoutPostgres }, () => {
  let node: Running | undefined;
  const open: Wire[] = [];
  before(async () => (node = await target.start()));
  after(async () => {
    for (const w of open) w.close();
    await node?.stop();
  });

  it("stats counts a TTR's timeout in every reply that shows its job ready, 20 times", async () => {
    const [w, worker] = [await dial(node!.addr), await dial(node!.addr)];
    open.push(w, worker);
    const rounds = 20;
    const bad: string[] = [];
    for (let i = 0; i < rounds; i++) {
      const id = await putId(w, "t", 0, 0, 1);
      assert.match(await worker.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${id} 1\r\n`));
      const reservedAt = Date.now();
      await sleep(900);
      // stats and stats-job again and again across the end of the TTR, until a few replies after it:
      // reserved with i timeouts counted before, ready with i + 1 after, never a mix
      const wrong = new Set<string>();
      for (let readyReplies = 0; readyReplies < 5;) {
        assert.ok(Date.now() - reservedAt < 10_000, `round ${i}: the job never came back ready`);
        const s = await stats(w);
        const seen = [s.num("current-jobs-ready"), s.num("current-jobs-reserved"), s.num("job-timeouts")].join(" ");
        if (seen.startsWith("1 ")) readyReplies++;
        if (seen !== `1 0 ${i + 1}` && seen !== `0 1 ${i}`) wrong.add(`stats ready reserved timeouts: ${seen}`);
        const j = await statsJob(w, id);
        const job = `${j.str("state")} ${j.num("timeouts")}`;
        if (job !== "ready 1" && job !== "reserved 0") wrong.add(`stats-job state timeouts: ${job}`);
      }
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      if (wrong.size > 0) bad.push(`round ${i}: ${[...wrong].join(", ")}`);
    }
    assert.deepEqual(bad, [], `${bad.length} rounds out of ${rounds} showed a mix`);
  });
});
