// /metrics for limits and schedules: the ready jobs a limit holds back, each tube's
// limits (only for tubes that have them), and the jobs each schedule put. In process, on
// a manual clock, read back with a Prometheus text parser.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Service } from "../../../protocol/service.ts";
import { Queue } from "../../../core/memory/queue.ts";
import { renderMetrics } from "../../../protocol/http/metrics.ts";
import { localClient } from "../../harness/in_process.ts";
import { Scrape } from "../../harness/prometheus.ts";

describe("metrics of limits and schedules", () => {
  it("count held jobs, show limits, count schedule runs", async () => {
    const clock = new ManualClock();
    const svc = new Service(new Queue({ clock }), { log: () => {}, error: () => {} });
    try {
      const a = localClient(svc);
      a.send("set-concurrency lim 1\r\nset-rate lim 50 60\r\nuse lim\r\n");
      for (let i = 0; i < 4; i++) a.send("put 1 0 60 1\r\nx\r\n");
      a.send("use free\r\nput 1 0 60 1\r\ny\r\nwatch lim\r\nreserve\r\n");
      a.send("schedule every5 s every:5 0 60 1\r\nz\r\nschedule hourly s @hourly 0 60 1\r\nz\r\n");
      for (let i = 0; i < 20; i++) clock.advance(1000);
      const s = new Scrape(
        await renderMetrics(
          { engine: svc.engine, counters: svc.counters, startedAtMs: svc.facts.startedAt, version: "x" },
          () => Promise.resolve(),
        ),
      );
      assert.equal(s.value("tubeway_tube_held_jobs", { tube: "lim" }), 3, "1 reserved, 3 ready held back");
      assert.equal(s.value("tubeway_tube_concurrency_limit", { tube: "lim" }), 1);
      assert.equal(s.value("tubeway_tube_rate_limit", { tube: "lim" }), 50);
      assert.equal(s.value("tubeway_tube_rate_window_seconds", { tube: "lim" }), 60);
      for (const t of ["free", "default", "s"]) {
        assert.equal(s.has("tubeway_tube_held_jobs", { tube: t }), false, `no limits, no sample: ${t}`);
        assert.equal(s.has("tubeway_tube_concurrency_limit", { tube: t }), false);
      }
      assert.equal(s.value("tubeway_schedule_runs_total", { schedule: "every5" }), 4);
      assert.equal(s.has("tubeway_schedule_runs_total", { schedule: "hourly" }), false, "not run yet");
      for (const cmd of ["set-concurrency", "set-rate", "schedule"]) {
        assert.equal(
          s.value("beanstalkd_commands_total", { command: cmd }),
          cmd === "set-concurrency" ? 1 : cmd === "set-rate" ? 1 : 2,
        );
      }
    } finally {
      svc.close();
    }
  });
});
