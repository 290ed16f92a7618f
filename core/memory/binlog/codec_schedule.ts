// Schedule records of the binlog (codec.ts describes the format around them).
//
// Schedule (kind 8, schedule / unschedule): a recurring job's definition and state.
//   0  4  pri              16  8  last due time, Unix s (0: none)  26  1  spec length S
//   4  4  ttr s            24  1  name length N                    27  1  zero
//   8  8  after, Unix s    25  1  tube length T (0: removed)
//  28     the name, the tube, the spec, then the body (rest of the payload, with its CRLF)
// "after": due times up to it are done (its last run's, or when it was set). The newest
// record of a name wins; tube length 0 removes it. Each new file starts with the
// schedules in force (binlog.ts), so removing old files never loses one nor its last
// run; a run in between is the scheduled job's record (kind 9, codec_job.ts).
import type { ScheduleRecord } from "../wal.ts";
import {
  EMPTY,
  encodeName,
  frameAt,
  fromUtf8,
  getU64,
  KIND_SCHEDULE,
  putU64,
  RECORD_HEADER_SIZE,
  short,
  utf8,
  view,
} from "./frame.ts";

const FIXED = 28;

export interface DecodedSchedule {
  kind: typeof KIND_SCHEDULE;
  name: string;
  /** null: removed. */
  schedule: ScheduleRecord | null;
}

/** Size on disk of a schedule's record (removed: only its name). */
export function scheduleRecordSize(s: ScheduleRecord | string): number {
  if (typeof s === "string") return RECORD_HEADER_SIZE + FIXED + utf8.encode(s).length;
  return RECORD_HEADER_SIZE + FIXED + utf8.encode(s.name).length + encodeName(s.tube).length +
    utf8.encode(s.spec).length +
    s.body.length;
}

/** A schedule's record (kind 8; a name alone: its removal) into out[at, at + scheduleRecordSize); the end offset. */
export function encodeScheduleAt(
  s: ScheduleRecord | string,
  salt: number,
  out: Uint8Array,
  v: DataView,
  at: number,
): number {
  const removed = typeof s === "string";
  const name = short(utf8.encode(removed ? s : s.name), "schedule name");
  const tube = removed ? EMPTY : short(encodeName(s.tube), "tube name");
  const spec = removed ? EMPTY : short(utf8.encode(s.spec), "schedule spec");
  const body = removed ? EMPTY : s.body;
  const q = at + RECORD_HEADER_SIZE;
  v.setUint32(q, removed ? 0 : s.pri >>> 0, true);
  v.setUint32(q + 4, removed ? 0 : s.ttrSec >>> 0, true);
  putU64(v, q + 8, removed ? 0 : s.afterSec);
  putU64(v, q + 16, removed ? 0 : s.lastDueSec);
  out[q + 24] = name.length;
  out[q + 25] = tube.length;
  out[q + 26] = spec.length;
  out[q + 27] = 0;
  let r = q + FIXED;
  for (const part of [name, tube, spec, body]) {
    out.set(part, r);
    r += part.length;
  }
  frameAt(KIND_SCHEDULE, r - q, salt, out, v, at);
  return r;
}

/** Decode a checksummed schedule payload p; a string is the reason it is malformed. */
export function decodeSchedule(p: Uint8Array): DecodedSchedule | string {
  const length = p.length;
  if (length < FIXED) return `schedule record of ${length} bytes`;
  const v = view(p);
  const n = p[24]!, t = p[25]!, s = p[26]!;
  if (n === 0 || FIXED + n + t + s > length || (t === 0 && length !== FIXED + n)) {
    return `schedule record of ${length} bytes`;
  }
  let q = FIXED;
  const name = fromUtf8.decode(p.subarray(q, q += n));
  if (t === 0) return { kind: KIND_SCHEDULE, name, schedule: null };
  const tube = fromUtf8.decode(p.subarray(q, q += t));
  const spec = fromUtf8.decode(p.subarray(q, q += s));
  const body = p.slice(q);
  if (body.length < 2) return `schedule ${name} has no body`;
  return {
    kind: KIND_SCHEDULE,
    name,
    schedule: {
      name,
      tube,
      spec,
      pri: v.getUint32(0, true),
      ttrSec: v.getUint32(4, true),
      afterSec: getU64(v, 8),
      lastDueSec: getU64(v, 16),
      body,
    },
  };
}
