// One node over PostgreSQL, on the runtime running the test: what a reply shows must be one
// state the jobs were in, as one beanstalkd 1.12 (and the memory engine) shows it.
// - A reservation whose TTR ended is ready in stats from the moment it ended (the counts
//   read the rows as the next sweep will leave them), so its timeout must be counted in
//   that same reply, not only once the sweep has committed.
// - A client that closes gives back what it held: a command its node reads after the close
//   sees the jobs ready, even when the release is in a transaction still in flight beside
//   the one the command would run in.
// - A reservation whose TTR ended before its client closed timed out: the close does not
//   take the timeout back, though no sweep had moved the job yet.
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

  it("a client that closes after its reservation's TTR ended leaves the timeout counted (stats, stats-job)", async () => {
    // a lease of 60 s: renewed every 20 s, so no turn of this node (and no sweep) runs unasked meanwhile
    const n = await target.start(["--pg-lease", "60"]);
    try {
      const w = await dial(n.addr);
      open.push(w);
      for (let i = 0; i < 3; i++) {
        const a = await dial(n.addr);
        const id = await putId(w, "t", 0, 0, 1);
        assert.match(await a.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${id} 1\r\n`));
        await sleep(1300); // its TTR ended; nothing has swept it
        assert.equal((await stats(w)).num("job-timeouts"), i + 1, `round ${i}: before the close`);
        a.close();
        await sleep(50);
        const j = await statsJob(w, id);
        assert.equal(`${j.str("state")} ${j.num("timeouts")}`, "ready 1", `round ${i}: stats-job after the close`);
        assert.equal((await stats(w)).num("job-timeouts"), i + 1, `round ${i}: stats after the close`);
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }
    } finally {
      await n.stop();
    }
  });

  const closes = 200;
  /**
   * `closes` times (within 90 s): a client on the node reserves a job put on `b` and
   * closes; `seesReady` asks at once on `b`. How many times it did not see the job ready,
   * out of how many.
   */
  async function afterCloses(tube: string, seesReady: (b: Wire, id: number) => Promise<boolean>) {
    const b = await dial(node!.addr);
    open.push(b);
    assert.equal(await b.cmd(`use ${tube}`), `USING ${tube}\r\n`);
    const deadline = Date.now() + 90_000;
    let missed = 0, i = 0;
    for (; i < closes && Date.now() < deadline; i++) {
      const a = await dial(node!.addr);
      await a.cmd(`watch ${tube}`);
      await a.cmd("ignore default");
      const id = await putId(b, "c");
      assert.match(await a.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${id} 1\r\n`));
      a.close();
      if (!(await seesReady(b, id))) missed++;
      // the job comes back in any case: delete it (waiting for it, if it did not yet)
      const closedAt = Date.now();
      while ((await b.cmd(`delete ${id}`)) !== "DELETED\r\n") {
        assert.ok(Date.now() - closedAt < 10_000, `job ${id} of a closed client was never released`);
        await sleep(5);
      }
    }
    return [missed, i];
  }

  it(`a closed client's reservation is ready for the next command on its node (peek-ready), ${closes} times`, async () => {
    const [missed, of] = await afterCloses(
      "closes",
      async (b, id) => (await b.cmd("peek-ready")) === `FOUND ${id} 1\r\nc\r\n`,
    );
    assert.equal(missed, 0, `peek-ready right after the close missed the job ${missed} times out of ${of}`);
  });

  it(`a closed client's reservation is no longer counted reserved by the next stats on its node, ${closes} times`, async () => {
    const [missed, of] = await afterCloses("closes-stats", async (b) => {
      const s = await stats(b);
      return s.num("current-jobs-reserved") === 0 && s.num("current-jobs-ready") === 1;
    });
    assert.equal(missed, 0, `stats right after the close counted the job reserved ${missed} times out of ${of}`);
  });
});
