// `tubeway migrate` carries the tubes' limits and the schedules both ways: a log
// directory a tubeway wrote (limits, a schedule that has run) goes into PostgreSQL and
// back out into a new directory, which a single tubeway then serves with the same
// limits and the same schedule, its last run kept (no due time done before is run again).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { runToEnd, startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { acquirePostgres, type Postgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { scheduledDues } from "../harness/flow_load.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const base = mkdtempSync(join(tmpdir(), "tubeway-migrate-flow-"));
let dirs = 0;
const freshDir = () => mkdtempSync(join(base, `d${dirs++}-`));

let pg: Postgres | undefined;
let release = () => {};
before(async () => {
  if (skipWithoutPostgres) return;
  ({ pg, release } = await acquirePostgres());
});
after(() => {
  release();
  rmSync(base, { recursive: true, force: true });
});

describe(`tubeway migrate: limits and schedules (${RUNTIME})`, { skip: skipWithoutPostgres }, () => {
  it(
    "go into PostgreSQL and back out, and a single tubeway serves them as they were",
    { timeout: 60_000 },
    async () => {
      const dir = freshDir();
      const s1 = await startProcess(SERVER, ["-b", dir]);
      const a = await dial(s1.addr);
      assert.equal(await a.cmd("set-concurrency mail 3"), "CONCURRENCY_SET\r\n");
      assert.equal(await a.cmd("set-rate mail 60 30"), "RATE_SET\r\n");
      assert.equal(await a.cmd("set-rate api 10 1"), "RATE_SET\r\n");
      a.send("schedule tick ticks every:1 4 20 2\r\nhi\r\nschedule daily reports 0_6_*_*_* 9 600 0\r\n\r\n");
      assert.equal(await a.reply(), "SCHEDULED\r\n");
      assert.equal(await a.reply(), "SCHEDULED\r\n");
      await new Promise((r) => setTimeout(r, 1500));
      const ran = await scheduledDues(s1.addr, "ticks", "tick");
      assert.ok(ran.length >= 1, "tick ran");
      const listed = await a.cmd("list-schedules");
      a.close();
      await s1.stop();

      const schema = uniqueSchema("migflow");
      const into = await runToEnd(SERVER, ["migrate", "-b", dir, "--pg", pg!.url, "--pg-schema", schema]);
      assert.equal(into.code, 0, into.err);
      const back = freshDir();
      const out = await runToEnd(SERVER, ["migrate", "--to", back, "--pg", pg!.url, "--pg-schema", schema]);
      assert.equal(out.code, 0, out.err);

      const s2 = await startProcess(SERVER, ["-b", back]);
      const b = await dial(s2.addr);
      assert.match(await b.cmd("stats-tube mail"), /\nconcurrency-limit: 3\nrate-limit: 60\nrate-window: 30\n\r\n$/);
      assert.match(await b.cmd("stats-tube api"), /\nconcurrency-limit: 0\nrate-limit: 10\nrate-window: 1\n\r\n$/);
      const again = await b.cmd("list-schedules");
      // the same definitions and last runs (next-due moves on with the clock: compared without it)
      const strip = (y: string) => y.replace(/^OK \d+\r\n/, "").replace(/ {2}next-due: \d+\n/g, "");
      const lastTick = Number(/- name: tick\n(?: {2}.*\n)*? {2}last-due: (\d+)\n/.exec(again)?.[1]);
      assert.equal(lastTick >= ran.at(-1)!, true, `the last run is kept: ${again}`);
      assert.equal(strip(again).replace(/last-due: \d+/g, ""), strip(listed).replace(/last-due: \d+/g, ""));
      // the jobs it put came along, and no due time it did is put again
      const dues = await scheduledDues(s2.addr, "ticks", "tick");
      assert.deepEqual(dues.slice(0, ran.length), ran);
      assert.equal(new Set(dues).size, dues.length, "no due time twice");
      b.close();
      await s2.stop();
    },
  );
});
