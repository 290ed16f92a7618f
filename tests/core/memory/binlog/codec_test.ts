import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { crc32c, crc32cFinal, crc32cUpdate, CRC_INIT } from "../../../../core/memory/binlog/crc.ts";
import {
  checkRecordHeader,
  decodeFileHeader,
  decodePayload,
  encodeFileHeader,
  encodeIds,
  encodeJob,
  FILE_HEADER_SIZE,
  fullRecordSize,
  IDS_RECORD_SIZE,
  KIND_FULL,
  KIND_IDS,
  KIND_SHORT,
  payloadMatches,
  RECORD_HEADER_SIZE,
  saltState,
  SHORT_RECORD_SIZE,
} from "../../../../core/memory/binlog/codec.ts";
import type { JobRecord } from "../../../../core/memory/wal.ts";

const enc = new TextEncoder();

const job: JobRecord = {
  id: 2 ** 40 + 7,
  tube: "emails-ß",
  pri: 4294967295,
  delayMs: 5000,
  ttrMs: 120_000,
  createdAtMs: 1_700_000_000_123,
  deadlineAtMs: 1_700_000_005_123,
  state: "delayed",
  reserves: 1,
  timeouts: 2,
  releases: 3,
  buries: 4,
  kicks: 4294967295,
  body: enc.encode("hello\r\n"),
};

function decodeAt(b: Uint8Array, at: number, seed: number) {
  const h = checkRecordHeader(b, at, seed);
  assert.ok(h.ok, !h.ok ? h.reason : "");
  if (!h.ok) throw new Error();
  assert.ok(payloadMatches(b, at + RECORD_HEADER_SIZE, h.length, h.payloadCrc, seed));
  const d = decodePayload(h.kind, b, at + RECORD_HEADER_SIZE, h.length);
  assert.notEqual(typeof d, "string", String(d));
  return d as Exclude<typeof d, string>;
}

describe("crc32c", () => {
  test("known vectors", () => {
    assert.equal(crc32c(enc.encode("123456789")), 0xe3069283);
    assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
    assert.equal(crc32c(new Uint8Array(0)), 0);
  });

  test("chained updates equal one pass, at every split", () => {
    const data = enc.encode("The quick brown fox jumps over the lazy dog, twice over.");
    const whole = crc32c(data);
    for (let i = 0; i <= data.length; i++) {
      assert.equal(crc32cFinal(crc32cUpdate(crc32cUpdate(CRC_INIT, data, 0, i), data, i)), whole);
    }
  });
});

describe("file header", () => {
  test("round trip", () => {
    const b = encodeFileHeader({ seq: 12345678901, idHighWater: 2 ** 50, salt: 0xdeadbeef });
    assert.equal(b.length, FILE_HEADER_SIZE);
    const h = decodeFileHeader(b);
    assert.ok(h.ok && h.trusted);
    if (h.ok) assert.deepEqual(h.header, { seq: 12345678901, idHighWater: 2 ** 50, salt: 0xdeadbeef });
  });

  test("damage is told apart", () => {
    const good = encodeFileHeader({ seq: 1, idHighWater: 0, salt: 1 });
    const reason = (b: Uint8Array) => {
      const h = decodeFileHeader(b);
      return h.ok ? (h.trusted ? "ok" : "untrusted") : h.reason;
    };
    assert.equal(reason(new Uint8Array(0)), "empty file");
    assert.equal(reason(new Uint8Array(4096)), "file is all zero bytes");
    assert.match(reason(good.subarray(0, 20)), /short file header/);
    assert.match(reason(enc.encode("#!/bin/sh\necho this is not a binlog at all\n")), /bad magic/);
    const v7 = good.slice();
    v7[8] = 7;
    assert.match(reason(v7), /unknown binlog version 7/);
    const flipped = good.slice();
    flipped[20] = flipped[20]! ^ 1;
    assert.equal(reason(flipped), "untrusted");
  });
});

describe("records", () => {
  const seed = saltState(0x12345678);

  test("full record round trip", () => {
    const b = encodeJob(true, job, 0, seed);
    assert.equal(b.length, fullRecordSize(job));
    const d = decodeAt(b, 0, seed);
    if (d.kind === KIND_IDS) throw new Error("wrong kind");
    assert.equal(d.kind, KIND_FULL);
    assert.deepEqual(d.rec, job);
  });

  test("short record round trip (tube and body are not stored)", () => {
    for (const state of ["deleted", "ready", "reserved", "buried", "delayed"] as const) {
      const b = encodeJob(false, { ...job, state }, state === "buried" ? 99 : 0, seed);
      assert.equal(b.length, SHORT_RECORD_SIZE);
      const d = decodeAt(b, 0, seed);
      if (d.kind === KIND_IDS) throw new Error("wrong kind");
      assert.equal(d.kind, KIND_SHORT);
      const { body: _b, ...rest } = job;
      assert.deepEqual(d.rec, { ...rest, tube: "", state });
      assert.equal(d.buryOrder, state === "buried" ? 99 : 0);
    }
  });

  test("id reservation round trip", () => {
    const b = encodeIds(2 ** 52 + 1, seed);
    assert.equal(b.length, IDS_RECORD_SIZE);
    assert.deepEqual(decodeAt(b, 0, seed), { kind: KIND_IDS, idHighWater: 2 ** 52 + 1 });
  });

  test("a big body round trips", () => {
    const big = new Uint8Array(1 << 20).map((_, i) => i * 31);
    const d = decodeAt(encodeJob(true, { ...job, body: big }, 0, seed), 0, seed);
    if ("rec" in d) assert.deepEqual(d.rec.body, big);
  });

  test("another file's salt does not verify", () => {
    const b = encodeJob(true, job, 0, seed);
    const h = checkRecordHeader(b, 0, saltState(0x12345679));
    assert.equal(h.ok, false);
  });

  test("every single-bit flip is caught", () => {
    const b = encodeJob(true, job, 0, seed);
    for (let i = 0; i < b.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const c = b.slice();
        c[i] = c[i]! ^ (1 << bit);
        const h = checkRecordHeader(c, 0, seed);
        const good = h.ok && h.length === b.length - RECORD_HEADER_SIZE &&
          payloadMatches(c, RECORD_HEADER_SIZE, h.length, h.payloadCrc, seed);
        assert.equal(good, false, `flip at byte ${i} bit ${bit} went unnoticed`);
      }
    }
  });

  test("tube names over 255 bytes are refused", () => {
    assert.throws(() => encodeJob(true, { ...job, tube: "x".repeat(256) }, 0, seed), RangeError);
  });
});
