// Recurring jobs in the in-memory engine (schedule, unschedule, list-schedules): each
// due time puts exactly one job, on the engine's clock; runs missed while nothing could
// run (drain mode, the server down) put one job, not a burst; with -b a kill -9 and a
// restart keep the schedules, their last runs and the tubes' limits, and neither repeat
// nor skip a run; the log's file collection and the export keep or report them. In
// process, on MemoryFiles and a manual clock.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Queue } from "../../../core/memory/queue.ts";
import { Service } from "../../../protocol/service.ts";
import { localClient } from "../../harness/in_process.ts";
import { MemoryFiles } from "../../harness/files_memory.ts";
import { openLogged } from "../../harness/memory_log.ts";
import { DIR, logNames } from "../../harness/binlog_fixture.ts";
import { exportBinlog } from "../../../core/memory/beanstalkd_log/export.ts";

/** 2023-11-14T22:13:20Z, the manual clock's wall start: a multiple of 10 s and of 5. */
const T0_SEC = 1_700_000_000;
const ok = (yaml: string) => `OK ${yaml.length}\r\n${yaml}\r\n`;

function memory() {
  const clock = new ManualClock();
  const q = new Queue({ clock });
  const svc = new Service(q);
  return { clock, q, svc, c: () => localClient(svc) };
}

const logged = openLogged;

/** The unique keys of a tube's ready jobs, in order: `<schedule>@<due>`. */
function keysOf(a: ReturnType<typeof localClient>, tube: string): string[] {
  const ids = [...a.send(`list-jobs ${tube} ready 1000\r\n`).matchAll(/- id: (\d+)/g)].map((m) => m[1]);
  return ids.map((id) => /unique-key: (\S+)/.exec(a.send(`stats-job ${id}\r\n`))![1]!);
}

/** Advance a second at a time, as a real timer would fire. */
function seconds(clock: ManualClock, n: number): void {
  for (let i = 0; i < n; i++) clock.advance(1000);
}

describe("schedule", () => {
  test("every:N puts one job at each due time, with the schedule's pri, ttr and body", () => {
    const { c, svc, clock } = memory();
    const a = c();
    assert.equal(a.send("schedule tick jobs every:10 7 30 5\r\nhello\r\n"), "SCHEDULED\r\n");
    assert.equal(
      a.send("list-schedules\r\n"),
      ok(
        "---\n- name: tick\n  tube: jobs\n  spec: every:10\n  pri: 7\n  ttr: 30\n  size: 5\n" +
          `  next-due: ${T0_SEC + 10}\n  last-due: 0\n`,
      ),
    );
    assert.equal(a.send("stats-tube jobs\r\n"), "NOT_FOUND\r\n", "a schedule makes no tube");
    seconds(clock, 9);
    assert.equal(a.send("peek-tube jobs ready\r\n"), "NOT_FOUND\r\n");
    seconds(clock, 1);
    assert.equal(a.send("peek-tube jobs ready\r\n"), "FOUND 1 5\r\nhello\r\n");
    const st = a.send("stats-job 1\r\n");
    assert.match(st, /\ntube: jobs\nstate: ready\npri: 7\n/);
    assert.match(st, /\nttr: 30\n/);
    assert.match(st, new RegExp(`\\nunique-key: tick@${T0_SEC + 10}\\n`));
    seconds(clock, 30);
    assert.deepEqual(keysOf(a, "jobs"), [10, 20, 30, 40].map((d) => `tick@${T0_SEC + d}`));
    assert.match(a.send("list-schedules\r\n"), new RegExp(`next-due: ${T0_SEC + 50}\\n  last-due: ${T0_SEC + 40}\\n`));
    svc.close();
  });

  test("cron: fields joined by _, due at the minutes it names, in UTC", () => {
    const { c, svc, clock } = memory();
    const a = c();
    // 22:13:20 now: */5 is next due at 22:15:00
    assert.equal(a.send("schedule five t */5_*_*_*_* 0 60 1\r\nx\r\n"), "SCHEDULED\r\n");
    assert.match(
      a.send("list-schedules\r\n"),
      new RegExp(`spec: "\\*/5_\\*_\\*_\\*_\\*"\\n.*next-due: ${T0_SEC + 100}\\n`, "s"),
    );
    seconds(clock, 99);
    assert.deepEqual(keysOf(a, "t"), []);
    seconds(clock, 1);
    assert.deepEqual(keysOf(a, "t"), [`five@${T0_SEC + 100}`]);
    seconds(clock, 600);
    assert.deepEqual(keysOf(a, "t"), [100, 400, 700].map((d) => `five@${T0_SEC + d}`));
    svc.close();
  });

  test("a waiting worker gets a scheduled job at once; a limit applies to it", async () => {
    const { c, svc, clock } = memory();
    const a = c(), w = c(), v = c();
    a.send("schedule s t every:1 0 60 1\r\nx\r\nset-concurrency t 1\r\n");
    w.send("watch t\r\n");
    v.send("watch t\r\n");
    assert.equal(w.send("reserve\r\n"), "");
    clock.advance(1000);
    await new Promise((r) => setTimeout(r, 0));
    assert.match(w.take(), /^RESERVED 1 1\r\n/);
    assert.equal(v.send("reserve\r\n"), "");
    clock.advance(1000);
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(v.take(), "", "job 2 is put, but t is at its limit");
    assert.equal(w.send("delete 1\r\n"), "DELETED\r\n");
    await new Promise((r) => setTimeout(r, 0));
    assert.match(v.take(), /^RESERVED 2 /);
    svc.close();
  });

  test("a schedule of the same name replaces it and keeps its last run; unschedule stops it", () => {
    const { c, svc, clock } = memory();
    const a = c();
    a.send("schedule s t every:10 0 60 1\r\nx\r\n");
    seconds(clock, 10);
    assert.equal(a.send("schedule s u every:20 9 60 2\r\nyy\r\n"), "SCHEDULED\r\n");
    assert.equal(
      a.send("list-schedules\r\n"),
      ok(
        "---\n- name: s\n  tube: u\n  spec: every:20\n  pri: 9\n  ttr: 60\n  size: 2\n" +
          `  next-due: ${T0_SEC + 20}\n  last-due: ${T0_SEC + 10}\n`,
      ),
    );
    seconds(clock, 10);
    assert.deepEqual(keysOf(a, "u"), [`s@${T0_SEC + 20}`]);
    assert.deepEqual(keysOf(a, "t"), [`s@${T0_SEC + 10}`]);
    assert.equal(a.send("unschedule s\r\nunschedule s\r\n"), "DELETED\r\nNOT_FOUND\r\n");
    seconds(clock, 60);
    assert.deepEqual(keysOf(a, "u"), [`s@${T0_SEC + 20}`]);
    assert.equal(a.send("list-schedules\r\n"), ok("---\n"));
    svc.close();
  });

  test("no run while draining; the runs missed meanwhile put one job when the drain ends", () => {
    const { c, svc, clock, q } = memory();
    const a = c();
    a.send("schedule s t every:10 0 60 1\r\nx\r\n");
    q.drain();
    seconds(clock, 45);
    assert.equal(a.send("stats-tube t\r\n"), "NOT_FOUND\r\n");
    q.undrain();
    clock.advance(0);
    assert.deepEqual(keysOf(a, "t"), [`s@${T0_SEC + 40}`]);
    seconds(clock, 5);
    assert.deepEqual(keysOf(a, "t"), [40, 50].map((d) => `s@${T0_SEC + d}`));
    svc.close();
  });

  test("a job whose key is taken is not put twice (the run counts as done)", () => {
    const { c, svc, clock } = memory();
    const a = c();
    a.send(`use t\r\nput-unique s@${T0_SEC + 10} 0 0 60 1\r\nu\r\n`);
    a.send("schedule s t every:10 0 60 1\r\nx\r\n");
    seconds(clock, 20);
    assert.deepEqual(keysOf(a, "t"), [10, 20].map((d) => `s@${T0_SEC + d}`));
    assert.equal(a.send("peek 1\r\n"), "FOUND 1 1\r\nu\r\n");
    svc.close();
  });
});

describe("schedules and limits in the log (-b)", () => {
  test("a kill -9 and a restart keep the limits and the schedules, and neither repeat nor skip a run", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR]);
    const s1 = logged(files, clock);
    const a = s1.c();
    assert.equal(
      await a.exchange("set-concurrency t 2\r\nset-rate t 5 60\r\nschedule s t every:10 3 40 2\r\nhi\r\n"),
      "CONCURRENCY_SET\r\nRATE_SET\r\nSCHEDULED\r\n",
    );
    seconds(clock, 20);
    await s1.svc.afterIO();
    // kill -9 right after the run at +20: a restart at the same time puts nothing again
    const s2 = logged(files.crash(true), clock);
    const b = s2.c();
    assert.deepEqual(keysOf(b, "t"), [10, 20].map((d) => `s@${T0_SEC + d}`));
    assert.match(await b.exchange("stats-tube t\r\n"), /\nconcurrency-limit: 2\nrate-limit: 5\nrate-window: 60\n\r\n$/);
    assert.match(
      await b.exchange("list-schedules\r\n"),
      new RegExp(`tube: t\\n  spec: every:10\\n  pri: 3\\n  ttr: 40\\n  size: 2\\n  next-due: ${T0_SEC + 30}\\n`),
    );
    // down from +25 to +28: nothing was due; the run at +30 comes once
    seconds(clock, 5);
    await s2.svc.afterIO();
    const s3 = logged(files.crash(true), clock);
    seconds(clock, 5);
    assert.deepEqual(keysOf(s3.c(), "t"), [10, 20, 30].map((d) => `s@${T0_SEC + d}`));
    await s3.svc.afterIO();
    // down for a minute: the runs missed (40 to 90) put one job, for the latest
    const s4 = logged(files.crash(true), clock);
    s4.svc.close();
    clock.advance(60_000);
    const s5 = logged(files.crash(true), clock);
    clock.advance(0);
    assert.deepEqual(keysOf(s5.c(), "t"), [10, 20, 30, 90].map((d) => `s@${T0_SEC + d}`));
    await s5.svc.afterIO();
    // the limits hold after the restart
    const w = s5.c();
    w.send("watch t\r\n");
    assert.match(w.send("reserve\r\n"), /^RESERVED/);
    assert.match(w.send("reserve\r\n"), /^RESERVED/);
    assert.equal(w.send("reserve-with-timeout 0\r\n"), "TIMED_OUT\r\n", "concurrency 2");
    s5.svc.close();
  });

  test("a run is one record: cut inside it, a restart has neither its job nor its run, and runs it", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR]);
    const s1 = logged(files, clock);
    const a = s1.c();
    await a.exchange("schedule s t every:10 0 60 3\r\nabc\r\n");
    await s1.svc.afterIO();
    const name = logNames(files).at(-1)!;
    const before = files.nodes.get(`${DIR}/${name}`)!.length;
    seconds(clock, 10);
    await s1.svc.afterIO();
    const node = files.nodes.get(`${DIR}/${name}`)!;
    assert.ok(node.length > before, "the run was written");
    const crashed = files.crash(true);
    crashed.nodes.get(`${DIR}/${name}`)!.length = node.length - 5; // a torn tail
    const s2 = logged(crashed, clock);
    clock.advance(0);
    assert.deepEqual(keysOf(s2.c(), "t"), [`s@${T0_SEC + 10}`], "put again, once");
    s2.svc.close();
  });

  test("unschedule and removed limits are logged; schedules outlive the collection of their file", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR]);
    const s1 = logged(files, clock, 4096);
    const a = s1.c();
    await a.exchange("schedule gone t every:10 0 60 1\r\nx\r\nschedule kept t every:3600 0 60 1\r\ny\r\n");
    await a.exchange("set-concurrency a 1\r\nset-concurrency b 2\r\nset-concurrency a 0\r\nunschedule gone\r\n");
    const first = logNames(files)[0];
    for (let i = 0; i < 60; i++) {
      const r = await a.exchange(`put 1 0 60 200\r\n${"x".repeat(200)}\r\n`);
      await a.exchange(`delete ${/INSERTED (\d+)/.exec(r)![1]}\r\n`);
    }
    assert.ok(!logNames(files).includes(first!), "the first file was collected");
    const s2 = logged(files.crash(true), clock, 4096);
    const b = s2.c();
    assert.match(await b.exchange("list-schedules\r\n"), /^OK \d+\r\n---\n- name: kept\n/);
    assert.doesNotMatch(await b.exchange("list-schedules\r\n"), /gone/);
    assert.equal(await b.exchange("stats-tube a\r\n"), "NOT_FOUND\r\n");
    assert.match(await b.exchange("stats-tube b\r\n"), /\nconcurrency-limit: 2\n/);
    s2.svc.close();
  });

  test("the export to a beanstalkd log keeps the scheduled jobs and says what it drops", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR, "/out"]);
    const s1 = logged(files, clock);
    const a = s1.c();
    await a.exchange("set-rate t 5 60\r\nschedule s t every:10 0 60 1\r\nx\r\n");
    seconds(clock, 10);
    await s1.svc.afterIO();
    const r = exportBinlog(DIR, "/out", files.crash(true), () => {}, clock.wallMs());
    assert.equal(r.kind, "done");
    if (r.kind !== "done") return;
    assert.deepEqual(r.jobs.map((j) => [j.id, j.tube, j.state]), [[1, "t", "ready"]]);
    assert.deepEqual(r.lines.slice(1), [
      "dropped the limits (set-concurrency, set-rate) of 1 tube: t",
      "dropped 1 schedule (the jobs they already put are exported): s",
      "dropped the put-unique keys of 1 job (the jobs are exported)",
    ]);
    s1.svc.close();
  });
});
