// Several tubeway nodes over one PostgreSQL schema (--pg), as one queue: a job put on one
// node is reserved on another and deleted through a third; a worker blocked on one node is
// woken by a put committed through another (LISTEN/NOTIFY); pauses and releases on
// disconnect are seen everywhere; a node killed with reservations loses them to the
// others when its lease lapses. Nodes run on Deno and Bun at once.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { bunServer, denoServer, type Running } from "../harness/targets.ts";
import { type Postgres, skipWithoutPostgres, startPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { jobReply, putId, timed } from "../harness/wire_checks.ts";

describe("nodes over PostgreSQL", { skip: skipWithoutPostgres }, () => {
  let pg: Postgres | undefined;
  let nodes: Running[] = [];
  const open: Wire[] = [];
  const conn = async (i: number) => {
    const w = await dial(nodes[i]!.addr);
    open.push(w);
    return w;
  };
  let tubes = 0;
  const tube = () => `nodes.${++tubes}`;

  const schema = uniqueSchema("nodes");
  before(async () => {
    pg = await startPostgres();
    const flags = ["--pg", pg.url, "--pg-schema", schema, "--pg-lease", "1"];
    // started one after the other: concurrent first starts are the next test's subject
    nodes = [await denoServer.start(flags), await bunServer.start(flags), await denoServer.start(flags)];
  });
  after(async () => {
    for (const w of open) w.close();
    await Promise.all(nodes.map((n) => n.stop()));
    pg?.stop();
  });

  it("put on A, reserve on B, delete on C; owner-only delete across nodes", async () => {
    const [a, b, c] = [await conn(0), await conn(1), await conn(2)];
    const t = tube();
    for (const w of [a, b, c]) await w.cmd(`use ${t}`);
    await b.cmd(`watch ${t}`);
    const id = await putId(a, "across", 7);
    assert.equal(await c.cmd(`peek ${id}`), jobReply("FOUND", id, "across"));
    assert.equal(await b.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "across"));
    assert.match(await c.cmd(`stats-job ${id}`), /state: reserved/);
    assert.equal(await c.cmd(`delete ${id}`), "NOT_FOUND\r\n", "another node's reservation");
    assert.equal(await c.cmd(`release ${id} 1 0`), "NOT_FOUND\r\n");
    assert.equal(await b.cmd(`release ${id} 1 0`), "RELEASED\r\n");
    assert.equal(await c.cmd(`delete ${id}`), "DELETED\r\n", "a ready job, deleted through a third node");
    assert.equal(await a.cmd(`peek ${id}`), "NOT_FOUND\r\n");
  });

  it("ids from different nodes never collide, and priority then id decides across nodes", async () => {
    const [a, b, c] = [await conn(0), await conn(1), await conn(2)];
    const t = tube();
    for (const w of [a, b, c]) await w.cmd(`use ${t}`);
    const ids = [await putId(a, "a", 5), await putId(b, "b", 1), await putId(c, "c", 5), await putId(a, "a2", 3)];
    assert.equal(new Set(ids).size, 4);
    await c.cmd(`watch ${t}`);
    await c.cmd("ignore default");
    const got: number[] = [];
    for (let i = 0; i < 4; i++) got.push(Number(/^RESERVED (\d+)/.exec(await c.cmd("reserve-with-timeout 0"))![1]));
    const byPri = [ids[1]!, ids[3]!, ...[ids[0]!, ids[2]!].sort((x, y) => x - y)];
    assert.deepEqual(got, byPri);
    for (const id of got) assert.equal(await c.cmd(`delete ${id}`), "DELETED\r\n");
  });

  it("a reserve blocked on B is woken by a put committed through A, within milliseconds", async () => {
    const [a, b] = [await conn(0), await conn(1)];
    const t = tube();
    await a.cmd(`use ${t}`);
    await b.cmd(`watch ${t}`);
    await b.cmd("ignore default");
    const wakes: number[] = [];
    for (let i = 0; i < 20; i++) {
      b.send("reserve-with-timeout 5\r\n");
      assert.ok(await b.silentFor(20), "nothing to reserve yet: it waits");
      const t0 = performance.now();
      const id = await putId(a, `wake ${i}`);
      const r = await b.reply();
      wakes.push(performance.now() - t0);
      assert.equal(r, jobReply("RESERVED", id, `wake ${i}`));
      assert.equal(await b.cmd(`delete ${id}`), "DELETED\r\n");
    }
    wakes.sort((x, y) => x - y);
    const p50 = wakes[10]!, max = wakes[19]!;
    console.log(
      `put on A -> RESERVED on B (including the put's own commit): p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms`,
    );
    assert.ok(p50 < 100, `p50 ${p50} ms`);
  });

  it("pause-tube on A holds reserves on B; its end (and pause-tube 0) is seen by B's waiting worker", async () => {
    const [a, b] = [await conn(0), await conn(1)];
    const t = tube();
    await a.cmd(`use ${t}`);
    await b.cmd(`watch ${t}`);
    await b.cmd("ignore default");
    const id = await putId(a, "paused");
    assert.equal(await a.cmd(`pause-tube ${t} 1`), "PAUSED\r\n");
    assert.match(await b.cmd(`stats-tube ${t}`), /\npause: 1\n/);
    const [r, ms] = await timed(b.cmd("reserve-with-timeout 5"));
    assert.equal(r, jobReply("RESERVED", id, "paused"));
    assert.ok(ms >= 700 && ms < 3000, `reserved after ${ms} ms`);
    assert.equal(await b.cmd(`release ${id} 0 0`), "RELEASED\r\n");
    assert.equal(await a.cmd(`pause-tube ${t} 100`), "PAUSED\r\n");
    b.send("reserve-with-timeout 5\r\n");
    assert.ok(await b.silentFor(100), "paused: B waits");
    assert.equal(await a.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
    assert.equal(await b.reply(), jobReply("RESERVED", id, "paused"));
    assert.equal(await b.cmd(`delete ${id}`), "DELETED\r\n");
  });

  it("delays and TTRs run on the database's clock: a job delayed through A becomes ready on C", async () => {
    const [a, c] = [await conn(0), await conn(2)];
    const t = tube();
    await a.cmd(`use ${t}`);
    await c.cmd(`watch ${t}`);
    await c.cmd("ignore default");
    const id = await putId(a, "later", 0, 1, 1);
    const [r, ms] = await timed(c.cmd("reserve-with-timeout 5"));
    assert.equal(r, jobReply("RESERVED", id, "later"));
    assert.ok(ms >= 700 && ms < 3000, `delay 1: reserved after ${ms} ms`);
    // ttr 1: the reservation ends and the job is ready again, on any node
    const [r2, ms2] = await timed(c.cmd("reserve-with-timeout 5"));
    assert.equal(r2, "DEADLINE_SOON\r\n");
    assert.ok(ms2 < 1500, `DEADLINE_SOON after ${ms2} ms`);
    const [r3] = await timed(a.cmd(`watch ${t}`).then(() => a.cmd("reserve-with-timeout 5")));
    assert.equal(r3, jobReply("RESERVED", id, "later"));
    assert.match(await c.cmd(`stats-job ${id}`), /\ntimeouts: 1\n/);
    assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
  });

  it("a client that disconnects from B gives its reservations back at once, to a worker waiting on A", async () => {
    const [a, b] = [await conn(0), await conn(1)];
    const t = tube();
    await a.cmd(`use ${t}`);
    await b.cmd(`watch ${t}`);
    const id = await putId(a, "held");
    assert.equal(await b.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "held"));
    await a.cmd(`watch ${t}`);
    await a.cmd("ignore default");
    a.send("reserve-with-timeout 5\r\n");
    assert.ok(await a.silentFor(50));
    b.close();
    assert.equal(await a.reply(), jobReply("RESERVED", id, "held"));
    assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
  });

  it("a node stopped with SIGTERM gives its reservations back at once, not when its lease would lapse", async () => {
    const d = await bunServer.start(["--pg", pg!.url, "--pg-schema", schema, "--pg-lease", "60"]);
    try {
      const [a, w] = [await conn(0), await dial(d.addr)];
      open.push(w);
      const t = tube();
      await a.cmd(`use ${t}`);
      await w.cmd(`watch ${t}`);
      const id = await putId(a, "handed back", 0, 0, 600);
      assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "handed back"));
      await d.stop();
      await a.cmd(`watch ${t}`);
      await a.cmd("ignore default");
      const [r, ms] = await timed(a.cmd("reserve-with-timeout 10", 12000));
      assert.equal(r, jobReply("RESERVED", id, "handed back"));
      assert.ok(ms < 3000, `released after ${ms} ms (its lease 60 s, TTR 600 s)`);
      assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
    } finally {
      await d.stop();
    }
  });

  it("a node killed with reservations loses them when its lease lapses (--pg-lease 1)", async () => {
    const [a, b] = [await conn(0), await conn(1)];
    const t = tube();
    await a.cmd(`use ${t}`);
    await b.cmd(`watch ${t}`);
    const id = await putId(a, "orphan", 0, 0, 600);
    assert.equal(await b.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "orphan"));
    nodes[1]!.child!.kill("SIGKILL");
    await a.cmd(`watch ${t}`);
    await a.cmd("ignore default");
    const [r, ms] = await timed(a.cmd("reserve-with-timeout 10", 12000));
    assert.equal(r, jobReply("RESERVED", id, "orphan"));
    assert.ok(ms < 4000, `released after ${ms} ms (lease 1 s, TTR 600 s)`);
    assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
  });
});

describe("a node whose clock is an hour ahead", { skip: skipWithoutPostgres }, () => {
  it("agrees with the others on delays and TTRs: they run on the database's clock", async () => {
    const pg = await startPostgres();
    const schema = uniqueSchema("skew");
    const { listen, parseConfig, systemClock } = await import("../../mod.ts");
    const { openPgService } = await import("../../front/open_pg.ts");
    const HOUR = 3_600_000;
    const ahead = {
      ...systemClock,
      now: () => systemClock.now() + HOUR,
      wallMs: () => systemClock.wallMs() + HOUR,
    };
    const parsed = parseConfig(["--pg", pg.url, "--pg-schema", schema]);
    assert.equal(parsed.kind, "run");
    const config = (parsed as { config: import("../../mod.ts").Config }).config;
    const skewed = await openPgService({ ...config, pg: config.pg! }, { clock: ahead, log: () => {}, error: () => {} });
    const l = await listen(skewed.service, { host: "127.0.0.1", port: 0 });
    let other: Running | undefined;
    try {
      other = await denoServer.start(["--pg", pg.url, "--pg-schema", schema]);
      const s = await dial({ host: "127.0.0.1", port: (l.address as { port: number }).port });
      const o = await dial(other.addr);
      await s.cmd("use skew");
      await o.cmd("watch skew");
      await o.cmd("ignore default");
      const id = await putId(s, "in a second", 0, 1, 3);
      const left = (w: Wire) => w.cmd(`stats-job ${id}`).then((r) => Number(/time-left: (\d+)/.exec(r)![1]));
      assert.deepEqual([await left(s), await left(o)], [0, 0], "delay 1 s: under a second left, on both nodes");
      const [r, ms] = await timed(o.cmd("reserve-with-timeout 5"));
      assert.equal(r, jobReply("RESERVED", id, "in a second"));
      assert.ok(ms >= 700 && ms < 2500, `ready after ${ms} ms`);
      assert.match(await s.cmd(`stats-job ${id}`), /\ntime-left: [12]\n/, "ttr 3: the skewed node sees the same TTR");
      assert.equal(await o.cmd(`delete ${id}`), "DELETED\r\n");
      s.close();
      o.close();
    } finally {
      l.close();
      skewed.close();
      await skewed.closed?.();
      await other?.stop();
      pg.stop();
    }
  });
});

describe("nodes starting at once on an empty database", { skip: skipWithoutPostgres }, () => {
  it("create the schema once and serve the same queue", async () => {
    const pg = await startPostgres();
    const flags = ["--pg", pg.url, "--pg-schema", uniqueSchema("race")];
    let nodes: Running[] = [];
    try {
      nodes = await Promise.all([denoServer.start(flags), bunServer.start(flags), denoServer.start(flags)]);
      const ws = await Promise.all(nodes.map((n) => dial(n.addr)));
      const id = await putId(ws[0]!, "one queue");
      for (const w of ws) assert.equal(await w.cmd(`peek ${id}`), jobReply("FOUND", id, "one queue"));
      for (const w of ws) w.close();
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
      pg.stop();
    }
  });
});
