// Job records of the binlog (codec.ts describes the format around them).
//
// Job payload (kinds 1 and 2): a 76-byte fixed part, then for kind 1 the tube name
// and the body (rest of the payload, including the body's trailing CRLF):
//   0  8  id            16  8  delayMs      48  8  bury order (0 unless buried)
//   8  4  pri           24  8  ttrMs        56  4  reserves   60 timeouts
//  12  1  state         32  8  createdAtMs  64  4  releases   68 buries
//  13  1  tube length   40  8  deadlineAtMs 72  4  kicks
//  14  2  zero
// state: 0 deleted, 1 ready, 2 reserved, 3 buried, 4 delayed (beanstalkd's numbers).
// Full job with extensions (kind 4): as kind 1, with between the tube name and the
// body: 1 byte key length K, K bytes of put-unique key, 1 byte origin length O, O
// bytes of the dead letter's tube of origin (either may be empty).
// Scheduled job (kind 9): a job a schedule put for one of its due times, and that run,
// in one record (a restart finds both or neither): as kind 4, with after the origin 1
// byte schedule name length N, the name, and 8 bytes of due time (Unix seconds). Only
// the put is written so: the job's later full records (compaction, a dead letter) are
// kinds 1 and 4, and the run lives on in the schedule's record that starts every newer
// file (codec_schedule.ts).
import type { JobRecord, JobState } from "../wal.ts";
import {
  EMPTY,
  encodeName,
  frameAt,
  fromUtf8,
  getU64,
  KIND_FULL,
  KIND_FULL_X,
  KIND_SCHEDULED_JOB,
  KIND_SHORT,
  putU64,
  RECORD_HEADER_SIZE,
  short,
  utf8,
  view,
} from "./frame.ts";

export const FIXED_SIZE = 76;
export const SHORT_RECORD_SIZE = RECORD_HEADER_SIZE + FIXED_SIZE;

const STATES: ReadonlyArray<JobState | "deleted"> = ["deleted", "ready", "reserved", "buried", "delayed"];
const STATE_CODE: Record<JobState | "deleted", number> = {
  deleted: 0,
  ready: 1,
  reserved: 2,
  buried: 3,
  delayed: 4,
};

/** The run a scheduled job's record carries (kind 9). */
export interface ScheduleRun {
  name: string;
  dueSec: number;
}

/** A decoded job record. buryOrder orders buried jobs (see binlog.ts); `run` only on kind 9. */
export interface DecodedJob {
  kind: typeof KIND_FULL | typeof KIND_SHORT | typeof KIND_FULL_X | typeof KIND_SCHEDULED_JOB;
  rec: JobRecord;
  buryOrder: number;
  run?: ScheduleRun;
}

/**
 * Encode a job record. `full` adds tube and body (rec.body must be set); `run` makes it
 * a scheduled job's (kind 9). `salt` is the file's saltState(). Throws RangeError on a
 * name over 255 bytes.
 */
export function encodeJob(full: boolean, rec: JobRecord, buryOrder: number, salt: number, run?: ScheduleRun) {
  const size = full ? fullRecordSize(rec, run) : SHORT_RECORD_SIZE;
  const out = new Uint8Array(size);
  encodeJobAt(full, rec, buryOrder, salt, out, view(out), 0, run);
  return out;
}

/**
 * encodeJob into out[at, at + size) (size: fullRecordSize or SHORT_RECORD_SIZE),
 * without allocating; `v` views all of `out`. Returns the end offset. Throws
 * RangeError on a name over 255 bytes, before writing anything.
 */
export function encodeJobAt(
  full: boolean,
  rec: JobRecord,
  buryOrder: number,
  salt: number,
  out: Uint8Array,
  v: DataView,
  at: number,
  run?: ScheduleRun,
): number {
  const tube = full ? short(encodeName(rec.tube), "tube name") : EMPTY;
  const body = full ? rec.body ?? EMPTY : EMPTY;
  const x = full ? extrasOf(rec, run) : undefined;
  const name = run === undefined ? EMPTY : short(utf8.encode(run.name), "schedule name");
  const xSize = x === undefined ? 0 : 2 + x[0].length + x[1].length + (run === undefined ? 0 : 9 + name.length);
  const length = FIXED_SIZE + tube.length + xSize + body.length;
  const p = at + RECORD_HEADER_SIZE;
  putU64(v, p, rec.id);
  v.setUint32(p + 8, rec.pri >>> 0, true);
  out[p + 12] = STATE_CODE[rec.state];
  out[p + 13] = tube.length;
  out[p + 14] = 0;
  out[p + 15] = 0;
  v.setFloat64(p + 16, rec.delayMs, true);
  v.setFloat64(p + 24, rec.ttrMs, true);
  v.setFloat64(p + 32, rec.createdAtMs, true);
  v.setFloat64(p + 40, rec.deadlineAtMs, true);
  putU64(v, p + 48, buryOrder);
  v.setUint32(p + 56, rec.reserves >>> 0, true);
  v.setUint32(p + 60, rec.timeouts >>> 0, true);
  v.setUint32(p + 64, rec.releases >>> 0, true);
  v.setUint32(p + 68, rec.buries >>> 0, true);
  v.setUint32(p + 72, rec.kicks >>> 0, true);
  if (full) {
    let q = p + FIXED_SIZE;
    out.set(tube, q);
    q += tube.length;
    if (x) {
      for (const part of x) {
        out[q++] = part.length;
        out.set(part, q);
        q += part.length;
      }
      if (run !== undefined) {
        out[q++] = name.length;
        out.set(name, q);
        q += name.length;
        putU64(v, q, run.dueSec);
        q += 8;
      }
    }
    out.set(body, q);
  }
  const kind = !full ? KIND_SHORT : run !== undefined ? KIND_SCHEDULED_JOB : x ? KIND_FULL_X : KIND_FULL;
  frameAt(kind, length, salt, out, v, at);
  return p + length;
}

/** A full record's extension strings (key, origin) when it has any, or a run: kind 4 or 9 instead of 1. */
function extrasOf(rec: JobRecord, run: ScheduleRun | undefined): [Uint8Array, Uint8Array] | undefined {
  if (rec.key === undefined && rec.from === undefined && run === undefined) return undefined;
  return [
    short(utf8.encode(rec.key ?? ""), `job ${rec.id}: key`),
    short(utf8.encode(rec.from ?? ""), `job ${rec.id}: origin`),
  ];
}

/** Size on disk of a full record for this job (with `run`: a scheduled job's). */
export function fullRecordSize(rec: JobRecord, run?: ScheduleRun): number {
  const x = rec.key === undefined && rec.from === undefined && run === undefined
    ? 0
    : 2 + utf8.encode(rec.key ?? "").length + utf8.encode(rec.from ?? "").length +
      (run === undefined ? 0 : 9 + utf8.encode(run.name).length);
  return RECORD_HEADER_SIZE + FIXED_SIZE + encodeName(rec.tube).length + x + (rec.body?.length ?? 0);
}

/** Decode a checksummed job payload p (kinds 1, 2, 4, 9); a string is the reason it is malformed. */
export function decodeJob(kind: DecodedJob["kind"], p: Uint8Array): DecodedJob | string {
  const length = p.length;
  const v = view(p);
  if (length < FIXED_SIZE) return `job record of ${length} bytes`;
  const id = getU64(v, 0);
  const state = STATES[p[12]!];
  const tubeLength = p[13]!;
  if (id < 1 || !Number.isSafeInteger(id)) return `bad job id ${id}`;
  if (state === undefined) return `bad job state ${p[12]}`;
  if (kind === KIND_SHORT && length !== FIXED_SIZE) return `short record of ${length} bytes`;
  const full = kind !== KIND_SHORT;
  if (full && (tubeLength === 0 || FIXED_SIZE + tubeLength > length)) {
    return `bad tube name length ${tubeLength}`;
  }
  const rec: JobRecord = {
    id,
    tube: full ? fromUtf8.decode(p.subarray(FIXED_SIZE, FIXED_SIZE + tubeLength)) : "",
    pri: v.getUint32(8, true),
    delayMs: v.getFloat64(16, true),
    ttrMs: v.getFloat64(24, true),
    createdAtMs: v.getFloat64(32, true),
    deadlineAtMs: v.getFloat64(40, true),
    state,
    reserves: v.getUint32(56, true),
    timeouts: v.getUint32(60, true),
    releases: v.getUint32(64, true),
    buries: v.getUint32(68, true),
    kicks: v.getUint32(72, true),
  };
  for (const t of [rec.delayMs, rec.ttrMs, rec.createdAtMs, rec.deadlineAtMs]) {
    if (!Number.isFinite(t)) return `job ${id} has a non-finite time`;
  }
  let q = FIXED_SIZE + tubeLength;
  let run: ScheduleRun | undefined;
  if (kind === KIND_FULL_X || kind === KIND_SCHEDULED_JOB) {
    const parts: string[] = [];
    for (let i = 0; i < (kind === KIND_SCHEDULED_JOB ? 3 : 2); i++) {
      const n = p[q];
      if (n === undefined || q + 1 + n > length) return `job ${id} has bad extensions`;
      parts.push(fromUtf8.decode(p.subarray(q + 1, q + 1 + n)));
      q += 1 + n;
    }
    if (parts[0] !== "") rec.key = parts[0]!;
    if (parts[1] !== "") rec.from = parts[1]!;
    if (kind === KIND_SCHEDULED_JOB) {
      if (parts[2] === "" || q + 8 > length) return `job ${id} has a bad schedule run`;
      run = { name: parts[2]!, dueSec: getU64(v, q) };
      q += 8;
    }
  }
  if (full) rec.body = p.slice(q);
  const d: DecodedJob = { kind, rec, buryOrder: getU64(v, 48) };
  if (run !== undefined) d.run = run;
  return d;
}

/** A deleted job's record with only the id to fill in: what the binlog logs for a job the queue lost. */
export const GONE: JobRecord = {
  id: 0,
  tube: "",
  pri: 0,
  delayMs: 0,
  ttrMs: 0,
  createdAtMs: 0,
  deadlineAtMs: 0,
  state: "deleted",
  reserves: 0,
  timeouts: 0,
  releases: 0,
  buries: 0,
  kicks: 0,
};
