// What a turn of a node over PostgreSQL carries, on the runtime running the test:
// - a worker's delete and the reserve it sent behind it (in one write, as the bench's
//   workers and pipelining clients do) go in one transaction, their replies in order;
// - a node alone sends no NOTIFY (nobody would hear it, and each costs every commit a
//   lock on the whole database); once another node is there, its turns notify again and
//   that node's waiting workers are woken by what it puts;
// - a put to a tube a worker of the same node waits on is handed to that worker in the
//   put's own statement (the job inserted reserved): nothing is readied, so nothing is
//   notified; a paused tube's job is not handed, and the worker gets it when the pause ends;
// - two puts of one turn, each to a different tube one waiting worker watches: the worker
//   is handed one of them, and the other stays ready (a worker is handed one job at most).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import postgres from "postgres";
import { RUNTIME } from "../harness/paths.ts";
import { bunServer, denoServer, freePort, type Running } from "../harness/targets.ts";
import { acquirePostgres, type Postgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { Scrape } from "../harness/prometheus.ts";
import { insertedId, putId, sleep } from "../harness/wire_checks.ts";

const target = RUNTIME === "bun" ? bunServer : denoServer;

describe(`${target.name} --pg: what a turn carries`, { skip: skipWithoutPostgres }, () => {
  let pg: Postgres | undefined;
  let release = () => {};
  const nodes: Running[] = [];
  const open: Wire[] = [];
  before(async () => {
    const got = await acquirePostgres();
    pg = got.pg;
    release = got.release;
  });
  after(async () => {
    for (const w of open) w.close();
    for (const n of nodes) await n.stop();
    release();
  });

  async function node(schema: string, flags: string[] = []): Promise<Running> {
    const n = await target.start(["--pg", pg!.url, "--pg-schema", schema, ...flags]);
    nodes.push(n);
    return n;
  }

  async function wire(n: Running): Promise<Wire> {
    const w = await dial(n.addr);
    open.push(w);
    return w;
  }

  /** Run `body` with every NOTIFY payload on the schema's channel gathered in `heard`. */
  async function listening(schema: string, body: (heard: string[]) => Promise<void>): Promise<void> {
    const heard: string[] = [];
    const listener = postgres(pg!.url, { max: 1, onnotice: () => {} });
    try {
      await listener.listen(`tubeway.${schema}`, (payload) => heard.push(payload));
      await body(heard);
    } finally {
      await listener.end({ timeout: 1 });
    }
  }

  /** Until `n` lease renewals said "here I am" (each node's first turn renews its lease). */
  async function untilSaid(heard: string[], n: number): Promise<void> {
    const t0 = Date.now();
    while (heard.filter((p) => / h$/.test(p)).length < n) {
      assert.ok(Date.now() - t0 < 5000, `${n} nodes never said they are there`);
      await sleep(10);
    }
  }

  it("a worker's delete and the reserve behind it: one transaction, the replies in order", async () => {
    const port = await freePort();
    const n = await node(uniqueSchema("pairs"), ["--http", `127.0.0.1:${port}`]);
    const transactions = async () => {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`);
      return new Scrape(await r.text()).value("tubeway_pg_transactions_total");
    };
    const [producer, worker] = [await wire(n), await wire(n)];
    const jobs = 50;
    const ids: number[] = [];
    for (let i = 0; i < jobs; i++) ids.push(await putId(producer, `j${i}`));
    assert.equal(await worker.cmd("reserve"), `RESERVED ${ids[0]} 2\r\nj0\r\n`);
    const before = await transactions();
    for (let i = 1; i < jobs; i++) {
      worker.send(`delete ${ids[i - 1]}\r\nreserve\r\n`);
      assert.equal(await worker.reply(), "DELETED\r\n");
      assert.equal(await worker.reply(), `RESERVED ${ids[i]} ${`j${i}`.length}\r\nj${i}\r\n`);
    }
    const pairs = jobs - 1;
    const used = (await transactions()) - before;
    // one per pair, and the node's own (a lease renewal) now and then; two per pair when each waits for a turn
    assert.ok(used < pairs * 1.5, `${used} transactions for ${pairs} deletes, each with its reserve behind it`);
    worker.send(`delete ${ids[jobs - 1]}\r\nreserve-with-timeout 0\r\n`);
    assert.equal(await worker.reply(), "DELETED\r\n");
    assert.equal(await worker.reply(), "TIMED_OUT\r\n");
  });

  it("a node alone notifies no one; beside another it does, and wakes that node's workers", async () => {
    const schema = uniqueSchema("alone");
    await listening(schema, async (heard) => {
      const a = await node(schema);
      const producer = await wire(a);
      for (let i = 0; i < 20; i++) await putId(producer, `alone ${i}`);
      await sleep(200);
      const readied = () => heard.filter((p) => / [rd]( |$)/.test(p));
      assert.deepEqual(readied(), [], `a node alone sent ${readied().length} NOTIFYs of ready jobs`);
      assert.ok(heard.some((p) => / h$/.test(p)), `its lease renewal says it is there: ${JSON.stringify(heard)}`);

      const b = await node(schema);
      const worker = await wire(b);
      // b's first turn says it is there; a's next turns notify
      await untilSaid(heard, 2);
      await worker.cmd("watch woken");
      await worker.cmd("ignore default");
      for (let i = 0; i < 20; i++) {
        worker.send("reserve-with-timeout 5\r\n");
        await sleep(20); // the worker waits on b before the put on a
        assert.equal(await producer.cmd("use woken"), "USING woken\r\n");
        const id = await putId(producer, `w${i}`);
        const t0 = Date.now();
        assert.match(await worker.reply(6000), new RegExp(`^RESERVED ${id} `), `round ${i}`);
        assert.ok(Date.now() - t0 < 1000, `round ${i}: a job put on a reached b's worker after ${Date.now() - t0} ms`);
        assert.equal(await worker.cmd(`delete ${id}`), "DELETED\r\n");
      }
      assert.ok(readied().length > 0, "beside another node, a's turns notify");
    });
  });

  it("a put for a worker waiting on the same node is handed to it: nothing readied, nothing notified", async () => {
    const schema = uniqueSchema("handed");
    await listening(schema, async (heard) => {
      const a = await node(schema);
      await node(schema); // another node listens: a's turns that ready jobs notify it
      await untilSaid(heard, 2);
      const [producer, worker] = [await wire(a), await wire(a)];
      assert.equal(await producer.cmd("use handed"), "USING handed\r\n");
      assert.equal(await worker.cmd("watch handed"), "WATCHING 2\r\n");
      const notified = () => heard.filter((p) => / r .*handed/.test(p)).length;
      const before = notified();
      for (let i = 0; i < 20; i++) {
        worker.send("reserve-with-timeout 5\r\n");
        await sleep(20); // the worker waits before the put
        const id = await putId(producer, `h${i}`);
        assert.equal(await worker.reply(), `RESERVED ${id} ${`h${i}`.length}\r\nh${i}\r\n`, `round ${i}`);
        assert.match(await worker.cmd(`stats-job ${id}`), /\nreserves: 1\n/);
        assert.equal(await worker.cmd(`delete ${id}`), "DELETED\r\n");
      }
      await sleep(200);
      assert.equal(
        notified() - before,
        0,
        `${notified() - before} NOTIFYs of jobs readied in a tube a worker here waited on`,
      );

      // paused: not handed; the worker gets the job once the pause ends
      worker.send("reserve-with-timeout 10\r\n");
      await sleep(20);
      assert.equal(await producer.cmd("pause-tube handed 1"), "PAUSED\r\n");
      const t0 = Date.now();
      const id = await putId(producer, "after the pause");
      assert.equal(await worker.reply(5000), `RESERVED ${id} 15\r\nafter the pause\r\n`);
      assert.ok(Date.now() - t0 >= 800, `reserved ${Date.now() - t0} ms after the put, in a tube paused for 1 s`);
      assert.equal(await worker.cmd(`delete ${id}`), "DELETED\r\n");
    });
  });

  it("two puts of one turn to two tubes one waiting worker watches: it is handed one, the other stays ready", async () => {
    const schema = uniqueSchema("handed2");
    const a = await node(schema);
    const [worker, p0, p1, p2, look] = [await wire(a), await wire(a), await wire(a), await wire(a), await wire(a)];
    assert.equal(await worker.cmd("watch t-a"), "WATCHING 2\r\n");
    assert.equal(await worker.cmd("watch t-b"), "WATCHING 3\r\n");
    assert.equal(await worker.cmd("ignore default"), "WATCHING 2\r\n");
    for (const [w, tube] of [[p0, "other"], [p1, "t-a"], [p2, "t-b"]] as const) {
      assert.equal(await w.cmd(`use ${tube}`), `USING ${tube}\r\n`);
    }
    worker.send("reserve-with-timeout 10\r\n");
    await sleep(50); // the worker waits (its claim found nothing) before the puts
    const sql = postgres(pg!.url, { max: 1, onnotice: () => {} });
    try {
      // Every put counts its tube's jobs in tube_counts: with that table locked, the turn
      // of p0's put stays in flight, and the puts to t-a and t-b gather behind it, for
      // the next turn, which hands its puts to waiting workers.
      await sql.begin(async (tx) => {
        await tx.unsafe(`lock table "${schema}".tube_counts in exclusive mode`);
        p0.send("put 0 0 60 1\r\n0\r\n");
        await sleep(100);
        p1.send("put 0 0 60 1\r\na\r\n");
        p2.send("put 0 0 60 1\r\nb\r\n");
        // the turn of p0's put is held, so the two puts are in the same turn after it
        assert.ok(await p0.silentFor(200), `p0's put was answered under the lock: ${JSON.stringify(p0.pending)}`);
      });
    } finally {
      await sql.end({ timeout: 1 });
    }
    insertedId(await p0.reply(5000), "the put held in flight");
    const [idA, idB] = [insertedId(await p1.reply(5000), "put to t-a"), insertedId(await p2.reply(5000), "put to t-b")];
    const got = await worker.reply(5000);
    const m = /^RESERVED (\d+) 1\r\n([ab])\r\n$/.exec(got);
    assert.ok(m, `the worker was handed a job: ${JSON.stringify(got)}`);
    const [handed, other] = Number(m[1]) === idA ? [idA, idB] : [idB, idA];
    assert.ok(handed === Number(m[1]), `the worker got ${m[1]}, one of the two puts (${idA}, ${idB})`);
    assert.match(await look.cmd(`stats-job ${handed}`), /\nstate: reserved\n/);
    assert.match(await look.cmd(`stats-job ${other}`), /\nstate: ready\n/, "the job not handed stays ready");
    // nothing more came to the worker; it reserves the other job next
    assert.equal(await worker.cmd(`delete ${handed}`), "DELETED\r\n");
    const next = await worker.cmd("reserve-with-timeout 0");
    assert.match(next, new RegExp(`^RESERVED ${other} 1\r\n[ab]\r\n$`), "the other job, reserved next");
    assert.equal(await worker.cmd(`delete ${other}`), "DELETED\r\n");
  });
});
