// throwaway: put / put->reserve->delete rates across N nodes (not committed)
import { acquirePostgres, uniqueSchema } from "./harness/postgres.ts";
import { bunServer, type Running } from "./harness/targets.ts";
import { dial, type Wire } from "./harness/wire.ts";
const N = Number(process.env.NODES ?? 3), CLIENTS = 50, SECS = 5;
const { pg, release } = await acquirePostgres();
const flags = ["--pg", pg.url, "--pg-schema", uniqueSchema("b")];
const nodes: Running[] = [];
for (let i = 0; i < N; i++) nodes.push(await bunServer.start(flags));
const conns: Wire[] = [];
for (let i = 0; i < CLIENTS; i++) conns.push(await dial(nodes[i % N]!.addr));
let puts = 0; let stop = false;
const t0 = Date.now();
await Promise.all(conns.map(async (w) => { while (!stop) { await w.put("x".repeat(100)); puts++; if (Date.now() - t0 > SECS * 1000) stop = true; } }));
console.log(`put: ${N} nodes, ${CLIENTS} clients: ${(puts / ((Date.now() - t0) / 1000)).toFixed(0)} puts/s`);
// e2e: half producers, half workers (workers on other nodes than producers where N>1)
let done = 0; stop = false;
const t1 = Date.now();
const prod = conns.slice(0, CLIENTS / 2), work = conns.slice(CLIENTS / 2);
for (const w of work) { await w.cmd("watch e2e"); await w.cmd("ignore default"); }
for (const w of prod) await w.cmd("use e2e");
await Promise.all([
  ...prod.map(async (w) => { while (!stop) await w.put("y".repeat(100)); }),
  ...work.map(async (w) => { while (!stop) { const r = await w.cmd("reserve-with-timeout 1"); const m = /^RESERVED (\d+)/.exec(r); if (m) { await w.cmd(`delete ${m[1]}`); done++; } if (Date.now() - t1 > SECS * 1000) stop = true; } }),
]);
console.log(`e2e: ${N} nodes: ${(done / ((Date.now() - t1) / 1000)).toFixed(0)} jobs/s`);
for (const w of conns) w.close();
for (const n of nodes) await n.stop();
release();
