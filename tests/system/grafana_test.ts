// packaging/grafana/tubeway.json stays true to /metrics: every metric a panel or
// variable queries is one the server exports (with the log on and a database under the
// engine, as --pg has, so their families show).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../harness/paths.ts";
import { Scrape } from "../harness/prometheus.ts";
import { ManualClock } from "../../core/clock.ts";
import { noWal } from "../../core/memory/wal.ts";
import { FSYNC_BOUNDS_MS, Histogram } from "../../core/histogram.ts";
import { Service } from "../../protocol/service.ts";
import { Queue } from "../../core/memory/queue.ts";
import { renderMetrics } from "../../protocol/http/metrics.ts";
import { BATCH_BOUNDS, PG_BOUNDS_MS } from "../../core/pg/metrics.ts";
import type { DatabaseHealth } from "../../core/engine.ts";

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
    const queue = new Queue({ clock: new ManualClock(), wal: { ...noWal(0), health } });
    // the --pg engine's families too: the figures a node over PostgreSQL reports
    const database: DatabaseHealth = {
      available: true,
      reason: "",
      node: 1,
      leaseRemainingMs: 4000,
      poolInUse: 1,
      poolSize: 4,
      statements: new Histogram(PG_BOUNDS_MS),
      commits: new Histogram(PG_BOUNDS_MS),
      batchSizes: new Histogram(BATCH_BOUNDS),
      transactions: 0,
      retries: 0,
      errors: 0,
      nodes: () => Promise.resolve([{ id: 1, host: "h", pid: 1, leaseRemainingMs: 4000, self: true }]),
    };
    const metrics = queue.metrics.bind(queue);
    queue.metrics = () => ({ ...metrics(), database });
    const svc = new Service(queue, { log: () => {}, error: () => {} });
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
      assert.ok(used.has("tubeway_pg_available"), "a panel shows whether the database is available");
    } finally {
      svc.close();
    }
  });
});
