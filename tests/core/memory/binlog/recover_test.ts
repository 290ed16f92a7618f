import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { body, DIR, Engine, logNames, memFiles, summary, T0 } from "../../../harness/binlog_fixture.ts";
import { ID_BLOCK } from "../../../../core/memory/binlog/ids.ts";
import { FILE_HEADER_SIZE, fullRecordSize, SHORT_RECORD_SIZE } from "../../../../core/memory/binlog/codec.ts";
import { MemoryFiles } from "../../../harness/files_memory.ts";

/** Close the engine's log and open it again over the same files. */
function restart(e: Engine, opts = e.opts): Engine {
  e.wal.close();
  const next = new Engine(e.files, opts).open();
  next.now = e.now;
  return next;
}

function newestLog(files: MemoryFiles): string {
  const seqs = logNames(files).map((n) => Number(n.slice("tubeway.".length)));
  return `${DIR}/tubeway.${Math.max(...seqs)}`;
}

/** A log whose newest file ends with `tail`'s records; returns the engine and files. */
function sampleLog() {
  const files = memFiles();
  const e = new Engine(files).open();
  const a = e.put("default", body("a"));
  const b = e.put("emails", body("bbbb"), { pri: 7, delayMs: 30_000 });
  const c = e.put("default", body("c"));
  e.reserve(c);
  e.bury(c, 5);
  return { files, e, a, b, c };
}

describe("recovery", () => {
  test("every state and every logged command comes back", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    const ready = e.put("default", body("ready"), { pri: 3 });
    const delayed = e.put("t1", body("delayed"), { delayMs: 60_000 });
    const reserved = e.put("t1", body("reserved"));
    e.reserve(reserved);
    const buried = e.put("t2", body("buried"));
    e.reserve(buried);
    e.bury(buried, 9);
    const kicked = e.put("t2", body("kicked"));
    e.reserve(kicked);
    e.bury(kicked, 1);
    e.kick(kicked);
    const kickedDelayed = e.put("t3", body("kicked-delayed"), { delayMs: 5000 });
    e.kick(kickedDelayed);
    const released0 = e.put("t3", body("released0"));
    e.reserve(released0);
    e.release(released0, 42, 0);
    e.now += 1000;
    const releasedDelay = e.put("t3", body("released-delay"));
    e.reserve(releasedDelay);
    e.release(releasedDelay, 43, 90_000);
    const deleted = e.put("t4", body("deleted"));
    e.delete(deleted);
    const expected = summary(e.expected([buried]));
    e = restart(e);
    assert.deepEqual(summary(e.recovered.jobs), expected);
    const got = new Map(e.recovered.jobs.map((j) => [j.id, j]));
    assert.equal(got.get(reserved)?.state, "ready");
    assert.equal(got.get(released0)?.pri, 42);
    assert.equal(got.get(released0)?.releases, 1, "a release with delay 0 is logged (#597)");
    assert.equal(got.get(releasedDelay)?.deadlineAtMs, T0 + 1000 + 90_000, "absolute deadline kept");
    assert.equal(got.get(delayed)?.deadlineAtMs, T0 + 60_000);
    assert.equal(got.get(kicked)?.kicks, 1);
    assert.equal(got.has(deleted), false);
    assert.ok(e.recovered.maxId >= deleted);
    assert.equal(e.recovered.fileOf.get(ready), 1);
    assert.equal(e.wal.fileOf(ready), 1);
    assert.deepEqual(e.logs, []);
    // the next start writes tubeway.2 and keeps ids moving up
    assert.equal(e.wal.stats().currentIndex, 2);
    assert.ok(e.put("default", body("new")) > deleted);
  });

  test("buried jobs come back in bury order, not id or log order", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    const ids = [1, 2, 3, 4].map((i) => e.put("default", body(`j${i}`)));
    const [j1, j2, j3, j4] = ids as [number, number, number, number];
    for (const id of [j3, j1, j4, j2]) e.reserve(id);
    e.bury(j3, 0);
    e.bury(j1, 0);
    e.bury(j4, 0);
    e = restart(e);
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [j2, j3, j1, j4]);
    e.bury(j2, 0);
    e.kick(j1);
    e.reserve(j1);
    e.bury(j1, 0);
    e = restart(e);
    assert.deepEqual(e.recovered.jobs.filter((j) => j.state === "buried").map((j) => j.id), [j3, j4, j2, j1]);
  });

  test("a job of the maximum size is replayed, even after -z shrinks", () => {
    const files = memFiles();
    let e = new Engine(files, { maxJobSize: 65535 }).open();
    const max = new Uint8Array(65535 + 2).fill(0x41);
    max.set([13, 10], 65535);
    const id = e.put("default", max);
    const after = e.put("default", body("after"));
    e = restart(e, { maxJobSize: 100 });
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [id, after]);
    assert.deepEqual(e.recovered.jobs[0]!.body, max);
    assert.deepEqual(e.logs, []);
  });

  test("truncating the newest file at every offset of its last record", () => {
    for (const lastIsPut of [true, false]) {
      const { files, e, a, b, c } = sampleLog();
      let last = 0;
      if (lastIsPut) last = e.put("late", body("the last one"));
      else e.delete(a);
      e.wal.close();
      const path = newestLog(files);
      const full = files.read(path);
      const lastSize = lastIsPut
        ? fullRecordSize({ ...e.logged.get(last)!, body: body("the last one") })
        : SHORT_RECORD_SIZE;
      const start = full.length - lastSize;
      for (let cut = start; cut < full.length; cut++) {
        const copy = files.crash(true);
        copy.put(path, full.subarray(0, cut));
        const r = new Engine(copy).open();
        const ids = r.recovered.jobs.map((j) => j.id).sort((x, y) => x - y);
        assert.deepEqual(ids, [a, b, c], `cut at ${cut}`);
        assert.equal(r.recovered.jobs.find((j) => j.id === c)?.state, "buried");
        assert.ok(r.recovered.maxId >= Math.max(a, b, c, last), `maxId at cut ${cut}`);
        if (cut > start) assert.match(r.logs[0]!, new RegExp(`^${path}:${start}: truncated record`));
        else assert.deepEqual(r.logs, []);
        r.wal.close();
      }
    }
  });

  test("flipped bytes in the middle cost only the records they hit", () => {
    const files = memFiles();
    const e = new Engine(files).open();
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push(e.put("default", body(`job number ${i}`)));
    e.wal.close();
    const path = `${DIR}/tubeway.1`;
    const clean = files.read(path);
    // offsets of each put record (the first put carries an id reservation before it)
    const offsets: number[] = [];
    let off = FILE_HEADER_SIZE + 24;
    for (let i = 0; i < 20; i++) {
      offsets.push(off);
      off += fullRecordSize({ ...e.logged.get(ids[i]!)!, body: body(`job number ${i}`) });
    }
    for (const [what, delta] of [["payload", 30], ["length field", 5], ["marker", 0], ["header crc", 14]] as const) {
      const copy = files.crash(true);
      const bad = clean.slice();
      bad[offsets[7]! + delta] = bad[offsets[7]! + delta]! ^ 0x10;
      bad[offsets[12]! + delta] = bad[offsets[12]! + delta]! ^ 0x01;
      copy.put(path, bad);
      const r = new Engine(copy).open();
      const got = r.recovered.jobs.map((j) => j.id);
      assert.deepEqual(got, ids.filter((_, i) => i !== 7 && i !== 12), what);
      assert.match(
        r.logs[0]!,
        new RegExp(`^${path}:${offsets[7]}: .*; skipped ${offsets[8]! - offsets[7]!} bytes$`),
        what,
      );
      assert.match(r.logs[1]!, new RegExp(`^${path}:${offsets[12]}: `), what);
      assert.ok(r.recovered.maxId >= ids[19]!);
      r.wal.close();
    }
  });

  test("a zero-filled file is reported and removed; a zero tail is reported", () => {
    const { files, e, a, b, c } = sampleLog();
    e.wal.close();
    files.put(`${DIR}/tubeway.2`, new Uint8Array(8192));
    const path = `${DIR}/tubeway.1`;
    const withTail = new Uint8Array(files.read(path).length + 4096);
    withTail.set(files.read(path));
    files.put(path, withTail);
    const r = new Engine(files).open();
    assert.deepEqual(r.recovered.jobs.map((j) => j.id).sort(), [a, b, c].sort());
    assert.ok(
      r.logs.some((l) => l === `${path}:${withTail.length - 4096}: 4096 zero bytes at end of file (an unwritten tail)`),
    );
    assert.ok(r.logs.some((l) => l === `${DIR}/tubeway.2:0: file is all zero bytes; file removed`));
    assert.equal(r.wal.stats().currentIndex, 3);
    assert.deepEqual(logNames(files), ["tubeway.1", "tubeway.3"]);
  });

  test("a zero tail up to a block boundary, as preallocation under -f 0 leaves it, is not reported", () => {
    const { files, e, a, b, c } = sampleLog();
    e.wal.close();
    const path = `${DIR}/tubeway.1`;
    const data = files.read(path);
    const padded = (to: number) => {
      const out = new Uint8Array(to);
      out.set(data);
      return out;
    };
    const block = (n: number) => Math.ceil(n / 4096) * 4096;
    // a preallocated tail: at most 64 KiB plus a block, to a multiple of 4096
    files.put(path, padded(block(data.length) + 64 * 1024));
    const r = new Engine(files).open();
    assert.deepEqual(r.recovered.jobs.map((j) => j.id).sort(), [a, b, c].sort());
    assert.deepEqual(r.logs, []);
    r.wal.close();
    // longer than preallocation ever leaves: reported
    const long = padded(block(data.length) + 64 * 1024 + 4096 * 2);
    files.put(path, long);
    const again = new Engine(files).open();
    assert.deepEqual(again.recovered.jobs.map((j) => j.id).sort(), [a, b, c].sort());
    assert.ok(
      again.logs.includes(
        `${path}:${data.length}: ${long.length - data.length} zero bytes at end of file (an unwritten tail)`,
      ),
      again.logs.join("\n"),
    );
    again.wal.close();
  });

  test("a foreign file is reported and left alone; a damaged header still yields its records", () => {
    const { files, e, a, b, c } = sampleLog();
    e.wal.close();
    const garbage = new TextEncoder().encode("GARBAGE ".repeat(500));
    files.put(`${DIR}/tubeway.7`, garbage);
    const bad = files.read(`${DIR}/tubeway.1`);
    bad[20] = bad[20]! ^ 0xff; // inside the header's seq field
    files.put(`${DIR}/tubeway.1`, bad);
    const r = new Engine(files).open();
    assert.deepEqual(r.recovered.jobs.map((j) => j.id).sort(), [a, b, c].sort());
    assert.ok(r.logs.includes(`${DIR}/tubeway.7:0: not a tubeway binlog (bad magic); file ignored`));
    assert.ok(r.logs.includes(`${DIR}/tubeway.1:0: file header checksum mismatch; trying its records anyway`));
    assert.equal(r.wal.stats().currentIndex, 8);
    assert.deepEqual(files.read(`${DIR}/tubeway.7`), garbage);
  });

  test("ids lost with an unsynced tail are never handed out again", async () => {
    // The guarantee: ids are reserved ID_BLOCK at a time, ID_BLOCK/2 ahead of use, and
    // each reservation is fsynced at once. So no id is reused after a power cut as
    // long as fewer than ID_BLOCK/2 puts happen during one fsync (always true with
    // durable acks, where a put is not acknowledged before its fsync).
    for (const unsynced of [1, 100, ID_BLOCK / 2 - 1]) {
      const files = memFiles();
      const e = new Engine(files, { fsyncMs: 0 }).open();
      for (let i = 0; i < 3000; i++) e.put("default", body(`${i}`));
      await e.settle();
      const release = files.holdSyncs();
      const lost: number[] = [];
      for (let i = 0; i < unsynced; i++) lost.push(e.put("default", body(`lost ${i}`)));
      const cut = files.crash(); // only fsynced bytes survive
      release();
      const r = new Engine(cut).open();
      assert.equal(r.recovered.jobs.length, 3000);
      assert.ok(r.recovered.maxId >= lost[lost.length - 1]!, `${unsynced}: ${r.recovered.maxId}`);
      assert.ok(r.recovered.maxId <= lost[lost.length - 1]! + ID_BLOCK, `${unsynced}: ${r.recovered.maxId} ${lost[0]}`);
      assert.ok(r.put("default", body("next")) > lost[lost.length - 1]!);
    }
  });

  test("short records for jobs whose file is gone are ignored", () => {
    const { files, e, a } = sampleLog();
    const r0 = restart(e);
    r0.reserve(a);
    r0.bury(a, 1);
    r0.wal.close();
    files.unlink(`${DIR}/tubeway.1`);
    const r = new Engine(files).open();
    assert.deepEqual(r.recovered.jobs, []);
    assert.deepEqual(r.logs, []);
    assert.ok(r.recovered.maxId >= a, "the high-water in tubeway.2's header survives");
  });
});
