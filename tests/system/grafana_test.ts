// packaging/grafana/tubeway.json stays true to /metrics: every metric a panel or
// variable queries is one the server exports (with the log on, so its families show).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../harness/paths.ts";
import { Scrape } from "../harness/prometheus.ts";
import { ManualClock } from "../../core/clock.ts";
import { noWal } from "../../core/wal.ts";
import { FSYNC_BOUNDS_MS, Histogram } from "../../core/histogram.ts";
import { Service } from "../../protocol/service.ts";
import { Queue } from "../../core/queue.ts";
import { renderMetrics } from "../../protocol/http/metrics.ts";

function exprsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) { for (const n of node) exprsOf(n, out); }
  else if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if ((k === "expr" || k === "definition") && typeof v === "string") out.push(v);
      else exprsOf(v, out);
    }
  }
  return out;
}

describe("the Grafana dashboard", () => {
  it("queries only metrics that /metrics exports", async () => {
    const dash = JSON.parse(readFileSync(join(ROOT, "packaging", "grafana", "tubeway.json"), "utf8"));
    assert.equal(dash.uid, "tubeway");
    const health = () => ({
      bytesWritten: 0,
      files: 1,
      diskErrors: 0,
      writable: true,
      fsync: new Histogram(FSYNC_BOUNDS_MS),
    });
    const svc = new Service(new Queue({ clock: new ManualClock(), wal: { ...noWal(0), health } }), {
      log: () => {},
      error: () => {},
    });
    try {
      const text = await renderMetrics({ engine: svc.engine, counters: svc.counters, startedAtMs: 0, version: "x" });
      const exported = new Set(new Scrape(text).families.map((f) => f.name));
      const exprs = exprsOf(dash);
      assert.ok(exprs.length > 20, `${exprs.length} queries`);
      const used = new Set(exprs.flatMap((e) => e.match(/\b(?:beanstalkd|tubeway)_[a-z_]+/g) ?? []));
      for (const name of used) {
        const family = name.replace(/_(bucket|sum|count)$/, "");
        assert.ok(exported.has(name) || exported.has(family), `${name} is exported`);
      }
      assert.ok(used.size >= 15, `${used.size} metrics used`);
    } finally {
      svc.close();
    }
  });
});
