// No lost job, no job held twice, across nodes over PostgreSQL under load: producers put
// through node A while workers on nodes B and C reserve and delete; node B is killed with
// SIGKILL half-way. Every acknowledged put is deleted exactly once (counted by id); a
// worker's delete of the job it holds always succeeds (exclusivity); only jobs that B
// held when it died are delivered twice (its lease lapsed, the job came back), and only
// a delete B committed but could not answer before dying goes unacknowledged.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bunServer, denoServer, type Running } from "../harness/targets.ts";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";

const JOBS = 3000;
const PRODUCERS = 4;
const WORKERS_PER_NODE = 4;

interface Seen {
  /** id -> nodes that reserved it, in order. */
  deliveries: Map<number, string[]>;
  deleted: Map<number, number>;
  /** A worker's delete of a job it held answered something else than DELETED. */
  badDeletes: string[];
}

/** Reserve and delete until the queue stays empty for a while or the connection dies. */
async function worker(w: Wire, node: string, tube: string, seen: Seen, done: () => boolean): Promise<void> {
  try {
    await w.cmd(`watch ${tube}`);
    await w.cmd("ignore default");
    for (;;) {
      const r = await w.cmd("reserve-with-timeout 1", 15_000);
      if (r === "TIMED_OUT\r\n") {
        if (done()) return;
        continue;
      }
      const m = /^RESERVED (\d+) /.exec(r);
      assert.ok(m, `${node}: ${JSON.stringify(r)}`);
      const id = Number(m[1]);
      seen.deliveries.set(id, [...(seen.deliveries.get(id) ?? []), node]);
      const d = await w.cmd(`delete ${id}`, 15_000);
      if (d === "DELETED\r\n") seen.deleted.set(id, (seen.deleted.get(id) ?? 0) + 1);
      else seen.badDeletes.push(`${node} ${id}: ${JSON.stringify(d)}`);
    }
  } catch (e) {
    if (node !== "B") throw e; // B's connections die with B
  }
}

describe("nodes over PostgreSQL under load", { skip: skipWithoutPostgres }, () => {
  it(
    `${JOBS} jobs through A, workers on B and C, B killed half-way: each job deleted once`,
    { timeout: 120_000 },
    async () => {
      const { pg, release } = await acquirePostgres();
      const flags = ["--pg", pg.url, "--pg-schema", uniqueSchema("load"), "--pg-lease", "1"];
      let nodes: Running[] = [];
      const conns: Wire[] = [];
      try {
        nodes = [await denoServer.start(flags), await bunServer.start(flags), await bunServer.start(flags)];
        const open = async (i: number) => {
          const w = await dial(nodes[i]!.addr);
          conns.push(w);
          return w;
        };
        const tube = "load";
        const seen: Seen = { deliveries: new Map(), deleted: new Map(), badDeletes: [] };
        const put = new Set<number>();
        let producing = true;
        const producers = Array.from({ length: PRODUCERS }, async (_, p) => {
          const w = await open(0);
          await w.cmd(`use ${tube}`);
          for (let i = p; i < JOBS; i += PRODUCERS) {
            const r = await w.put(`job ${i}`, i % 7, 0, 60);
            const m = /^INSERTED (\d+)\r\n$/.exec(r);
            assert.ok(m, r);
            put.add(Number(m[1]));
          }
        });
        const done = () => !producing;
        const workers: Promise<void>[] = [];
        for (const [i, node] of [[1, "B"], [2, "C"]] as const) {
          for (let k = 0; k < WORKERS_PER_NODE; k++) {
            workers.push(open(i).then((w) => worker(w, node, tube, seen, done)));
          }
        }
        // Kill B once a third of the jobs are deleted, while its workers hold jobs.
        while (seen.deleted.size < JOBS / 3) await new Promise((r) => setTimeout(r, 20));
        const heldByB = [...seen.deliveries].filter(([id, by]) => by.at(-1) === "B" && !seen.deleted.has(id)).length;
        // and one job surely held by B: its client reserves it and never deletes it
        const holder = await open(1);
        await holder.cmd(`watch ${tube}`);
        const held = Number(/^RESERVED (\d+) /.exec(await holder.cmd("reserve-with-timeout 5"))![1]);
        nodes[1]!.child!.kill("SIGKILL");
        await Promise.all(producers);
        producing = false;
        await Promise.all(workers);

        // A delete B committed but could not answer before it died took its job away
        // unacknowledged: such a job must be gone, and B must have been its last holder.
        const c = await open(2);
        const unacked: number[] = [];
        for (const id of put) {
          if (seen.deleted.has(id)) continue;
          const lastB = seen.deliveries.get(id)?.at(-1) === "B";
          if (lastB && (await c.cmd(`peek ${id}`)) === "NOT_FOUND\r\n") unacked.push(id);
        }
        const missing = [...put].filter((id) => seen.deleted.get(id) !== 1 && !unacked.includes(id));
        for (const id of missing) {
          console.log(`job ${id}: delivered to ${seen.deliveries.get(id)}, deleted ${seen.deleted.get(id) ?? 0} times`);
          console.log(await c.cmd(`stats-job ${id}`));
        }
        assert.equal(put.size, JOBS, "every put acknowledged with its own id");
        assert.deepEqual(missing, [], "every acknowledged job deleted exactly once");
        assert.ok(unacked.length <= WORKERS_PER_NODE, `${unacked.length} deletes lost with B`);
        assert.deepEqual(seen.deliveries.get(held), ["C"], `job ${held}, held by B when it died, went to C`);
        assert.deepEqual(seen.badDeletes.filter((b) => !b.startsWith("B ")), [], "a holder's delete always succeeds");
        const twice = [...seen.deliveries].filter(([, by]) => by.length > 1);
        for (const [id, by] of twice) assert.equal(by[0], "B", `job ${id} delivered to ${by.join(", ")}`);
        console.log(
          `${JOBS} jobs: B held about ${heldByB} when killed; ${twice.length} delivered again after B's lease lapsed`,
        );
      } finally {
        for (const w of conns) w.close();
        await Promise.all(nodes.map((n) => n.stop()));
        release();
      }
    },
  );
});

/** Seconds of load for the exclusivity test: 8 in npm test, 300 under TUBEWAY_SOAK=1 (npm run soak). */
const EXCLUSIVE_S = process.env.TUBEWAY_SOAK === "1" ? 300 : 8;

describe("nodes over PostgreSQL: exclusivity", { skip: skipWithoutPostgres }, () => {
  it(
    `workers on three nodes never hold the same job at once (${EXCLUSIVE_S} s of load)`,
    { timeout: (EXCLUSIVE_S + 60) * 1000 },
    async () => {
      const { pg, release } = await acquirePostgres();
      const flags = ["--pg", pg.url, "--pg-schema", uniqueSchema("excl")];
      let nodes: Running[] = [];
      const conns: Wire[] = [];
      try {
        nodes = [await denoServer.start(flags), await bunServer.start(flags), await bunServer.start(flags)];
        const open = async (i: number) => {
          const w = await dial(nodes[i]!.addr);
          conns.push(w);
          return w;
        };
        const tubes = ["x.a", "x.b"];
        /** id -> the worker holding it now. */
        const holders = new Map<number, string>();
        const delivered = new Map<number, number>();
        const put = new Set<number>();
        const violations: string[] = [];
        const until = Date.now() + EXCLUSIVE_S * 1000;
        let deleted = 0;
        const producer = async (i: number) => {
          const w = await open(i % 3);
          await w.cmd(`use ${tubes[i % 2]}`);
          while (Date.now() < until) {
            // keep the backlog bounded, so the workers finish soon after the producers
            while (put.size - deleted > 2000) await new Promise((r) => setTimeout(r, 5));
            const m = /^INSERTED (\d+)\r\n$/.exec(await w.put(`p${i}`, i % 3, 0, 600));
            assert.ok(m);
            put.add(Number(m[1]));
          }
        };
        const consumer = async (name: string, node: number) => {
          const w = await open(node);
          for (const t of tubes) await w.cmd(`watch ${t}`);
          await w.cmd("ignore default");
          for (;;) {
            const r = await w.cmd("reserve-with-timeout 1", 15_000);
            if (r === "TIMED_OUT\r\n") {
              if (Date.now() >= until) return;
              continue;
            }
            const id = Number(/^RESERVED (\d+) /.exec(r)![1]);
            const other = holders.get(id);
            if (other) violations.push(`${name} got ${id} while ${other} held it`);
            holders.set(id, name);
            delivered.set(id, (delivered.get(id) ?? 0) + 1);
            const d = await w.cmd(`delete ${id}`, 15_000);
            if (d !== "DELETED\r\n") violations.push(`${name}: delete ${id} -> ${JSON.stringify(d)}`);
            else deleted++;
            holders.delete(id);
          }
        };
        const workers: Promise<void>[] = [];
        for (let n = 0; n < 3; n++) for (let k = 0; k < 3; k++) workers.push(consumer(`${"ABC"[n]}${k}`, n));
        await Promise.all([...Array.from({ length: 6 }, (_, i) => producer(i)), ...workers]);
        assert.deepEqual(violations, [], "no job held twice; every holder's delete succeeds");
        const twice = [...delivered].filter(([, n]) => n > 1).map(([id]) => id);
        assert.deepEqual(twice, [], "each job delivered once (no TTR or lease ended)");
        assert.deepEqual([...put].filter((id) => !delivered.has(id)), [], "every job put was delivered");
        console.log(`exclusivity: ${put.size} jobs over ${EXCLUSIVE_S} s, 9 workers on 3 nodes, none held twice`);
      } finally {
        for (const w of conns) w.close();
        await Promise.all(nodes.map((n) => n.stop()));
        release();
      }
    },
  );
});
