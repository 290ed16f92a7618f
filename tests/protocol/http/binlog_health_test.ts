// The log's health on the side port: bytes, records, files, fsync latency and disk
// errors in /metrics, and /readyz 503 while the log cannot be written (in-memory files
// with an injected write failure).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { MemoryFiles } from "../../harness/files_memory.ts";
import { openBinlog } from "../../../core/memory/binlog/open.ts";
import { Queue } from "../../../core/memory/queue.ts";
import { Service } from "../../../protocol/service.ts";
import { httpHandler } from "../../../protocol/http/handler.ts";
import { localClient } from "../../harness/in_process.ts";
import { Scrape } from "../../harness/prometheus.ts";

describe("the log's health on the side port", () => {
  it("counts bytes, records, files and fsyncs; a failed write makes /readyz 503 until a write succeeds", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles(["/wal"]);
    // Assigned after openBinlog, which needs the lookup first (the linter cannot see the closure's read).
    // deno-lint-ignore prefer-const
    let queue: Queue | undefined;
    const { wal } = openBinlog(
      { dir: "/wal", fsyncMs: 0, durableAcks: false, maxFileSize: 65536, maxJobSize: 1000, log: () => {} },
      files,
      clock,
      (id) => queue?.liveRecord(id),
    );
    queue = new Queue({ clock, wal });
    const svc = new Service(queue, { log: () => {}, error: () => {} });
    const handle = httpHandler(svc, { version: "x" });
    const scrape = async () => new Scrape(await (await handle(new Request("http://t/metrics"))).text());
    const ready = async () => {
      const r = await handle(new Request("http://t/readyz"));
      return [r.status, await r.text()];
    };
    try {
      const c = localClient(svc);
      assert.equal(await c.exchange("put 0 0 60 5\r\nhello\r\n"), "INSERTED 1\r\n");
      await new Promise((r) => setTimeout(r, 20)); // the group-commit fsync runs in a microtask
      let s = await scrape();
      assert.equal(s.value("tubeway_binlog_enabled"), 1);
      assert.equal(s.value("tubeway_binlog_records_written_total"), 1);
      assert.ok(s.value("tubeway_binlog_written_bytes_total") > 5);
      assert.equal(s.value("tubeway_binlog_files"), 1);
      assert.equal(s.value("tubeway_binlog_writable"), 1);
      assert.equal(s.value("tubeway_binlog_disk_errors_total"), 0);
      assert.ok(s.histogram("tubeway_binlog_fsync_seconds").count >= 1);
      assert.deepEqual(await ready(), [200, "ready\n"]);

      files.failAppend(1, { code: "EIO" });
      assert.equal(await c.exchange("put 0 0 60 1\r\nx\r\n"), ""); // not logged: dropped without a reply
      s = await scrape();
      assert.equal(s.value("tubeway_binlog_writable"), 0);
      assert.equal(s.value("tubeway_binlog_disk_errors_total"), 1);
      assert.deepEqual(await ready(), [503, "log not writable\n"]);

      const again = localClient(svc);
      assert.match(await again.exchange("put 0 0 60 1\r\ny\r\n"), /^INSERTED \d+\r\n$/);
      assert.deepEqual(await ready(), [200, "ready\n"]);
      again.close();
    } finally {
      svc.close();
      wal.close();
    }
  });
});
