// The binlog's byte format. It is tubeway's own, in files named tubeway.N so that
// beanstalkd never reads them (started on a directory, beanstalkd deletes binlog.N
// files it cannot read). beanstalkd's own version-7 and version-5 files are read
// once, to import them, by core/memory/beanstalkd_log/; they have no checksums, so this
// format does not follow them.
//
// All integers are little-endian. Times are IEEE-754 float64 milliseconds since the
// Unix epoch (exact for every integer ms a JavaScript clock gives).
//
// File header (40 bytes, at offset 0):
//   0  8  magic 89 54 57 4C 0D 0A 1A 0A  ("\x89TWL\r\n\x1a\n": detects text-mode mangling)
//   8  4  format version (1)
//  12  4  header length (40; later versions may append fields)
//  16  8  file sequence number N (the N of tubeway.N when written)
//  24  8  id high-water: every id ever handed out is <= this, or appears in a record
//  32  4  salt: random per file, mixed into every record checksum of this file
//  36  4  CRC-32C of bytes 0..35
//
// Record = 16-byte header + payload (frame.ts):
//   0  1  0xB7 marker
//   1  1  kind: 1 full job, 2 short job (state update), 3 id reservation, 4 full job
//           with extensions, 5 purge, 6 tube policy, 7 tube limits, 8 schedule, 9
//           scheduled job (4 and up: the extensions; a log without them reads as before,
//           and earlier releases skip them as unknown records)
//   2  2  zero
//   4  4  payload length
//   8  4  CRC-32C(salt ++ payload)
//  12  4  CRC-32C(salt ++ header bytes 0..11)
// The header checksum makes the length trustworthy on its own: a record whose
// payload is damaged but whose header is intact is skipped by its length. The salt
// stops a job body that happens to contain encoded records (say, a binlog stored as
// a job) from being taken for real records when recovery scans past damage.
//
// Payloads, by concept: jobs (kinds 1, 2, 4, 9) in codec_job.ts; a whole tube's
// records (5 purge, 6 policy, 7 limits) in codec_tube.ts; schedules (8) in
// codec_schedule.ts. Id reservation payload (kind 3, here): 8 bytes, the new id
// high-water.
//
// Under -f 0 a file open for writing may end in zero bytes (preallocated blocks, see
// open.ts): at most PREALLOCATION_CHUNK plus a block of them, up to a multiple of
// PREALLOCATION_BLOCK (files.ts). A file that a crash left that way is read as usual.
import {
  frameAt,
  getU64,
  KIND_FULL,
  KIND_FULL_X,
  KIND_IDS,
  KIND_LIMITS,
  KIND_POLICY,
  KIND_PURGE,
  KIND_SCHEDULE,
  KIND_SCHEDULED_JOB,
  KIND_SHORT,
  putU64,
  RECORD_HEADER_SIZE,
  view,
} from "./frame.ts";
import { crc32cFinal, crc32cUpdate, CRC_INIT } from "./crc.ts";
import { type DecodedJob, decodeJob } from "./codec_job.ts";
import { type DecodedTube, decodeTube } from "./codec_tube.ts";
import { type DecodedSchedule, decodeSchedule } from "./codec_schedule.ts";

export * from "./frame.ts";
export * from "./codec_job.ts";
export * from "./codec_tube.ts";
export * from "./codec_schedule.ts";

/** Log files are LOG_NAME_PREFIX + N (earlier releases wrote binlog.N: see legacy_names.ts). */
export const LOG_NAME_PREFIX = "tubeway.";
export const FILE_MAGIC = Uint8Array.of(0x89, 0x54, 0x57, 0x4c, 0x0d, 0x0a, 0x1a, 0x0a);
export const FORMAT_VERSION = 1;
export const FILE_HEADER_SIZE = 40;
export const IDS_RECORD_SIZE = RECORD_HEADER_SIZE + 8;
/** The most zero bytes preallocated at a time (open.ts preallocation()). */
export const PREALLOCATION_CHUNK = 64 * 1024;

export interface FileHeader {
  seq: number;
  idHighWater: number;
  salt: number;
}

/** A decoded record. */
export type Decoded =
  | DecodedJob
  | { kind: typeof KIND_IDS; idHighWater: number }
  | DecodedTube
  | DecodedSchedule;

export function encodeFileHeader(h: FileHeader): Uint8Array {
  const b = new Uint8Array(FILE_HEADER_SIZE);
  const v = view(b);
  b.set(FILE_MAGIC, 0);
  v.setUint32(8, FORMAT_VERSION, true);
  v.setUint32(12, FILE_HEADER_SIZE, true);
  putU64(v, 16, h.seq);
  putU64(v, 24, h.idHighWater);
  v.setUint32(32, h.salt >>> 0, true);
  v.setUint32(36, crc32cFinal(crc32cUpdate(CRC_INIT, b, 0, 36)), true);
  return b;
}

/**
 * Parse a file header. `ok: false` with a reason when it is not ours or is damaged;
 * `trusted: false` when magic and version are right but the checksum is not (the
 * salt may still be right, so the caller may try the records).
 */
export function decodeFileHeader(
  b: Uint8Array,
): { ok: true; header: FileHeader; length: number; trusted: boolean } | { ok: false; reason: string } {
  if (b.length === 0) return { ok: false, reason: "empty file" };
  if (b.every((x) => x === 0)) return { ok: false, reason: "file is all zero bytes" };
  if (b.length < FILE_HEADER_SIZE) return { ok: false, reason: `short file header (${b.length} bytes)` };
  for (let i = 0; i < FILE_MAGIC.length; i++) {
    if (b[i] !== FILE_MAGIC[i]) return { ok: false, reason: "not a tubeway binlog (bad magic)" };
  }
  const v = view(b);
  const version = v.getUint32(8, true);
  const length = v.getUint32(12, true);
  if (version !== FORMAT_VERSION) return { ok: false, reason: `unknown binlog version ${version}` };
  if (length !== FILE_HEADER_SIZE) return { ok: false, reason: `bad file header length ${length}` };
  const trusted = v.getUint32(36, true) === crc32cFinal(crc32cUpdate(CRC_INIT, b, 0, 36));
  const header = { seq: getU64(v, 16), idHighWater: getU64(v, 24), salt: v.getUint32(32, true) };
  return { ok: true, header, length, trusted };
}

export function encodeIds(idHighWater: number, salt: number): Uint8Array {
  const out = new Uint8Array(IDS_RECORD_SIZE);
  encodeIdsAt(idHighWater, salt, out, view(out), 0);
  return out;
}

/** encodeIds into out[at, at + IDS_RECORD_SIZE); `v` views all of `out`. Returns the end offset. */
export function encodeIdsAt(idHighWater: number, salt: number, out: Uint8Array, v: DataView, at: number): number {
  putU64(v, at + RECORD_HEADER_SIZE, idHighWater);
  frameAt(KIND_IDS, 8, salt, out, v, at);
  return at + IDS_RECORD_SIZE;
}

/** Decode a checksummed payload; a string is the reason it is malformed. */
export function decodePayload(kind: number, b: Uint8Array, start: number, length: number): Decoded | string {
  const p = b.subarray(start, start + length);
  switch (kind) {
    case KIND_IDS:
      if (length !== 8) return `id reservation of ${length} bytes`;
      return { kind: KIND_IDS, idHighWater: getU64(view(p), 0) };
    case KIND_PURGE:
    case KIND_POLICY:
    case KIND_LIMITS:
      return decodeTube(kind, p);
    case KIND_SCHEDULE:
      return decodeSchedule(p);
    case KIND_FULL:
    case KIND_SHORT:
    case KIND_FULL_X:
    case KIND_SCHEDULED_JOB:
      return decodeJob(kind, p);
    default:
      return `record kind ${kind}`;
  }
}
