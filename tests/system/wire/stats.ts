// The wire suite's tests of stats, stats-job, stats-tube and list-tubes: keys in wire order, values, counters.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as os from "node:os";
import { JOB_KEYS, STATS_KEYS, TUBE_KEYS } from "../../harness/stats_keys.ts";
import { eventually, jobReply, ok, putId, stats, statsJob, statsTube, tubeName } from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

function kernelVersion(): string {
  try {
    return readFileSync("/proc/sys/kernel/version", "utf8").trim();
  } catch {
    return os.version();
  }
}

/** Register them, in this order. */
export function statsTests({ it, session, srv, q }: WireContext): void {
  it("stats: 51 keys in wire order with real values", () =>
    session(async (c) => {
      const w = await c.dial();
      const s = await stats(w);
      assert.deepEqual(s.keys, STATS_KEYS);
      for (const k of STATS_KEYS.slice(0, 37)) s.num(k);
      const pid = srv().child?.pid ?? process.pid;
      assert.equal(s.num("pid"), pid);
      assert.equal(s.str("version"), '"1.12"');
      assert.match(s.str("rusage-utime"), /^\d+\.\d{6}$/);
      assert.match(s.str("rusage-stime"), /^\d+\.\d{6}$/);
      assert.ok(s.num("uptime") >= 0);
      for (const k of STATS_KEYS.slice(41, 45)) assert.equal(s.num(k), 0, `${k} without -b`);
      assert.equal(s.num("binlog-max-size"), 10485760);
      assert.equal(s.num("max-job-size"), 65535);
      assert.equal(s.str("draining"), "false");
      assert.match(s.str("id"), /^[0-9a-f]{16}$/);
      assert.equal((await stats(w)).str("id"), s.str("id"), "id is fixed for the process");
      assert.equal(s.str("hostname"), q(os.hostname()));
      assert.equal(s.str("os"), q(kernelVersion()));
      assert.equal(s.str("platform"), q(os.machine()));
      assert.ok(s.num("current-connections") >= 1);
      assert.ok(s.num("total-connections") >= s.num("current-connections"));
      assert.ok(s.num("current-tubes") >= 1);
      assert.equal(await w.cmd("stats "), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("statsfoo"), "BAD_FORMAT\r\n");
    }));

  it("stats counters and gauges move as commands run", () =>
    session(async (c) => {
      const w = await c.dial();
      // Earlier tests' connections are closed; wait until the server has seen that.
      const s0 = await eventually("only this connection", () => stats(w), (s) => s.num("current-connections") === 1);
      const t = tubeName("ctr");
      assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`);
      const id = await putId(w, "counted");
      const s1 = await stats(w);
      assert.equal(s1.num("current-jobs-ready") - s0.num("current-jobs-ready"), 1);
      assert.equal(s1.num("current-jobs-urgent") - s0.num("current-jobs-urgent"), 1, "pri 0 < 1024 is urgent");
      assert.equal(s1.num("current-producers") - s0.num("current-producers"), 1);
      assert.equal(s1.num("current-tubes") - s0.num("current-tubes"), 1);
      assert.equal(s1.num("total-jobs") - s0.num("total-jobs"), 1);
      assert.equal(await w.cmd(`peek ${id}`), jobReply("FOUND", id, "counted"));
      assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", id, "counted"));
      assert.equal(await w.cmd("peek-delayed"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek-buried"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd(`watch ${t}`), "WATCHING 2\r\n");
      assert.equal(await w.cmd("ignore default"), "WATCHING 1\r\n");
      assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "counted"));
      const s2 = await stats(w);
      assert.equal(s2.num("current-jobs-reserved") - s0.num("current-jobs-reserved"), 1);
      assert.equal(s2.num("current-jobs-ready"), s0.num("current-jobs-ready"));
      assert.equal(s2.num("current-workers") - s0.num("current-workers"), 1);
      assert.equal(await w.cmd(`touch ${id}`), "TOUCHED\r\n");
      assert.equal(await w.cmd(`release ${id} 2000 0`), "RELEASED\r\n");
      assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "counted"));
      assert.equal(await w.cmd(`bury ${id} 2000`), "BURIED\r\n");
      const s3 = await stats(w);
      assert.equal(s3.num("current-jobs-buried") - s0.num("current-jobs-buried"), 1);
      assert.equal(await w.cmd("kick 1"), "KICKED 1\r\n");
      const s4 = await stats(w);
      assert.equal(s4.num("current-jobs-ready") - s0.num("current-jobs-ready"), 1);
      assert.equal(s4.num("current-jobs-urgent"), s0.num("current-jobs-urgent"), "pri 2000 is not urgent");
      await w.cmd(`stats-job ${id}`);
      await w.cmd(`stats-tube ${t}`);
      await w.cmd("list-tubes");
      await w.cmd("list-tube-used");
      await w.cmd("list-tubes-watched");
      assert.equal(await w.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
      assert.equal(await w.cmd(`kick-job ${id}`), "NOT_FOUND\r\n", "ready: not kickable (and not counted)");
      assert.equal(await w.cmd(`reserve-job ${id}`), jobReply("RESERVED", id, "counted"));
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      assert.equal(await w.cmd(`delete ${id}`), "NOT_FOUND\r\n", "NOT_FOUND still counts");
      const put2 = await putId(w, "delayed", 0, 100);
      const s5 = await stats(w);
      assert.equal(s5.num("current-jobs-delayed") - s0.num("current-jobs-delayed"), 1);
      const want: Record<string, number> = {
        "cmd-put": 2,
        "cmd-peek": 1,
        "cmd-peek-ready": 1,
        "cmd-peek-delayed": 1,
        "cmd-peek-buried": 1,
        "cmd-reserve": 1,
        "cmd-reserve-with-timeout": 1,
        "cmd-delete": 2,
        "cmd-release": 1,
        "cmd-use": 1,
        "cmd-watch": 1,
        "cmd-ignore": 1,
        "cmd-bury": 1,
        "cmd-kick": 1,
        "cmd-touch": 1,
        "cmd-stats": 5,
        "cmd-stats-job": 1,
        "cmd-stats-tube": 1,
        "cmd-list-tubes": 1,
        "cmd-list-tube-used": 1,
        "cmd-list-tubes-watched": 1,
        "cmd-pause-tube": 1,
        "job-timeouts": 0,
        "total-jobs": 2,
        "total-connections": 0,
      };
      for (const [k, d] of Object.entries(want)) assert.equal(s5.num(k) - s0.num(k), d, k);
      const st = await statsTube(w, t);
      assert.equal(st.num("cmd-delete"), 1, "per-tube cmd-delete counts successful deletes only");
      assert.equal(st.num("total-jobs"), 2);
      // A second connection is counted, and uncounted again when it goes.
      const o = await c.dial();
      const s6 = await stats(o);
      assert.equal(s6.num("total-connections") - s0.num("total-connections"), 1);
      assert.equal(s6.num("current-connections"), 2);
      o.close();
      await eventually("closed connection uncounted", () => stats(w), (s) => s.num("current-connections") === 1);
      assert.equal(await w.cmd(`delete ${put2}`), "DELETED\r\n");
    }));

  it("stats-job and stats-tube: keys in wire order, values, NOT_FOUND, BAD_FORMAT", () =>
    session(async (c) => {
      const w = await c.dial();
      const t = tubeName("sj");
      await w.cmd(`use ${t}`);
      const id = await putId(w, "abc", 1023, 100, 30);
      const sj = await statsJob(w, id);
      assert.deepEqual(sj.keys, JOB_KEYS);
      assert.equal(sj.num("id"), id);
      assert.equal(sj.str("tube"), q(t));
      assert.equal(sj.str("state"), "delayed");
      assert.equal(sj.num("pri"), 1023);
      assert.ok(sj.num("age") >= 0 && sj.num("age") <= 1);
      assert.equal(sj.num("delay"), 100);
      assert.equal(sj.num("ttr"), 30);
      assert.ok(sj.num("time-left") >= 99 && sj.num("time-left") <= 100, `time-left ${sj.num("time-left")}`);
      for (const k of JOB_KEYS.slice(8)) assert.equal(sj.num(k), 0, k);
      assert.equal(await w.cmd("stats-job 0"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("stats-job 111ABC"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("stats-job 111 222"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("stats-job"), "BAD_FORMAT\r\n");
      const o = await c.dial();
      await o.cmd(`watch ${t}`);
      const ready = await putId(w, "r", 5);
      const st = await statsTube(w, t);
      assert.deepEqual(st.keys, TUBE_KEYS);
      const want: Record<string, number> = {
        "current-jobs-urgent": 1,
        "current-jobs-ready": 1,
        "current-jobs-reserved": 0,
        "current-jobs-delayed": 1,
        "current-jobs-buried": 0,
        "total-jobs": 2,
        "current-using": 1,
        "current-watching": 1,
        "current-waiting": 0,
        "cmd-delete": 0,
        "cmd-pause-tube": 0,
        pause: 0,
        "pause-time-left": 0,
      };
      assert.equal(st.str("name"), q(t));
      for (const [k, v] of Object.entries(want)) assert.equal(st.num(k), v, k);
      assert.equal((await statsJob(w, ready)).num("time-left"), 0, "a ready job shows time-left 0");
      assert.equal(await w.cmd(`stats-tube ${tubeName("none")}`), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("stats-tube -x"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("stats-tube"), "BAD_FORMAT\r\n");
      for (const j of [id, ready]) assert.equal(await w.cmd(`delete ${j}`), "DELETED\r\n");
    }));

  it("list-tubes: exact YAML; new tubes appended", () =>
    session(async (c) => {
      const w = await c.dial();
      const before = await w.cmd("list-tubes");
      const t = tubeName("lt");
      await w.cmd(`use ${t}`);
      const yaml = before.slice(before.indexOf("\r\n") + 2, -2) + `- ${t}\n`;
      assert.equal(await w.cmd("list-tubes"), ok(yaml));
      assert.equal(await w.cmd("list-tubes x"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("list-tubesX"), "BAD_FORMAT\r\n");
    }));
}
