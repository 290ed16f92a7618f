// Flow control and schedules through the real server (in memory): a concurrency limit
// of 5 with 50 workers, sampled continuously, is never exceeded and the tube drains at
// the rate the limit allows; a rate limit gives its count in each window; a server with
// -b killed with SIGKILL and started again (by this runtime and by the other one) keeps
// its limits and schedules, repeats no run, and puts one job for the runs it missed.
// `npm test` runs each for seconds; TUBEWAY_SOAK=1 (npm run soak) for a minute.
//
// Run: node_modules/.bin/deno test -A tests/system/flow_control_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/flow_control_test.ts
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { dial } from "../harness/wire.ts";
import { HERE, kill9, OTHER, Scope, sleep, type Srv } from "../harness/durability.ts";
import { fill, holdRun, mostInAnyWindow, perWindow, reserveTimes, scheduledDues } from "../harness/flow_load.ts";

const SOAK = Boolean(process.env.TUBEWAY_SOAK);
const scope = new Scope();
after(() => scope.cleanup());

describe("flow control through the real server", () => {
  test(`${HERE.name}: concurrency 5, 50 workers: never more than 5 reserved, drained at the limit's rate`, async () => {
    const seconds = SOAK ? 60 : 4, holdMs = 100;
    const s = await scope.start(HERE, []);
    const a = await dial(s.addr);
    assert.equal(await a.cmd("set-concurrency work 5"), "CONCURRENCY_SET\r\n");
    await fill(s.addr, "work", Math.ceil(seconds * 5 * (1000 / holdMs) * 1.5));
    const r = await holdRun([s.addr], { tube: "work", workers: 50, holdMs, seconds, jobs: Infinity });
    assert.equal(r.maxHeld, 5, "the workers held 5 at once, never more");
    assert.ok(r.maxReservedSeen <= 5 && r.samples > 10, `stats-tube said ${r.maxReservedSeen} (${r.samples} samples)`);
    const rate = r.done / (r.ms / 1000), allowed = 5 * (1000 / holdMs);
    console.log(
      `concurrency: held ${r.maxHeld}, stats-tube ${r.maxReservedSeen} (${r.samples} samples), ` +
        `${r.done} jobs in ${(r.ms / 1000).toFixed(1)} s: ${rate.toFixed(1)}/s of ${allowed}/s`,
    );
    assert.ok(rate >= 0.6 * allowed, `drained ${rate.toFixed(1)} jobs/s, the limit allows ${allowed}`);
    a.close();
    await kill9(s);
  });

  test(`${HERE.name}: a rate limit gives its count in each window`, async () => {
    const [count, windowSec, seconds] = SOAK ? [100, 10, 60] : [20, 2, 6];
    const s = await scope.start(HERE, []);
    const a = await dial(s.addr);
    assert.equal(await a.cmd(`set-rate work ${count} ${windowSec}`), "RATE_SET\r\n");
    await fill(s.addr, "work", count * (seconds / windowSec + 2));
    const start = Date.now();
    const times = await reserveTimes([s.addr], { tube: "work", workers: 10, seconds });
    const windows = perWindow(times, windowSec * 1000, start + seconds * 1000);
    console.log(`rate ${count}/${windowSec} s: per window ${windows.join(" ")}`);
    assert.ok(windows.length >= seconds / windowSec - 1, `${windows.length} whole windows`);
    for (const n of windows) assert.ok(Math.abs(n - count) <= 2, `windows: ${windows.join(" ")}`);
    assert.ok(mostInAnyWindow(times, windowSec * 1000, 50) <= count, "never more in any window");
    a.close();
    await kill9(s);
  });
});

async function restart(first: Srv, second: Srv): Promise<void> {
  const dir = scope.dir();
  const s1 = await scope.start(first, ["-b", dir]);
  const a = await dial(s1.addr);
  assert.equal(await a.cmd("set-concurrency work 2"), "CONCURRENCY_SET\r\n");
  assert.equal(await a.cmd("set-rate work 50 60"), "RATE_SET\r\n");
  a.send("schedule tick ticks every:1 7 30 3\r\nabc\r\n");
  assert.equal(await a.reply(), "SCHEDULED\r\n");
  await sleep(1500);
  const before = await scheduledDues(s1.addr, "ticks", "tick");
  await kill9(s1);
  a.close();
  await sleep(2500); // two or more due times pass while it is down

  const s2 = await scope.start(second, ["-b", dir]);
  await sleep(1500);
  const b = await dial(s2.addr);
  assert.match(await b.cmd("stats-tube work"), /\nconcurrency-limit: 2\nrate-limit: 50\nrate-window: 60\n\r\n$/);
  assert.match(
    await b.cmd("list-schedules"),
    /^OK \d+\r\n---\n- name: tick\n {2}tube: ticks\n {2}spec: every:1\n {2}pri: 7\n/,
  );
  const dues = await scheduledDues(s2.addr, "ticks", "tick");
  assert.ok(before.length >= 1, "it ran before the kill");
  assert.deepEqual(dues.slice(0, before.length), before, "the jobs put before the kill are back");
  assert.equal(new Set(dues).size, dues.length, "no due time twice");
  const gaps = dues.slice(1).map((d, i) => d - dues[i]!);
  assert.equal(gaps.filter((g) => g !== 1).length, 1, `one gap, the downtime, made of one job: ${dues.join(" ")}`);
  assert.ok(dues.length >= before.length + 2, "it runs after the restart");
  // the limits still hold
  const w = await dial(s2.addr);
  await w.cmd("watch ticks");
  assert.match(await w.cmd("reserve-with-timeout 0"), /^RESERVED /);
  assert.match(await w.cmd("reserve-with-timeout 0"), /^RESERVED /);
  await b.cmd("use work");
  await b.put("x");
  await w.cmd("watch work");
  await w.cmd("ignore ticks");
  assert.match(await w.cmd("reserve-with-timeout 0"), /^RESERVED /);
  const w2 = await dial(s2.addr);
  await b.put("y");
  await b.put("z");
  await w2.cmd("watch work");
  assert.match(await w2.cmd("reserve-with-timeout 0"), /^RESERVED /);
  assert.equal(await w2.cmd("reserve-with-timeout 0"), "TIMED_OUT\r\n", "concurrency 2 after the restart");
  for (const c of [b, w, w2]) c.close();
  await kill9(s2);
}

describe("limits and schedules after kill -9 (-b)", () => {
  test(`${HERE.name} restarts on its own log`, () => restart(HERE, HERE));
  test(`${OTHER.name} restarts on ${HERE.name}'s log`, () => restart(HERE, OTHER));
});
