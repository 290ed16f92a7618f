// /metrics after a scripted session on a manual clock: every value exact, read back
// with a Prometheus text parser (tests/harness/prometheus.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Service } from "../../../protocol/service.ts";
import { memoryEngine, Queue } from "../../../core/memory/queue.ts";
import { labelValue, renderMetrics, TUBES_PER_SLICE } from "../../../protocol/http/metrics.ts";
import { localClient } from "../../harness/in_process.ts";
import { Scrape } from "../../harness/prometheus.ts";

const quiet = { log: () => {}, error: () => {} };
const noPause = () => Promise.resolve();

function scrapeOf(svc: Service, pause = noPause): Promise<Scrape> {
  return renderMetrics({
    engine: svc.engine,
    counters: svc.counters,
    startedAtMs: svc.facts.startedAt,
    version: "9.9.9",
  }, pause)
    .then((t) => new Scrape(t));
}

describe("metrics", () => {
  it("give exact values after puts, reserves, a timeout, a bury, a kick and a pause", async () => {
    const clock = new ManualClock(1000);
    const svc = new Service(new Queue({ clock }), quiet);
    try {
      const p = localClient(svc);
      const w = localClient(svc);
      assert.equal(p.send("use jobs\r\n"), "USING jobs\r\n");
      assert.equal(p.send("put 10 0 60 5\r\nhello\r\n"), "INSERTED 1\r\n");
      assert.equal(p.send("put 2000 0 1 3\r\nabc\r\n"), "INSERTED 2\r\n");
      assert.equal(p.send("put 2000 5 60 1\r\nx\r\n"), "INSERTED 3\r\n");
      assert.equal(p.send("put 2000 0 60 1\r\ny\r\n"), "INSERTED 4\r\n");
      clock.advance(2000);
      assert.equal(w.send("watch jobs\r\nignore default\r\n"), "WATCHING 2\r\nWATCHING 1\r\n");
      assert.equal(w.send("reserve-with-timeout 0\r\n"), "RESERVED 1 5\r\nhello\r\n"); // ready 2.0 s
      clock.advance(300);
      assert.equal(w.send("delete 1\r\n"), "DELETED\r\n"); // reserved 0.3 s
      assert.equal(w.send("reserve-with-timeout 0\r\n"), "RESERVED 2 3\r\nabc\r\n"); // ready 2.3 s
      clock.advance(1000);
      (svc.engine as Queue).tick(); // job 2's 1 s TTR ran out
      assert.equal(w.send("reserve\r\n"), "RESERVED 2 3\r\nabc\r\n"); // ready 0 s
      assert.equal(w.send("bury 2 2000\r\n"), "BURIED\r\n");
      assert.equal(w.send("reserve-with-timeout 0\r\n"), "RESERVED 4 1\r\ny\r\n"); // ready 3.3 s
      assert.equal(p.send("kick 1\r\n"), "KICKED 1\r\n");
      assert.equal(p.send("pause-tube jobs 30\r\n"), "PAUSED\r\n");
      clock.advance(500);

      const s = await scrapeOf(svc);
      for (const f of s.families) {
        assert.ok(f.help.length > 0, `${f.name} has HELP`);
        assert.match(f.type, /^(GAUGE|COUNTER|HISTOGRAM)$/, `${f.name} has TYPE`);
      }
      assert.equal(s.value("beanstalkd_up"), 1);
      assert.equal(s.value("beanstalkd_uptime_seconds"), 3);
      assert.equal(s.value("beanstalkd_draining"), 0);
      const jobs = (state: string) => s.value("beanstalkd_jobs", { state });
      assert.deepEqual(["urgent", "ready", "reserved", "delayed", "buried"].map(jobs), [0, 1, 1, 1, 0]);
      assert.equal(s.value("beanstalkd_jobs_total"), 4);
      assert.equal(s.value("beanstalkd_job_timeouts_total"), 1);
      const conns = (role: string) => s.value("beanstalkd_connections", { role });
      assert.deepEqual(["current", "producers", "workers", "waiting"].map(conns), [2, 1, 1, 0]);
      assert.equal(s.value("beanstalkd_connections_total"), 2);
      assert.equal(s.value("beanstalkd_tubes_current"), 2);
      assert.equal(s.family("beanstalkd_commands_total").type, "COUNTER");
      const cmd = (command: string) => s.value("beanstalkd_commands_total", { command });
      assert.deepEqual(
        ["put", "use", "watch", "ignore", "reserve", "reserve-with-timeout", "delete", "bury", "kick", "pause-tube"]
          .map(cmd),
        [4, 1, 1, 1, 1, 3, 1, 1, 1, 1],
      );
      assert.equal(cmd("stats"), 0);

      const tube = (state: string) => s.value("beanstalkd_tube_jobs", { tube: "jobs", state });
      assert.deepEqual(["urgent", "ready", "reserved", "delayed", "buried"].map(tube), [0, 1, 1, 1, 0]);
      const tc = (t: string, role: string) => s.value("beanstalkd_tube_connections", { tube: t, role });
      assert.deepEqual([tc("jobs", "using"), tc("jobs", "watching"), tc("jobs", "waiting")], [1, 1, 0]);
      // w still uses default (it only changed what it watches); p still watches it
      assert.deepEqual([tc("default", "using"), tc("default", "watching")], [1, 1]);
      assert.equal(s.value("beanstalkd_tube_paused", { tube: "jobs" }), 1);
      assert.equal(s.value("beanstalkd_tube_paused", { tube: "default" }), 0);
      assert.equal(s.value("tubeway_tube_pause_remaining_seconds", { tube: "jobs" }), 30);
      assert.equal(s.value("beanstalkd_tube_jobs_total", { tube: "jobs" }), 4);
      assert.equal(s.value("beanstalkd_tube_deletes_total", { tube: "jobs" }), 1);
      // job 2 became ready again at the kick, 0.5 s ago
      assert.equal(s.value("tubeway_tube_oldest_ready_seconds", { tube: "jobs" }), 0.5);
      assert.equal(s.value("tubeway_tube_oldest_ready_seconds", { tube: "default" }), 0);

      const r2r = s.histogram("tubeway_ready_to_reserve_seconds");
      assert.equal(r2r.count, 4);
      assert.equal(r2r.sum, 7.6);
      assert.deepEqual([r2r.buckets["0.001"], r2r.buckets["1"], r2r.buckets["5"], r2r.buckets["+Inf"]], [1, 1, 4, 4]);
      const r2d = s.histogram("tubeway_reserve_to_delete_seconds");
      assert.deepEqual([r2d.count, r2d.sum, r2d.buckets["0.1"], r2d.buckets["0.5"]], [1, 0.3, 0, 1]);
      assert.equal(s.value("tubeway_binlog_enabled"), 0);
      assert.equal(s.value("tubeway_build_info", { version: "9.9.9" }), 1);

      svc.drain();
      assert.equal((await scrapeOf(svc)).value("beanstalkd_draining"), 1);
    } finally {
      svc.close();
    }
  });

  it("build the per-tube part in slices, yielding between them, and keep every tube", async () => {
    const svc = new Service(memoryEngine({ clock: new ManualClock() }), quiet);
    try {
      const c = localClient(svc);
      const n = 2 * TUBES_PER_SLICE + 1;
      for (let i = 0; i < n; i++) c.send(`watch t${i}\r\n`);
      let pauses = 0;
      const s = await scrapeOf(svc, () => {
        pauses++;
        return Promise.resolve();
      });
      assert.equal(pauses, 11 * 2); // each of the 11 per-tube families: 3 slices, 2 gaps
      assert.equal(s.value("beanstalkd_tubes_current"), n + 1);
      assert.equal(s.family("beanstalkd_tube_paused").metrics.length, n + 1);
      assert.equal(s.value("beanstalkd_tube_connections", { tube: `t${n - 1}`, role: "watching" }), 1);
    } finally {
      svc.close();
    }
  });

  it("escape label values as the format says", () => {
    assert.equal(labelValue("plain-tube_1"), "plain-tube_1");
    assert.equal(labelValue('a"b\\c\nd'), 'a\\"b\\\\c\\nd');
  });
});
