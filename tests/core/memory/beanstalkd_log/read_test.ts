// The beanstalkd binlog reader and writer on bytes built here (the real beanstalkd
// writes the files in tests/system/beanstalkd_takeover_test.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { binlogSeq, readBeanstalkdLog, summary } from "../../../../core/memory/beanstalkd_log/read.ts";
import { encodeV7, minMaxJobSize } from "../../../../core/memory/beanstalkd_log/write.ts";
import type { JobRecord } from "../../../../core/memory/wal.ts";
import { jobRecord as job } from "../../../harness/job_record.ts";

const enc = new TextEncoder();

/** The records of encodeV7 (without its 4-byte header). */
function fullRecords(...jobs: JobRecord[]): Uint8Array {
  return encodeV7(jobs).subarray(4);
}

/** A short record: namelen 0 and the Jobrec of the job's full record. */
function shortRecord(j: JobRecord): Uint8Array {
  // encodeV7 leaves deleted jobs out and writes reserved ones ready: encode the job
  // ready, then write its own state byte
  const full = fullRecords({ ...j, state: "ready" });
  const name = enc.encode(j.tube).length;
  const out = new Uint8Array(84);
  out.set(full.subarray(4 + name, 4 + name + 80), 4);
  out[4 + 76] = ["deleted", "ready", "reserved", "buried", "delayed"].indexOf(j.state);
  return out;
}

function file(name: string, ...parts: Uint8Array[]): { name: string; bytes: Uint8Array } {
  const head = Uint8Array.of(7, 0, 0, 0);
  const all = [head, ...parts];
  const bytes = new Uint8Array(all.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of all) {
    bytes.set(p, off);
    off += p.length;
  }
  return { name, bytes };
}

const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

describe("reading beanstalkd binlog files", () => {
  it("reads back what encodeV7 wrote: every field, CRLF bodies, every state", () => {
    const jobs = [
      job(3, { tube: "a", pri: 7, ttrMs: 5000, body: enc.encode("x\r\ny\r\n") }),
      job(9, { tube: "b", state: "delayed", delayMs: 30_000, deadlineAtMs: 1_800_000_000_123, releases: 2 }),
      job(5, { state: "buried", reserves: 3, timeouts: 1, buries: 1, kicks: 4 }),
    ];
    const r = readBeanstalkdLog([{ name: "binlog.1", bytes: encodeV7(jobs) }]);
    assert.deepEqual(r.jobs, jobs);
    assert.equal(r.maxId, 9);
    assert.equal(r.filesRead, 1);
    assert.deepEqual(r.problems, []);
  });

  it("applies short records, deletes, ignores unknown ids, and makes reserved jobs ready", () => {
    const a = job(1);
    const b = job(2);
    const r = readBeanstalkdLog([
      file("binlog.2", shortRecord(job(2, { state: "deleted" }))),
      file(
        "binlog.1",
        fullRecords(a, b, job(3)),
        shortRecord(job(1, { state: "reserved", pri: 4, reserves: 1 })),
        shortRecord(job(3, { state: "deleted" })),
        shortRecord(job(77, { state: "buried" })),
      ),
    ]);
    assert.deepEqual(r.jobs.map((j) => [j.id, j.state, j.pri, j.reserves, j.tube, text(j.body)]), [
      [1, "ready", 4, 1, "default", "body 1\r\n"],
    ]);
    assert.equal(r.wereReserved, 1);
    assert.equal(r.maxId, 77, "ids seen anywhere are never handed out again");
  });

  it("gives buried jobs in the order they were buried, not the order they were put", () => {
    const r = readBeanstalkdLog([
      file(
        "binlog.1",
        fullRecords(job(1), job(2), job(3)),
        shortRecord(job(3, { state: "buried", buries: 1 })),
        shortRecord(job(1, { state: "buried", buries: 1 })),
        // a compaction copy of the buried job 3 keeps its place in the buried list
        fullRecords(job(3, { state: "buried", buries: 1 })),
      ),
    ]);
    assert.deepEqual(r.jobs.map((j) => [j.id, j.state]), [[2, "ready"], [3, "buried"], [1, "buried"]]);
  });

  it("accepts a body of any size (1.12 drops a body of exactly -z bytes on replay)", () => {
    const big = new Uint8Array(65_537).fill(0x41);
    big.set([13, 10], big.length - 2);
    const r = readBeanstalkdLog([file("binlog.1", fullRecords(job(1, { body: big }), job(2)))]);
    assert.deepEqual(r.jobs.map((j) => j.body!.length), [65_537, 8]);
    assert.equal(minMaxJobSize(r.jobs), 65_537);
  });

  it("stops quietly at a zeroed tail, and reports a torn record with file and offset", () => {
    const zeros = new Uint8Array(4096);
    const torn = fullRecords(job(2)).subarray(0, 50);
    const r = readBeanstalkdLog([
      file("binlog.1", fullRecords(job(1)), zeros),
      file("binlog.3", fullRecords(job(3)), torn),
    ]);
    assert.deepEqual(r.jobs.map((j) => j.id), [1, 3]);
    const at = 4 + fullRecords(job(3)).length;
    assert.equal(r.problems.length, 1);
    assert.equal(r.problems[0]!.file, "binlog.3");
    assert.equal(r.problems[0]!.offset, at);
    assert.match(r.problems[0]!.reason, /^truncated record: needs 91 bytes, 50 left/);
  });

  it("reports a damaged record and keeps reading at the next record that parses", () => {
    const first = fullRecords(job(1));
    const bad = fullRecords(job(2));
    bad.set([0xff, 0xff, 0xff, 0x7f], 0); // its tube name length
    const r = readBeanstalkdLog([file("binlog.1", first, bad, fullRecords(job(3)), shortRecord(job(1, { pri: 1 })))]);
    assert.deepEqual(r.jobs.map((j) => [j.id, j.pri]), [[1, 1], [3, 100]]);
    assert.deepEqual(r.problems, [{
      file: "binlog.1",
      offset: 4 + first.length,
      reason: `bad tube name length 2147483647; skipped ${bad.length} bytes`,
    }]);
  });

  it("reports zeros where records were, and reads the records after them", () => {
    const first = fullRecords(job(1));
    const r = readBeanstalkdLog([file("binlog.1", first, new Uint8Array(300), fullRecords(job(2)))]);
    assert.deepEqual(r.jobs.map((j) => j.id), [1, 2]);
    assert.deepEqual(r.problems, [{
      file: "binlog.1",
      offset: 4 + first.length,
      reason: "a record of job id 0 (zeros), then more data; skipped 300 bytes",
    }]);
  });

  // A scan that re-checked the tail from every offset would not finish within the timeout.
  it("gives up at once on damage followed by a long zeroed tail", { timeout: 120_000 }, () => {
    const bad = fullRecords(job(2));
    bad.set([0xff, 0xff, 0xff, 0x7f], 0);
    const r = readBeanstalkdLog([file("binlog.1", fullRecords(job(1)), bad, new Uint8Array(10 << 20))]);
    assert.deepEqual(r.jobs.map((j) => j.id), [1]);
    assert.equal(r.problems.length, 1);
    assert.match(
      r.problems[0]!.reason,
      /^bad tube name length 2147483647; nothing readable in the remaining \d+ bytes$/,
    );
  });

  it("skips a record whose body lacks the CRLF, and goes on after it", () => {
    const r = readBeanstalkdLog([
      file("binlog.1", fullRecords(job(1, { body: enc.encode("nocrlf") })), fullRecords(job(2))),
    ]);
    assert.deepEqual(r.jobs.map((j) => j.id), [2]);
    assert.match(r.problems[0]!.reason, /^job 1: body does not end in CRLF; record skipped$/);
  });

  it("reads version 5 files (1.4.x: 8-byte name length, 77-byte record, microseconds)", () => {
    const v7 = fullRecords(job(4, { tube: "old", state: "delayed", deadlineAtMs: 1_750_000_000_000, delayMs: 9000 }));
    const name = 3;
    const rec = v7.subarray(4 + name, 4 + name + 80);
    const v5 = new Uint8Array(8 + name + 77 + 9);
    const dv = new DataView(v5.buffer);
    dv.setBigInt64(0, 3n, true);
    v5.set(enc.encode("old"), 8);
    v5.set(rec.subarray(0, 77), 8 + name);
    // times in µs: the v7 ns values divided by 1000
    for (const at of [16, 24, 40, 48]) {
      const p = 8 + name + at;
      dv.setBigInt64(p, dv.getBigInt64(p, true) / 1000n, true);
    }
    v5.set(enc.encode("body 4\r\n"), 8 + name + 77);
    const bytes = new Uint8Array(4 + v5.length);
    bytes.set([5, 0, 0, 0]);
    bytes.set(v5, 4);
    const r = readBeanstalkdLog([{ name: "binlog.1", bytes }]);
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.jobs, [
      job(4, {
        tube: "old",
        state: "delayed",
        deadlineAtMs: 1_750_000_000_000,
        delayMs: 9000,
        body: enc.encode("body 4\r\n"),
      }),
    ]);
  });

  it("reports files of an unknown version or byte order, and reads the others", () => {
    const r = readBeanstalkdLog([
      { name: "binlog.1", bytes: Uint8Array.of(0, 0, 0, 7) },
      { name: "binlog.2", bytes: Uint8Array.of(6, 0, 0, 0) },
      file("binlog.10", fullRecords(job(1))),
    ]);
    assert.deepEqual(r.problems.map((p) => `${p.file}:${p.offset}: ${p.reason}`), [
      "binlog.1:0: version 7 big-endian: not supported; file skipped",
      "binlog.2:0: unknown version 6; file skipped",
    ]);
    assert.equal(r.filesRead, 1);
    assert.equal(summary(r), "1 job: 1 ready, 0 delayed, 0 buried; 1 file read, 2 problems; next id 2");
  });

  it("knows beanstalkd's file names", () => {
    assert.equal(binlogSeq("binlog.12"), 12);
    for (const n of ["binlog.", "binlog.x", "tubeway.1", "lock", "binlog.1.tmp"]) assert.equal(binlogSeq(n), undefined);
  });
});
