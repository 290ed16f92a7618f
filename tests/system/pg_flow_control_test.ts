// Flow control and schedules across three tubeway nodes over PostgreSQL (one schema):
// a concurrency limit of 5 with 50 workers spread over the nodes, sampled continuously
// from the workers and from every node's stats-tube, is never exceeded and drains at the
// rate it allows; a rate limit gives its count in each window, for the cluster; a
// schedule due every second puts each due time's job exactly once (none missed, none
// twice) while one node is killed with SIGKILL and started again. `npm test` runs each
// for seconds; TUBEWAY_SOAK=1 (npm run soak) for the lengths (60 s, 5 minutes).
//
// Run: node_modules/.bin/deno test -A tests/system/pg_flow_control_test.ts
//      node_modules/.bin/bun test --timeout 600000 tests/system/pg_flow_control_test.ts
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { type Running, startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { acquirePostgres, type Postgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { fill, holdRun, mostInAnyWindow, perWindow, reserveTimes, scheduledDues } from "../harness/flow_load.ts";
import { kill9 } from "../harness/durability.ts";

const SOAK = Boolean(process.env.TUBEWAY_SOAK);
const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let pg: Postgres | undefined;
let release = () => {};
const started: Running[] = [];
before(async () => {
  if (skipWithoutPostgres) return;
  ({ pg, release } = await acquirePostgres());
});
after(async () => {
  for (const n of started) await kill9(n);
  release();
});

/** A node on `schema` (kept for the cleanup). */
async function node(schema: string): Promise<Running> {
  const n = await startProcess(SERVER, ["--pg", pg!.url, "--pg-schema", schema]);
  started.push(n);
  return n;
}

/** Three nodes on a fresh schema, started one after the other. */
async function cluster(): Promise<{ schema: string; nodes: Running[] }> {
  const schema = uniqueSchema("flow");
  const nodes: Running[] = [];
  for (let i = 0; i < 3; i++) nodes.push(await node(schema));
  return { schema, nodes };
}

describe(`flow control over --pg, three ${RUNTIME} nodes`, { skip: skipWithoutPostgres }, () => {
  test("concurrency 5, 50 workers over 3 nodes: never more than 5 reserved, drained at the limit's rate", {
    timeout: 600_000,
  }, async () => {
    const seconds = SOAK ? 60 : 6, holdMs = 200;
    const { nodes } = await cluster();
    const a = await dial(nodes[0]!.addr);
    assert.equal(await a.cmd("set-concurrency work 5"), "CONCURRENCY_SET\r\n");
    await fill(nodes[1]!.addr, "work", Math.ceil(seconds * 5 * (1000 / holdMs) * 1.5));
    const r = await holdRun(nodes.map((n) => n.addr), { tube: "work", workers: 50, holdMs, seconds, jobs: Infinity });
    assert.equal(r.maxHeld, 5, "the workers held 5 at once, never more");
    assert.ok(r.maxReservedSeen <= 5 && r.samples > 30, `stats-tube said ${r.maxReservedSeen} (${r.samples} samples)`);
    const rate = r.done / (r.ms / 1000), allowed = 5 * (1000 / holdMs);
    console.log(
      `concurrency: held ${r.maxHeld}, stats-tube ${r.maxReservedSeen} (${r.samples} samples), ` +
        `${r.done} jobs in ${(r.ms / 1000).toFixed(1)} s: ${rate.toFixed(1)}/s of ${allowed}/s`,
    );
    assert.ok(rate >= 0.6 * allowed, `drained ${rate.toFixed(1)} jobs/s, the limit allows ${allowed}`);
    a.close();
    for (const n of nodes) await kill9(n);
  });

  test("a rate limit gives its count in each window, for the cluster", { timeout: 600_000 }, async () => {
    const [count, windowSec, seconds] = SOAK ? [100, 10, 60] : [20, 2, 6];
    const { nodes } = await cluster();
    const a = await dial(nodes[2]!.addr);
    assert.equal(await a.cmd(`set-rate work ${count} ${windowSec}`), "RATE_SET\r\n");
    await fill(nodes[0]!.addr, "work", count * (seconds / windowSec + 2));
    const start = Date.now();
    const times = await reserveTimes(nodes.map((n) => n.addr), { tube: "work", workers: 12, seconds });
    const windows = perWindow(times, windowSec * 1000, start + seconds * 1000);
    console.log(`rate ${count}/${windowSec} s: per window ${windows.join(" ")}`);
    assert.ok(windows.length >= seconds / windowSec - 1, `${windows.length} whole windows`);
    for (const n of windows) assert.ok(Math.abs(n - count) <= 2, `windows: ${windows.join(" ")}`);
    assert.ok(mostInAnyWindow(times, windowSec * 1000, 100) <= count, "never more in any window");
    a.close();
    for (const n of nodes) await kill9(n);
  });

  test("a schedule every second, one node killed -9 and restarted: each due time's job exactly once", {
    timeout: 900_000,
  }, async () => {
    const seconds = SOAK ? 300 : 12;
    const { schema, nodes } = await cluster();
    const a = await dial(nodes[1]!.addr);
    a.send("schedule tick ticks every:1 0 60 4\r\ntick\r\n");
    assert.equal(await a.reply(), "SCHEDULED\r\n");
    await sleep((seconds / 3) * 1000);
    // the node the schedule was set through, and the first started: killed in the middle of the run
    await kill9(nodes[0]!);
    await sleep(2000);
    nodes[0] = await node(schema);
    await sleep((seconds * 2 / 3 - 2) * 1000);
    assert.equal(await a.cmd("unschedule tick"), "DELETED\r\n");
    const dues = await scheduledDues(nodes[2]!.addr, "ticks", "tick");
    assert.equal(new Set(dues).size, dues.length, "no due time twice");
    const first = dues[0]!, last = dues.at(-1)!;
    const missing = [];
    for (let d = first; d <= last; d++) if (!dues.includes(d)) missing.push(d);
    assert.deepEqual(missing, [], `every due time from ${first} to ${last}`);
    assert.ok(dues.length >= seconds - 2, `${dues.length} runs in ${seconds} s`);
    console.log(`schedule: ${dues.length} due times from ${first} to ${last}, none twice, none missing`);
    a.close();
    for (const n of nodes) await kill9(n);
  });
});
