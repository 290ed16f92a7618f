import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { body, DIR, Engine, logBytes, logNames, memFiles, ok, summary } from "../../../harness/binlog_fixture.ts";
import { openBinlog, WalOpenError } from "../../../../core/memory/binlog/open.ts";
import { ballastFor, WRITE_RESERVE } from "../../../../core/memory/binlog/ballast.ts";
import { MemoryFiles } from "../../../harness/files_memory.ts";
import { jobRecord } from "../../../harness/job_record.ts";
import type { AppendFile } from "../../../../core/files.ts";
import { FILE_HEADER_SIZE, IDS_RECORD_SIZE } from "../../../../core/memory/binlog/codec.ts";

function restart(e: Engine): Engine {
  e.wal.close();
  return new Engine(e.files, e.opts).open();
}

describe("writing", () => {
  test("records written for beanstalkd's sample sequence, plus the delay-0 release", () => {
    const e = new Engine(memFiles()).open();
    const a = e.put("default", body("x"));
    e.reserve(a);
    e.release(a, 0, 0); // beanstalkd does not log this (#597); we do
    e.reserve(a);
    e.bury(a, 0);
    e.kick(a);
    const b = e.put("default", body("y"), { delayMs: 1000 });
    e.delete(b);
    assert.equal(e.wal.stats().recordsWritten, 6);
    assert.deepEqual(e.wal.stats(), {
      oldestIndex: 1,
      currentIndex: 1,
      maxSize: 10 * 1024 * 1024,
      recordsWritten: 6,
      recordsMigrated: 0,
    });
  });

  test("rotation at -s, and fileOf follows the job's full record", () => {
    const files = memFiles();
    let e = new Engine(files, { maxFileSize: 4096 }).open();
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) ids.push(e.put("default", body("x".repeat(500))));
    const seqs = new Set(ids.map((id) => e.wal.fileOf(id)));
    assert.ok(seqs.size >= 5, `${seqs.size} files`);
    for (const name of logNames(files)) assert.ok(files.bytes(`${DIR}/${name}`).length <= 4096, name);
    assert.equal(e.wal.stats().oldestIndex, 1);
    assert.equal(e.wal.stats().currentIndex, Math.max(...seqs));
    const big = e.put("default", body("y".repeat(10_000))); // bigger than -s: a file of its own
    assert.equal(files.bytes(`${DIR}/tubeway.${e.wal.fileOf(big)}`).length > 4096, true);
    const before = new Map(ids.map((id) => [id, e.wal.fileOf(id)]));
    e = restart(e);
    for (const id of ids) assert.equal(e.recovered.fileOf.get(id), before.get(id));
    assert.equal(e.recovered.jobs.length, 41);
  });

  test("an update for a job the log does not hold writes nothing", () => {
    const e = new Engine(memFiles()).open();
    assert.equal(e.wal.update(jobRecord(99, { tube: "t", pri: 0, ttrMs: 1, createdAtMs: 0, state: "deleted" })), true);
    assert.equal(e.wal.stats().recordsWritten, 0);
  });

  test("after close nothing is accepted", async () => {
    const e = new Engine(memFiles()).open();
    e.put("default", body("x"));
    e.wal.close();
    assert.equal(e.put("default", body("y")), 0);
    assert.equal(await ok(e.wal.synced()), true);
  });
});

describe("disk trouble", () => {
  test("ENOSPC on a chosen write: the write reserve takes one; the record is written once, whole", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    const a = e.put("default", body("a"));
    const size = files.bytes(`${DIR}/tubeway.1`).length;
    const ballast = e.wal.usage().ballast;
    files.failAppend(1, { code: "ENOSPC", partial: 10 });
    const b = e.put("default", body("b"));
    assert.ok(b > 0, "accepted records are written with room from the ballast");
    // tubeway.1: header, the id reservation, a's record; then b's record, as long as a's
    const record = size - FILE_HEADER_SIZE - IDS_RECORD_SIZE;
    assert.equal(files.bytes(`${DIR}/tubeway.1`).length, size + record, "the short write was cut back first");
    assert.ok(e.wal.usage().ballast < ballast);
    assert.deepEqual(e.logs, []);
    e = restart(e);
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [a, b]);
    assert.deepEqual(e.logs, []);
  });

  test("ENOSPC on a chosen write, again after the reserve gave room: that put is refused, nothing half-written stays, later ones work", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    const a = e.put("default", body("a"));
    const size = files.bytes(`${DIR}/tubeway.1`).length;
    files.failAppend(1, { code: "ENOSPC", partial: 10 });
    files.failAppend(2, { code: "ENOSPC", partial: 10 });
    assert.equal(e.put("default", body("b")), 0);
    assert.equal(files.bytes(`${DIR}/tubeway.1`).length, size, "the short write was cut back");
    assert.equal(e.logs.length, 1);
    assert.match(e.logs[0]!, /cannot write .*tubeway\.1: ENOSPC/);
    const c = e.put("default", body("c"));
    assert.ok(c > 0);
    assert.equal(e.delete(a), true);
    e = restart(e);
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [c]);
    assert.deepEqual(e.logs, []);
  });

  test("EIO on a write: refused, and the next write goes to a new file", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    e.put("default", body("a"));
    files.failAppend(1, { code: "EIO" });
    assert.equal(e.put("default", body("b")), 0);
    assert.ok(e.put("default", body("c")) > 0);
    assert.equal(e.wal.stats().currentIndex, 2);
    e = restart(e);
    assert.equal(e.recovered.jobs.length, 2);
  });

  test("a failed delete write leaves the job in the log", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    const a = e.put("default", body("a"));
    files.failAppend(1, { code: "EIO" });
    assert.equal(e.delete(a), false);
    e = restart(e);
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [a]);
  });

  test("disk full: puts are refused but every delete still gets logged (the ballast)", async () => {
    const files = memFiles();
    files.capacity = 256 * 1024;
    let e = new Engine(files, { maxFileSize: 8192 }).open();
    const ids: number[] = [];
    for (;;) {
      const id = e.put("default", body("p".repeat(300)));
      if (!id) break;
      ids.push(id);
      if (ids.length % 50 === 0) await e.settle();
    }
    assert.ok(ids.length > 100, `${ids.length} puts fit`);
    assert.ok(e.wal.usage().ballast >= ballastFor(ids.length) - 16384);
    // fill the last bytes so that even a short record has no room without the ballast
    files.capacity = files.used();
    for (const id of ids) {
      assert.equal(e.delete(id), true, `delete ${id}`);
      if (id % 50 === 0) await e.settle();
    }
    await e.settle();
    e.now += 1;
    e.wal.tick(e.now);
    await e.settle();
    // dead files went away, so there is room again
    assert.ok(e.put("default", body("again")) > 0);
    e = restart(e);
    assert.equal(e.recovered.jobs.length, 1);
  });

  test("a disk full at startup: open works, puts are refused until there is room", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    const a = e.put("default", body("a"));
    e.wal.close();
    files.capacity = files.used();
    e = new Engine(files).open();
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [a]);
    assert.ok(e.logs.some((l) => /cannot (create|write) .*tubeway\.2/.test(l)), e.logs.join("\n"));
    assert.equal(e.put("default", body("b")), 0);
    files.capacity = Infinity;
    const c = e.put("default", body("c"));
    assert.ok(c > a);
    assert.equal(e.delete(a), true);
    e = restart(e);
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [c]);
  });

  test("a failed fsync rewrites the live jobs into a new file; synced() still means durable", async () => {
    const files = memFiles();
    let e = new Engine(files, { durableAcks: true, fsyncMs: "never" }).open();
    for (let i = 0; i < 5; i++) e.put("default", body(`${i}`));
    assert.equal(await ok(e.wal.synced()), true);
    const b = e.put("other", body("b"));
    e.reserve(b);
    e.bury(b, 3);
    files.failSync(1, { code: "EIO" });
    assert.equal(await ok(e.wal.synced()), true);
    assert.ok(e.logs.some((l) => /fsync failed: EIO/.test(l)));
    assert.equal(e.wal.stats().currentIndex, 2);
    assert.equal(e.wal.stats().recordsMigrated, 6);
    const expected = summary(e.expected([b]));
    const survived = new Engine(files.crash(), e.opts).open();
    assert.deepEqual(summary(survived.recovered.jobs), expected);
    // two failures in a row: the waiter is told (the promise rejects)
    files.failSync(1, { code: "EIO" });
    files.failSync(2, { code: "EIO" });
    e.put("default", body("x"));
    assert.equal(await ok(e.wal.synced()), false);
    e.put("default", body("y"));
    assert.equal(await ok(e.wal.synced()), true);
    e = restart(e);
    assert.equal(e.recovered.jobs.length, 8);
  });
});

describe("fsync policy", () => {
  test("group commit: many synced() calls in one turn cost one fsync", async () => {
    const files = memFiles();
    const e = new Engine(files, { durableAcks: true, fsyncMs: "never" }).open();
    // the first put reserves a block of ids, which ids.N keeps too: that round
    // fsyncs it as well (once per ID_BLOCK / 2 ids), so it is left out of the count
    e.put("default", body("first"));
    await e.wal.synced();
    const base = files.fsyncs;
    const waits: Promise<boolean>[] = [];
    for (let i = 0; i < 100; i++) {
      e.put("default", body(`${i}`));
      waits.push(ok(e.wal.synced()));
    }
    assert.deepEqual(await Promise.all(waits), Array(100).fill(true));
    assert.equal(files.fsyncs - base, 1);
    // callers arriving while an fsync runs share the next one
    const release = files.holdSyncs();
    e.put("default", body("a"));
    const first = ok(e.wal.synced());
    await Promise.resolve();
    await Promise.resolve();
    const more: Promise<boolean>[] = [];
    for (let i = 0; i < 50; i++) {
      e.put("default", body(`b${i}`));
      more.push(ok(e.wal.synced()));
    }
    release();
    assert.equal(await first, true);
    assert.deepEqual(await Promise.all(more), Array(50).fill(true));
    assert.equal(files.fsyncs - base, 3);
    // nothing new written: resolves at once, no fsync
    assert.equal(await ok(e.wal.synced()), true);
    assert.equal(files.fsyncs - base, 3);
  });

  test("durable acks survive a power cut; unacknowledged writes may not", async () => {
    const files = memFiles();
    const e = new Engine(files, { durableAcks: true, fsyncMs: "never" }).open();
    const acked: number[] = [];
    for (let i = 0; i < 20; i++) {
      const id = e.put("default", body(`${i}`));
      if (await ok(e.wal.synced())) acked.push(id);
    }
    const r = new Engine(files.crash(), e.opts).open();
    assert.deepEqual(r.recovered.jobs.map((j) => j.id), acked);
  });

  test("-f MS: at most one fsync per interval, and tick() flushes a quiet tail", async () => {
    const files = memFiles();
    const e = new Engine(files, { fsyncMs: 50 }).open();
    e.put("default", body("first")); // reserves ids: that round fsyncs ids.N too
    await e.settle();
    e.now += 100;
    const base = files.fsyncs;
    e.put("default", body("a")); // the first write after a quiet spell syncs at once
    await e.settle();
    assert.equal(files.fsyncs - base, 1);
    e.now += 10;
    e.put("default", body("b"));
    await e.settle();
    assert.equal(files.fsyncs - base, 1);
    assert.equal(e.wal.tick(e.now), 40);
    e.now += 40;
    assert.equal(e.wal.tick(e.now), 50);
    await e.settle();
    assert.equal(files.fsyncs - base, 2);
    assert.equal(e.wal.tick(e.now + 1000), undefined, "nothing left to flush");
    assert.equal(await ok(e.wal.synced()), true, "not in durable mode: resolves at once");
  });

  test("-F: never fsync", async () => {
    const files = memFiles();
    const e = new Engine(files, { fsyncMs: "never" }).open();
    for (let i = 0; i < 10; i++) e.put("default", body(`${i}`));
    await e.settle();
    assert.equal(e.wal.tick(e.now + 1e6), undefined);
    e.wal.close();
    assert.equal(files.fsyncs, 0);
  });
});

describe("growth stays bounded", () => {
  const S = 4096;

  test("put/delete cycles", async () => {
    for (const fsyncMs of [0, 50, "never"] as const) {
      const files = memFiles();
      let e = new Engine(files, { maxFileSize: S, fsyncMs }).open();
      const keep = e.put("default", body("long-lived"));
      let max = 0;
      for (let i = 0; i < 20_000; i++) {
        const id = e.put("default", body(`job ${i} ${"x".repeat(i % 200)}`));
        e.reserve(id);
        e.delete(id);
        // the server yields between commands; fsyncs (and removals) happen then
        if (i % 10 === 0) {
          e.now += 5;
          e.wal.tick(e.now);
          await e.settle();
        }
        max = Math.max(max, logBytes(files));
      }
      assert.ok(max <= 3 * S, `${fsyncMs}: peak ${max} bytes`);
      e = restart(e);
      assert.deepEqual(e.recovered.jobs.map((j) => j.id), [keep]);
    }
  });

  test("jobs released with a delay again and again (#622)", async () => {
    const files = memFiles();
    let e = new Engine(files, { maxFileSize: S, fsyncMs: 50 }).open();
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) ids.push(e.put(`t${i % 3}`, body(`delayed ${i}`), { delayMs: 3_600_000 }));
    let max = 0;
    for (let round = 0; round < 3000; round++) {
      for (const id of ids) {
        e.reserve(id);
        e.release(id, round, 3_600_000);
      }
      e.now += 5;
      e.wal.tick(e.now);
      await e.settle();
      max = Math.max(max, logBytes(files));
    }
    assert.ok(max <= 3 * S, `peak ${max} bytes`);
    assert.ok(e.wal.stats().recordsMigrated > 0);
    const expected = e.expected();
    e = restart(e);
    const got = e.recovered.jobs;
    assert.deepEqual(
      got.map((j) => [j.id, j.state, j.pri, j.deadlineAtMs, j.releases]),
      expected.map((j) => [j.id, j.state, j.pri, j.deadlineAtMs, j.releases]),
    );
  });

  test("compaction keeps every state, the bury order and the bodies", async () => {
    const files = memFiles();
    let e = new Engine(files, { maxFileSize: S }).open();
    const b1 = e.put("a", body("buried first"));
    const d = e.put("b", body("delayed"), { delayMs: 99_000 });
    const r = e.put("c", body("reserved"));
    const b2 = e.put("a", body("buried second"));
    const plain = e.put("a", body("ready"), { pri: 5 });
    e.reserve(b2);
    e.bury(b2, 1);
    e.reserve(b1);
    e.bury(b1, 2);
    e.reserve(r);
    for (let i = 0; i < 5000; i++) {
      const id = e.put("churn", body(`c${i}`));
      e.delete(id);
      if (i % 100 === 0) await e.settle();
    }
    await e.settle();
    assert.ok(e.wal.stats().recordsMigrated >= 5);
    assert.ok(e.wal.stats().oldestIndex > 1);
    for (const id of [b1, d, r, b2, plain]) assert.ok(e.wal.fileOf(id) >= e.wal.stats().oldestIndex);
    const live = new Map(e.jobs);
    e = restart(e);
    const got = new Map(e.recovered.jobs.map((j) => [j.id, j]));
    assert.deepEqual(e.recovered.jobs.filter((j) => j.state === "buried").map((j) => j.id), [b2, b1]);
    assert.equal(got.get(r)!.state, "ready");
    assert.equal(got.get(r)!.reserves, 1, "a moved record carries the live counters");
    assert.equal(got.get(d)!.deadlineAtMs, live.get(d)!.deadlineAtMs);
    assert.equal(got.get(plain)!.pri, 5);
    for (const id of [b1, d, r, b2, plain]) assert.deepEqual(got.get(id)!.body, live.get(id)!.body);
  });
});

/**
 * In-memory files whose power cut also loses names: besides every byte not yet
 * fsynced, a file that no directory fsync has covered since it was created is gone.
 * Removals count as durable at once (the harder case for the log). holdSyncs()
 * holds directory fsyncs too (a blocking fsync, of a file or of the directory,
 * still goes through).
 */
class NamedFiles extends MemoryFiles {
  #named = new Set<string>();
  #dirGate: Promise<void> | undefined;

  constructor() {
    super([DIR]);
  }

  override holdSyncs(): () => void {
    const releaseFiles = super.holdSyncs();
    let release!: () => void;
    this.#dirGate = new Promise<void>((r) => (release = r));
    return () => {
      this.#dirGate = undefined;
      release();
      releaseFiles();
    };
  }

  override syncDir(dir: string): Promise<void> {
    const names = [...this.nodes.keys()];
    const gate = this.#dirGate;
    return super.syncDir(dir).then(() => gate).then(() => {
      for (const path of names) this.#named.add(path);
    });
  }

  override syncDirNow(dir: string): void {
    super.syncDirNow(dir);
    for (const path of this.nodes.keys()) this.#named.add(path);
  }

  powerCut(): MemoryFiles {
    const m = this.crash();
    for (const path of [...m.nodes.keys()]) if (!this.#named.has(path)) m.nodes.delete(path);
    return m;
  }
}

describe("dead files go without waiting for an fsync", () => {
  const S = 4096;

  test("put/delete churn while every fsync hangs: bounded, and a power cut reuses no id", async () => {
    const files = new NamedFiles();
    const e = new Engine(files, { maxFileSize: S, fsyncMs: 50 }).open();
    e.delete(e.put("default", body("first"))); // reserves ids up to 4097; this round makes ids.N durable
    await e.settle();
    const release = files.holdSyncs();
    let max = 0;
    let last = 0;
    // 1500 ids: within the reservation that is already on disk
    for (let i = 0; i < 1500; i++) {
      last = e.put("default", body(`job ${i} ${"x".repeat(i % 200)}`));
      e.reserve(last);
      e.delete(last);
      if (i % 10 === 0) {
        e.now += 5;
        e.wal.tick(e.now);
        await e.settle();
      }
      max = Math.max(max, logBytes(files));
    }
    assert.ok(max <= 2 * S, `peak ${max} bytes`);
    assert.ok(logNames(files).length <= 2, logNames(files).join(","));
    assert.ok(e.wal.stats().oldestIndex > 50, `oldest ${e.wal.stats().oldestIndex}: files went while no fsync ended`);

    const cut = files.powerCut();
    // every log file an fsync reached is gone: the log files alone would hand out ids again ...
    const logsOnly = cut.crash(true);
    for (const path of [...logsOnly.nodes.keys()]) if (/\/ids\.\d+$/.test(path)) logsOnly.nodes.delete(path);
    const without = new Engine(logsOnly, e.opts).open();
    assert.ok(without.nextId <= last, `the log files alone: next id ${without.nextId}`);
    without.wal.close();
    // ... but ids.N keeps the high-water
    const r = new Engine(cut, e.opts).open();
    assert.deepEqual(r.recovered.jobs, []);
    assert.ok(r.nextId > last, `next id ${r.nextId}, handed out up to ${last}`);
    r.wal.close();
    release();
    await e.settle();
    e.wal.close();
  });

  test("jobs released with a delay again and again while every fsync round hangs: bounded (#622)", async () => {
    // The moves that compaction writes land in files created after the last round
    // began, so only a round that ends later could put their names on disk; when
    // rounds end late (a busy event loop, a loaded machine), the back-pressure
    // fsync must cover the names itself, or the dead files pile up meanwhile.
    const files = new NamedFiles();
    const e = new Engine(files, { maxFileSize: S, fsyncMs: 50 }).open();
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(e.put("default", body(`released ${i} ${"r".repeat(100)}`), { pri: i }));
    await e.settle(); // the puts, ids.N and the names on disk
    const release = files.holdSyncs();
    let max = 0;
    for (let round = 0; round < 400; round++) {
      for (const [i, id] of ids.entries()) {
        e.reserve(id);
        e.release(id, 1000 + i, 1_000_000);
      }
      e.now += 1;
      e.wal.tick(e.now);
      await e.settle();
      max = Math.max(max, logBytes(files));
    }
    assert.ok(e.wal.stats().recordsMigrated > 20, `${e.wal.stats().recordsMigrated} moves`);
    assert.ok(max <= 4 * S, `peak ${max} bytes, ${logNames(files).length} files`);
    // no job lost: each comes back delayed, with some of its releases (the rest were not fsynced)
    const r = new Engine(files.powerCut(), e.opts).open();
    assert.deepEqual(r.recovered.jobs.map((j) => [j.id, j.state]), ids.map((id) => [id, "delayed"]));
    for (const j of r.recovered.jobs) assert.ok(j.releases > 0 && j.releases <= 400, `${j.id}: ${j.releases}`);
    r.wal.close();
    release();
    await e.settle();
    e.wal.close();
  });

  test("when ids.N cannot be made durable, dead files wait for the sync again: no id is reused", async () => {
    const files = new NamedFiles();
    const e = new Engine(files, { maxFileSize: S, fsyncMs: 50 }).open();
    files.failSync(1, { code: "EIO" }); // this round fsyncs ids.N first: it fails, the log's fsync works
    const first = e.put("default", body("first")); // reserves ids up to 4097: in tubeway.1 and in ids.N
    await e.settle();
    assert.ok(e.logs.some((l) => /fsync of the id high-water failed/.test(l)), e.logs.join("\n"));
    const release = files.holdSyncs();
    e.delete(first);
    let last = 0;
    // until tubeway.1 is dead and closed, no further: dead files beyond -s would
    // bring the back-pressure's blocking fsync, which makes the log durable at once
    for (let i = 0; e.wal.stats().currentIndex < 2; i++) {
      assert.ok(i < 200, "no rotation");
      last = e.put("default", body(`job ${i} ${"x".repeat(100)}`));
      e.delete(last);
      if (i % 10 === 0) await e.settle();
    }
    await e.settle();
    // tubeway.1 holds the only durable id high-water: it stays
    assert.ok(logNames(files).includes("tubeway.1"), logNames(files).join(","));
    const r = new Engine(files.powerCut(), e.opts).open();
    assert.ok(r.nextId > last, `next id ${r.nextId}, handed out up to ${last}`);
    r.wal.close();
    release();
    for (let i = 0; i < 5; i++) {
      e.now += 60;
      e.wal.tick(e.now);
      await e.settle();
    }
    assert.ok(!logNames(files).includes("tubeway.1"), "removed once the sync came");
    e.wal.close();
  });

  test("ids.N: a new file per start and when one fills; older ones go once a newer one is on disk", async () => {
    const files = memFiles();
    const idsFiles = () => files.list(DIR).filter((n) => n.startsWith("ids."));
    let e = new Engine(files, { fsyncMs: 50 }).open();
    for (let i = 0; i < 400; i++) {
      e.nextId += 4096; // every put reserves a new block
      e.delete(e.put("default", body(`${i}`)));
      if (i % 20 === 0) {
        e.now += 60;
        e.wal.tick(e.now);
        await e.settle();
      }
    }
    e.now += 60;
    e.wal.tick(e.now);
    await e.settle();
    const names = idsFiles();
    assert.equal(names.length, 1, names.join(","));
    assert.ok(names[0] !== "ids.1", "400 reservations do not fit in one file");
    const top = e.nextId - 1;
    for (let k = 0; k < 3; k++) {
      e = restart(e);
      assert.ok(e.nextId > top, `next id ${e.nextId}`);
      e.now += 60;
      e.wal.tick(e.now);
      await e.settle();
      assert.equal(idsFiles().length, 1, idsFiles().join(","));
    }
    // the high-water survives in ids.N alone
    for (const name of logNames(files)) files.unlink(`${DIR}/${name}`);
    e.wal.close();
    e = new Engine(files, e.opts).open();
    assert.ok(e.nextId > top, `next id ${e.nextId} from ids.N`);
    e.wal.close();
  });

  test("a job moved by compaction keeps its old file until the move is on disk; a power cut then loses nothing", async () => {
    const files = new NamedFiles();
    let e = new Engine(files, { maxFileSize: S, fsyncMs: 50 }).open();
    const keep = e.put("default", body("long-lived"), { pri: 7 });
    const b1 = e.put("default", body("buried second"));
    const b2 = e.put("default", body("buried first"));
    const d = e.put("default", body("delayed"), { delayMs: 3_600_000 });
    e.reserve(b2);
    e.bury(b2, 3);
    e.reserve(b1);
    e.bury(b1, 4);
    await e.settle(); // all of it fsynced, names and ids.N included
    const home = e.wal.fileOf(keep);
    const durable = e.expected([b2, b1]);
    const release = files.holdSyncs();
    let last = 0;
    for (let i = 0; e.wal.fileOf(keep) === home; i++) {
      assert.ok(i < 2000, "compaction never moved the long-lived jobs");
      last = e.put("churn", body(`c${i} ${"y".repeat(100)}`));
      e.delete(last);
      if (i % 10 === 0) await e.settle();
    }
    // The move left every older file dead, more than -s of them: the back-pressure's
    // blocking fsync (files and directory, as no round may end) made the move durable,
    // and only then did the old file go. Changes after the move are not durable.
    assert.ok(!logNames(files).includes(`tubeway.${home}`), `tubeway.${home} went: ${logNames(files)}`);
    e.reserve(keep);
    e.release(keep, 8, 0);
    for (let i = 0; i < 30; i++) e.delete(e.put("churn", body(`more ${i}`)));
    last = e.nextId - 1;
    await e.settle();
    assert.ok(e.wal.stats().recordsMigrated >= 4);

    const r = new Engine(files.powerCut(), e.opts).open();
    // (a churn job may come back: its delete was never fsynced)
    const back = r.recovered.jobs.filter((j) => j.tube !== "churn");
    assert.deepEqual(summary(back), summary(durable), "every job as last fsynced, buried in bury order");
    assert.ok(r.nextId > last, `next id ${r.nextId}, handed out up to ${last}`);
    r.wal.close();

    release();
    for (let i = 0; i < 5; i++) {
      e.now += 60;
      e.wal.tick(e.now);
      await e.settle();
    }
    assert.ok(!logNames(files).includes(`tubeway.${home}`), `tubeway.${home} is removed once the sync covers the move`);
    const live = e.expected([b2, b1]);
    e = restart(e);
    assert.deepEqual(summary(e.recovered.jobs), summary(live));
    assert.equal(e.recovered.jobs.find((j) => j.id === keep)!.pri, 8);
    assert.ok(e.recovered.jobs.find((j) => j.id === d)!.state === "delayed");
    e.wal.close();
  });
});

describe("the directory lock", () => {
  test("a second open of the same directory fails with a clear error", () => {
    const files = memFiles();
    const e = new Engine(files).open();
    assert.throws(() => new Engine(files).open(), (err: unknown) => {
      assert.ok(err instanceof WalOpenError);
      assert.match(err.message, /^failed to lock wal dir \/data\/wal: /);
      return true;
    });
    e.wal.close();
    new Engine(files).open().wal.close();
  });

  test("a missing directory fails with a clear error", () => {
    assert.throws(
      () =>
        openBinlog(
          { dir: "/nope", fsyncMs: 0, durableAcks: false, maxFileSize: 4096, maxJobSize: 100, log: () => {} },
          memFiles(),
          { now: () => 0 },
          () => undefined,
        ),
      /failed to lock wal dir \/nope: no such directory/,
    );
  });
});

/**
 * In-memory files that count the appends to log files (tubeway.N), can make every
 * such append fail while `failLog` is set, and call `onUnlink` after a removal.
 */
class WatchedFiles extends MemoryFiles {
  logAppends = 0;
  failLog = false;
  onUnlink: ((path: string) => void) | undefined;

  constructor() {
    super([DIR]);
  }

  override open(path: string, mode: "new" | "any"): AppendFile {
    const h = super.open(path, mode);
    if (!/\/tubeway\.\d+$/.test(path)) return h;
    return {
      path: h.path,
      size: () => h.size(),
      append: (b: Uint8Array) => {
        this.logAppends++;
        if (this.failLog) throw Object.assign(new Error(`EIO: simulated failure, ${path}`), { code: "EIO" });
        h.append(b);
      },
      truncate: (n: number) => h.truncate(n),
      sync: () => h.sync(),
      syncNow: () => h.syncNow(),
      close: () => h.close(),
    };
  }

  override unlink(path: string): void {
    super.unlink(path);
    this.onUnlink?.(path);
  }
}

/** After every removal of a log file: what a kill -9 now would leave must hold `jobs` as expected. */
function checkEveryRemoval(files: WatchedFiles, e: Engine, ids: number[], buriedOrder: number[]): () => number {
  const want = summary(e.expected(buriedOrder).filter((j) => ids.includes(j.id)));
  let checked = 0;
  files.onUnlink = (path) => {
    if (!/\/tubeway\.\d+$/.test(path)) return;
    const r = new Engine(files.crash(true), e.opts).open();
    const got = r.recovered.jobs.filter((j) => ids.includes(j.id));
    assert.deepEqual(summary(got), want, `after removing ${path}`);
    r.wal.close();
    checked++;
  };
  return () => checked;
}

describe("batched writes", () => {
  test("a batch of records is written with one append, at flush()", async () => {
    const files = new WatchedFiles();
    let e = new Engine(files).open();
    e.autoFlush = false;
    const first = e.put("default", body("first"));
    assert.equal(e.wal.flush(), true);
    const base = files.logAppends;
    const bytes = logBytes(files);
    const ids: number[] = [];
    for (let i = 0; i < 100; i++) ids.push(e.put(`t${i % 3}`, body(`job ${i} ${"x".repeat(i)}`), { pri: i }));
    e.reserve(ids[0]!);
    e.bury(ids[0]!, 7);
    e.delete(ids[1]!);
    e.reserve(ids[2]!);
    e.release(ids[2]!, 3, 5000);
    e.kick(ids[2]!);
    e.delete(first);
    assert.equal(files.logAppends, base, "nothing is written before flush()");
    assert.equal(logBytes(files), bytes);
    assert.equal(e.wal.stats().recordsWritten, 1 + 100 + 5);
    assert.equal(e.wal.flush(), true);
    assert.equal(files.logAppends - base, 1, "one append for the whole batch");
    assert.equal(e.wal.flush(), true, "nothing pending: nothing to do");
    assert.equal(files.logAppends - base, 1);
    const expected = summary(e.expected([ids[0]!]));
    await e.settle();
    e = new Engine(files.crash(true), e.opts).open(); // kill -9: no fsync needed
    assert.deepEqual(summary(e.recovered.jobs), expected);
  });

  test("records left pending by a caller are written at the end of the turn", async () => {
    const files = new WatchedFiles();
    const e = new Engine(files, { fsyncMs: "never" }).open();
    e.autoFlush = false;
    const base = files.logAppends;
    const a = e.put("default", body("a"));
    const b = e.put("default", body("b"));
    assert.equal(files.logAppends, base);
    await Promise.resolve();
    assert.equal(files.logAppends - base, 1);
    const r = new Engine(files.crash(true), e.opts).open();
    assert.deepEqual(r.recovered.jobs.map((j) => j.id), [a, b]);
  });

  test("a failed flush says so, drops its records whole, and the log keeps working", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    e.autoFlush = false;
    const a = e.put("default", body("a"));
    const b = e.put("default", body("b"));
    const c = e.put("default", body("c"), { delayMs: 60_000 });
    assert.equal(e.wal.flush(), true);
    const flushed = e.expected();
    const written = e.wal.stats().recordsWritten;

    // EIO: the batch is lost, the file cut back, and the next batch goes to a new file
    const size = files.bytes(`${DIR}/tubeway.1`).length;
    const lost = e.put("default", body("lost"));
    e.reserve(a);
    e.bury(a, 5);
    e.delete(b);
    e.kick(c);
    files.failAppend(1, { code: "EIO", partial: 30 });
    assert.equal(e.wal.flush(), false);
    assert.equal(files.bytes(`${DIR}/tubeway.1`).length, size, "no partial record stays");
    assert.match(e.logs.join("\n"), /cannot write .*tubeway\.1: EIO/);
    assert.equal(e.wal.stats().recordsWritten, written, "lost records are not counted");
    const d = e.put("default", body("d"));
    const dRec = { ...e.logged.get(d)! };
    assert.equal(e.wal.flush(), true, "later batches are written");
    assert.equal(e.wal.stats().currentIndex, 2);

    // ENOSPC that the write reserve cannot cure either: the same
    const size2 = files.bytes(`${DIR}/tubeway.2`).length;
    e.put("default", body("lost too"));
    e.delete(d);
    files.failAppend(1, { code: "ENOSPC", partial: 10 });
    files.failAppend(2, { code: "ENOSPC", partial: 10 });
    assert.equal(e.wal.flush(), false);
    assert.equal(files.bytes(`${DIR}/tubeway.2`).length, size2, "no partial record stays");
    const f = e.put("default", body("f"));
    assert.equal(e.wal.flush(), true);

    // recovery sees exactly what the successful flushes wrote
    const fRec = e.logged.get(f)!;
    e = new Engine(files.crash(true), e.opts).open();
    assert.deepEqual(summary(e.recovered.jobs), summary([...flushed, dRec, fRec]));
    assert.ok(!e.recovered.jobs.some((j) => j.id === lost));
  });

  test("a full disk: the batch already accepted is written from the write reserve, the next put is refused", () => {
    const files = memFiles();
    let e = new Engine(files).open();
    e.autoFlush = false;
    const a = e.put("default", body("a"));
    assert.equal(e.wal.flush(), true);
    files.capacity = files.used(); // not one byte left
    const batch: number[] = [];
    for (let i = 0; i < 50; i++) batch.push(e.put("default", body(`batch ${i} ${"z".repeat(200)}`)));
    assert.ok(batch.every((id) => id > 0), "accepted: the ballast holds the reserve");
    e.delete(a);
    assert.equal(e.wal.flush(), true, "written: the reserve made room");
    assert.equal(e.put("default", body("one more")), 0, "refused: the reserve cannot be restored");
    assert.equal(e.delete(batch[0]!), true, "deletes still go through");
    assert.equal(e.wal.flush(), true);
    files.capacity = Infinity;
    const d = e.put("default", body("room again"));
    assert.ok(d > 0);
    assert.equal(e.wal.flush(), true);
    const expected = summary(e.expected());
    e = new Engine(files.crash(true), e.opts).open();
    assert.deepEqual(summary(e.recovered.jobs), expected);
  });

  test("a record bigger than the write reserve is written at once: a full disk refuses that command only", () => {
    const files = memFiles();
    let e = new Engine(files, { maxJobSize: 1 << 20 }).open();
    e.autoFlush = false;
    const a = e.put("default", body("a"));
    const big = e.put("default", body("B".repeat(WRITE_RESERVE)));
    assert.ok(big > 0);
    const appends = files.appends;
    assert.equal(e.wal.flush(), true);
    assert.equal(files.appends, appends, "both were written already, by the big put");
    const c = e.put("default", body("c"));
    assert.equal(e.wal.flush(), true);
    files.failAppend(1, { code: "ENOSPC" });
    assert.equal(e.put("default", body("C".repeat(WRITE_RESERVE))), 0, "refused at once, with beanstalkd's reply");
    const d = e.put("default", body("d"));
    assert.equal(e.wal.flush(), true, "the batch goes on");
    e = new Engine(files.crash(true), e.opts).open();
    assert.deepEqual(e.recovered.jobs.map((j) => j.id), [a, big, c, d]);
  });

  test("a write that fails inside a batch (at a rotation) fails that batch's flush() too", () => {
    const files = new WatchedFiles();
    let e = new Engine(files, { maxFileSize: 4096 }).open();
    e.autoFlush = false;
    const first = e.put("default", body("first"));
    assert.equal(e.wal.flush(), true);
    const record = 16 + 76 + "default".length + 502;
    const pending: number[] = [];
    while (e.wal.usage().bytes + record <= 4096) pending.push(e.put("default", body("p".repeat(500))));
    assert.ok(pending.length > 2);
    files.failLog = true; // the rotation writes the pending records first: that fails
    assert.equal(e.put("default", body("p".repeat(500))), 0, "the put that needed the rotation is refused");
    files.failLog = false;
    const after = e.put("default", body("after"));
    assert.ok(after > 0);
    assert.equal(e.wal.flush(), false, "records of this batch were lost: it must not be acknowledged");
    const next = e.put("default", body("next"));
    assert.equal(e.wal.flush(), true);
    e = new Engine(files.crash(true), e.opts).open();
    const back = e.recovered.jobs.map((j) => j.id);
    for (const id of pending) assert.ok(!back.includes(id), `job ${id} was never written`);
    assert.ok(back.includes(first) && back.includes(next), back.join(","));
  });

  test("compaction's moves are written before their old file is removed", async () => {
    for (const fsyncMs of ["never", 50] as const) {
      const files = new WatchedFiles();
      const e = new Engine(files, { maxFileSize: 4096, fsyncMs }).open();
      e.autoFlush = false;
      const keep = e.put("default", body("long-lived"), { pri: 7 });
      const buried = e.put("other", body("buried"));
      const delayed = e.put("default", body("delayed"), { delayMs: 3_600_000 });
      e.reserve(buried);
      e.bury(buried, 3);
      assert.equal(e.wal.flush(), true);
      await e.settle();
      const home = `tubeway.${e.wal.fileOf(keep)}`;
      const removals = checkEveryRemoval(files, e, [keep, buried, delayed], [buried]);
      for (let i = 0; logNames(files).includes(home); i++) {
        assert.ok(i < 5000, `${fsyncMs}: ${home} never went`);
        for (let k = 0; k < 8; k++) e.delete(e.put("churn", body(`c${i} ${"y".repeat(100)}`)));
        assert.equal(e.wal.flush(), true);
        e.now += 5;
        e.wal.tick(e.now);
        await e.settle();
      }
      assert.ok(removals() > 0);
      assert.ok(e.wal.stats().recordsMigrated >= 3);
      e.wal.close();
    }
  });

  test("a failed write of compaction's moves undoes them: the old file stays until they are written", async () => {
    const files = new WatchedFiles();
    let e = new Engine(files, { maxFileSize: 4096, fsyncMs: "never" }).open();
    e.autoFlush = false;
    const keep = e.put("default", body("long-lived"), { pri: 7 });
    const buried = e.put("other", body("buried"));
    e.reserve(buried);
    e.bury(buried, 3);
    assert.equal(e.wal.flush(), true);
    const home = `tubeway.${e.wal.fileOf(keep)}`;
    const removals = checkEveryRemoval(files, e, [keep, buried], [buried]);
    let failedMoves = 0;
    for (let i = 0; logNames(files).includes(home); i++) {
      assert.ok(i < 5000, `${home} never went`);
      for (let k = 0; k < 8; k++) e.delete(e.put("churn", body(`c${i} ${"y".repeat(100)}`)));
      assert.equal(e.wal.flush(), true);
      // what is written between batches is compaction's: fail it, two rounds in three
      files.failLog = i % 3 !== 2;
      const migrated = e.wal.stats().recordsMigrated;
      const logs = e.logs.length;
      await e.settle();
      files.failLog = false;
      if (e.logs.length > logs && e.wal.stats().recordsMigrated === migrated) failedMoves++;
    }
    assert.ok(failedMoves > 0, "some moves failed");
    assert.ok(removals() > 0);
    e = restart(e);
    const back = new Map(e.recovered.jobs.map((j) => [j.id, j]));
    assert.equal(back.get(keep)?.pri, 7);
    assert.equal(back.get(buried)?.state, "buried");
  });
});
