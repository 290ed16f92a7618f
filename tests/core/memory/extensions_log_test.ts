// The extensions' state in the write-ahead log (issue 19): after a crash (every byte
// written kept, nothing closed: kill -9) a restart has every policy, key, dead-letter
// origin and delete-tube; a policy outlives the collection of the file it was set in;
// delete-tube is one record. In process, on MemoryFiles and a manual clock.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { openLogged } from "../../harness/memory_log.ts";
import { MemoryFiles } from "../../harness/files_memory.ts";
import { DIR, logNames } from "../../harness/binlog_fixture.ts";
import { exportBinlog } from "../../../core/memory/beanstalkd_log/export.ts";

const open = openLogged;

describe("extensions survive a crash", () => {
  test("policies, unique keys, dead letters, delete-tube and its reserved jobs", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR]);
    const s1 = open(files, clock);
    const a = s1.c();
    const w = s1.c();
    assert.equal(await a.exchange("set-dlq work 1 dead\r\nset-backoff slow 5 60\r\n"), "DLQ_SET\r\nBACKOFF_SET\r\n");
    assert.equal(await a.exchange("use work\r\nput-unique k 1 0 60 1\r\na\r\n"), "USING work\r\nINSERTED 1\r\n");
    assert.equal(await w.exchange("watch work\r\nreserve\r\n"), "WATCHING 2\r\nRESERVED 1 1\r\na\r\n");
    assert.equal(await w.exchange("release 1 1 0\r\n"), "RELEASED\r\n"); // 1 attempt: dead-lettered
    assert.equal(await a.exchange("put-unique k2 1 0 60 1\r\nb\r\n"), "INSERTED 2\r\n");
    assert.equal(
      await a.exchange("use gone\r\nput 1 0 60 1\r\nc\r\nput 1 0 60 1\r\nd\r\n"),
      "USING gone\r\nINSERTED 3\r\nINSERTED 4\r\n",
    );
    assert.equal(await w.exchange("watch gone\r\nreserve-job 4\r\n"), "WATCHING 3\r\nRESERVED 4 1\r\nd\r\n");
    const before = s1.wal.stats().recordsWritten;
    assert.equal(await a.exchange("delete-tube gone\r\n"), "DELETED 1\r\n");
    assert.equal(s1.wal.stats().recordsWritten, before + 1, "one record for the whole tube");
    // kill -9: nothing closed, every byte written kept
    const s2 = open(files.crash(true), clock);
    const b = s2.c();
    const st1 = await b.exchange("stats-job 1\r\n");
    assert.match(st1, /\ntube: dead\nstate: buried\n/);
    assert.match(st1, /\ndlq-from-tube: work\n\r\n$/);
    assert.doesNotMatch(st1, /unique-key/); // a dead letter leaves its key behind
    assert.match(await b.exchange("stats-job 2\r\n"), /\nunique-key: k2\n\r\n$/);
    assert.equal(await b.exchange("use work\r\nput-unique k2 1 0 60 1\r\nx\r\n"), "USING work\r\nEXISTS 2\r\n");
    // key k left with its dead letter: free in work again
    assert.match(await b.exchange("put-unique k 1 0 60 1\r\nx\r\n"), /^INSERTED \d+\r\n$/);
    assert.match(await b.exchange("stats-tube work\r\n"), /\ndlq-max-attempts: 1\ndlq-tube: dead\nbackoff-base: 0\n/);
    assert.match(
      await b.exchange("stats-tube slow\r\n"),
      /\ndlq-max-attempts: 0\ndlq-tube: \nbackoff-base: 5\nbackoff-cap: 60\n/,
    );
    // job 3 was purged; job 4 was reserved at the delete-tube: it came back with the restart, so it is gone
    assert.equal(await b.exchange("stats-job 3\r\nstats-job 4\r\n"), "NOT_FOUND\r\nNOT_FOUND\r\n");
    s2.svc.close();
  });

  test("a policy outlives the collection of the file it was written in", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR]);
    const s1 = open(files, clock, 4096);
    const a = s1.c();
    assert.equal(await a.exchange("set-dlq work 3 dead\r\n"), "DLQ_SET\r\n");
    const first = logNames(files)[0];
    for (let i = 0; i < 60; i++) {
      const r = await a.exchange(`put 1 0 60 200\r\n${"x".repeat(200)}\r\n`);
      const id = Number(/INSERTED (\d+)/.exec(r)![1]);
      assert.equal(await a.exchange(`delete ${id}\r\n`), "DELETED\r\n");
    }
    assert.ok(!logNames(files).includes(first!), "the first file was collected");
    const s2 = open(files.crash(true), clock, 4096);
    assert.match(await s2.c().exchange("stats-tube work\r\n"), /\ndlq-max-attempts: 3\ndlq-tube: dead\n/);
    s2.svc.close();
  });

  test("a log without extension records replays as before, and clearing a policy is logged", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR]);
    const s1 = open(files, clock);
    const a = s1.c();
    await a.exchange("set-dlq work 3 dead\r\nset-dlq work 0 dead\r\n");
    const s2 = open(files.crash(true), clock);
    assert.equal(await s2.c().exchange("stats-tube work\r\n"), "NOT_FOUND\r\n");
    s2.svc.close();
  });

  test("the export to a beanstalkd log keeps the jobs and says what it drops", async () => {
    const clock = new ManualClock();
    const files = new MemoryFiles([DIR, "/out"]);
    const s1 = open(files, clock);
    const a = s1.c();
    await a.exchange("set-dlq work 1 dead\r\nuse work\r\nwatch work\r\nput-unique k 1 0 60 1\r\na\r\n");
    await a.exchange("put-unique k2 1 0 60 1\r\nb\r\nreserve-job 1\r\nrelease 1 1 0\r\n");
    const r = exportBinlog(DIR, "/out", files.crash(true), () => {}, clock.wallMs());
    assert.equal(r.kind, "done");
    if (r.kind !== "done") return;
    assert.deepEqual(r.jobs.map((j) => [j.id, j.tube, j.state]), [[2, "work", "ready"], [1, "dead", "buried"]]);
    assert.deepEqual(r.lines.slice(1), [
      "dropped the retry policies (set-dlq, set-backoff) of 1 tube: work",
      "dropped the put-unique keys of 1 job (the jobs are exported)",
      "dropped where 1 dead letter came from (they stay buried in their dead-letter tube)",
    ]);
    s1.svc.close();
  });
});
