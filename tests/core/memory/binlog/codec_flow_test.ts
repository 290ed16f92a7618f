// The records of limits and schedules (kinds 7, 8 and 9): each round-trips, a removal
// is told apart, a malformed payload is a reason and not a throw, and a name too long
// for its length byte is refused before anything is written.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  checkRecordHeader,
  decodePayload,
  encodeJob,
  encodeLimitsAt,
  encodeScheduleAt,
  fullRecordSize,
  KIND_LIMITS,
  KIND_SCHEDULE,
  KIND_SCHEDULED_JOB,
  limitsRecordSize,
  payloadMatches,
  RECORD_HEADER_SIZE,
  saltState,
  scheduleRecordSize,
  view,
} from "../../../../core/memory/binlog/codec.ts";
import type { ScheduleRecord } from "../../../../core/memory/wal.ts";
import { jobRecord } from "../../../harness/job_record.ts";

const enc = new TextEncoder();
const salt = saltState(0x1234);

function decode(b: Uint8Array) {
  const h = checkRecordHeader(b, 0, salt);
  if (!h.ok) throw new Error(h.reason);
  assert.equal(RECORD_HEADER_SIZE + h.length, b.length);
  assert.ok(payloadMatches(b, RECORD_HEADER_SIZE, h.length, h.payloadCrc, salt));
  return decodePayload(h.kind, b, RECORD_HEADER_SIZE, h.length);
}

function encoded(size: number, write: (out: Uint8Array, v: DataView) => number): Uint8Array {
  const out = new Uint8Array(size);
  assert.equal(write(out, view(out)), size);
  return out;
}

const schedule: ScheduleRecord = {
  name: "nightly-report:eu",
  tube: "reports",
  spec: "0_3_*_*_1-5",
  pri: 4294967295,
  ttrSec: 600,
  afterSec: 1_764_028_800,
  lastDueSec: 1_764_028_800,
  body: enc.encode('{"region":"eu"}\r\n'),
};

describe("limits (kind 7)", () => {
  test("round trip; a removal is all zero", () => {
    for (
      const limits of [{ concurrency: 5, rateCount: 100, rateWindowSec: 60 }, {
        concurrency: 0,
        rateCount: 0,
        rateWindowSec: 0,
      }]
    ) {
      const b = encoded(limitsRecordSize("emails"), (o, v) => encodeLimitsAt("emails", limits, salt, o, v, 0));
      assert.deepEqual(decode(b), { kind: KIND_LIMITS, tube: "emails", limits });
    }
  });

  test("a malformed payload is a reason", () => {
    const b = encoded(
      limitsRecordSize("t"),
      (o, v) => encodeLimitsAt("t", { concurrency: 1, rateCount: 0, rateWindowSec: 0 }, salt, o, v, 0),
    );
    assert.equal(typeof decodePayload(KIND_LIMITS, b, RECORD_HEADER_SIZE, b.length - RECORD_HEADER_SIZE - 1), "string");
    assert.equal(typeof decodePayload(KIND_LIMITS, b, RECORD_HEADER_SIZE, 5), "string");
  });
});

describe("schedule (kind 8)", () => {
  test("round trip, body and all; a removal carries only the name", () => {
    const b = encoded(scheduleRecordSize(schedule), (o, v) => encodeScheduleAt(schedule, salt, o, v, 0));
    assert.deepEqual(decode(b), { kind: KIND_SCHEDULE, name: schedule.name, schedule });
    const r = encoded(scheduleRecordSize("gone"), (o, v) => encodeScheduleAt("gone", salt, o, v, 0));
    assert.deepEqual(decode(r), { kind: KIND_SCHEDULE, name: "gone", schedule: null });
  });

  test("a malformed payload is a reason; a name over 255 bytes is refused before writing", () => {
    const b = encoded(scheduleRecordSize(schedule), (o, v) => encodeScheduleAt(schedule, salt, o, v, 0));
    for (const length of [0, 27, 28 + 3]) {
      assert.equal(typeof decodePayload(KIND_SCHEDULE, b, RECORD_HEADER_SIZE, length), "string", String(length));
    }
    const out = new Uint8Array(1000);
    assert.throws(() => encodeScheduleAt({ ...schedule, name: "n".repeat(256) }, salt, out, view(out), 0), RangeError);
    assert.ok(out.every((x) => x === 0));
  });
});

describe("scheduled job (kind 9)", () => {
  const job = jobRecord(42, {
    tube: "reports",
    pri: 1,
    ttrMs: 600_000,
    body: enc.encode("x\r\n"),
    key: "nightly@1764028800",
  });

  test("the job's full record and its run, in one record", () => {
    const run = { name: "nightly", dueSec: 1_764_028_800 };
    const b = encodeJob(true, job, 0, salt, run);
    assert.equal(b.length, fullRecordSize(job, run));
    assert.deepEqual(decode(b), { kind: KIND_SCHEDULED_JOB, rec: job, buryOrder: 0, run });
  });

  test("a run without a name is malformed", () => {
    const b = encodeJob(true, job, 0, salt, { name: "n", dueSec: 5 });
    const h = checkRecordHeader(b, 0, salt);
    assert.ok(h.ok);
    // cut the payload before the due time
    const d = decodePayload(KIND_SCHEDULED_JOB, b, RECORD_HEADER_SIZE, 76 + 7 + 1 + job.key!.length + 1 + 2 + 4);
    assert.equal(typeof d, "string");
  });
});
