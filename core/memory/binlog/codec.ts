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
// Record = 16-byte header + payload:
//   0  1  0xB7 marker
//   1  1  kind: 1 full job, 2 short job (state update), 3 id reservation, 4 full job
//           with extensions, 5 purge, 6 tube policy (4-6: issue 19's extensions; a log
//           without them reads as before, and earlier releases skip them as unknown)
//   2  2  zero
//   4  4  payload length
//   8  4  CRC-32C(salt ++ payload)
//  12  4  CRC-32C(salt ++ header bytes 0..11)
// The header checksum makes the length trustworthy on its own: a record whose
// payload is damaged but whose header is intact is skipped by its length. The salt
// stops a job body that happens to contain encoded records (say, a binlog stored as
// a job) from being taken for real records when recovery scans past damage.
//
// Job payload (kinds 1 and 2): a 76-byte fixed part, then for kind 1 the tube name
// and the body (rest of the payload, including the body's trailing CRLF):
//   0  8  id            16  8  delayMs      48  8  bury order (0 unless buried)
//   8  4  pri           24  8  ttrMs        56  4  reserves   60 timeouts
//  12  1  state         32  8  createdAtMs  64  4  releases   68 buries
//  13  1  tube length   40  8  deadlineAtMs 72  4  kicks
//  14  2  zero
// state: 0 deleted, 1 ready, 2 reserved, 3 buried, 4 delayed (beanstalkd's numbers).
// Id reservation payload (kind 3): 8 bytes, the new id high-water.
// Full job with extensions (kind 4): as kind 1, with between the tube name and the
// body: 1 byte key length K, K bytes of put-unique key, 1 byte origin length O, O
// bytes of the dead letter's tube of origin (either may be empty).
// Purge (kind 5, delete-tube): 1 byte tube length T, the tube name, then the ids of
// the jobs deleted, 8 bytes each: one record for the whole command. Replay deletes
// every one of them (reserved ones too: those were to be deleted when they came back,
// and a restart brings them back).
// Tube policy (kind 6, set-dlq / set-backoff): 4 maxAttempts, 4 backoff base s, 4
// backoff cap s, 1 tube length T, 1 dead tube length D, the two names. The newest
// record of a tube wins; all zero clears it. Each new file starts with the policies
// in force (binlog.ts), so removing old files never loses one.
//
// Under -f 0 a file open for writing may end in zero bytes (preallocated blocks, see
// open.ts): at most PREALLOCATION_CHUNK plus a block of them, up to a multiple of
// PREALLOCATION_BLOCK (files.ts). A file that a crash left that way is read as usual.
import type { JobRecord, JobState } from "../wal.ts";
import { crc32cFinal, crc32cUpdate, CRC_INIT } from "./crc.ts";

/** Log files are LOG_NAME_PREFIX + N (earlier releases wrote binlog.N: see legacy_names.ts). */
export const LOG_NAME_PREFIX = "tubeway.";
export const FILE_MAGIC = Uint8Array.of(0x89, 0x54, 0x57, 0x4c, 0x0d, 0x0a, 0x1a, 0x0a);
export const FORMAT_VERSION = 1;
export const FILE_HEADER_SIZE = 40;
export const RECORD_MARK = 0xb7;
export const KIND_FULL = 1;
export const KIND_SHORT = 2;
export const KIND_IDS = 3;
export const KIND_FULL_X = 4;
export const KIND_PURGE = 5;
export const KIND_POLICY = 6;
export const RECORD_HEADER_SIZE = 16;
export const FIXED_SIZE = 76;
export const SHORT_RECORD_SIZE = RECORD_HEADER_SIZE + FIXED_SIZE;
export const IDS_RECORD_SIZE = RECORD_HEADER_SIZE + 8;
export const MAX_TUBE_BYTES = 255;
/** The most zero bytes preallocated at a time (open.ts preallocation()). */
export const PREALLOCATION_CHUNK = 64 * 1024;
/** Largest payload accepted: a 1 GiB body (beanstalkd's -z cap) plus CRLF and names. */
export const MAX_PAYLOAD = FIXED_SIZE + MAX_TUBE_BYTES + 2 ** 30 + 2;

const STATES: ReadonlyArray<JobState | "deleted"> = ["deleted", "ready", "reserved", "buried", "delayed"];
const STATE_CODE: Record<JobState | "deleted", number> = {
  deleted: 0,
  ready: 1,
  reserved: 2,
  buried: 3,
  delayed: 4,
};
const utf8 = new TextEncoder();

/**
 * Tube names encoded once: every full record carries its tube's name, and encoding it
 * per record showed up in profiles. Bounded; cleared wholesale when full.
 */
const tubeBytes = new Map<string, Uint8Array>();
function encodeTube(name: string): Uint8Array {
  let b = tubeBytes.get(name);
  if (!b) {
    if (tubeBytes.size >= 4096) tubeBytes.clear();
    b = utf8.encode(name);
    tubeBytes.set(name, b);
  }
  return b;
}
/** A name written after a one-byte length (a tube, a unique key, an origin): at most MAX_TUBE_BYTES. */
function short(b: Uint8Array, what: string): Uint8Array {
  if (b.length > MAX_TUBE_BYTES) throw new RangeError(`${what} too long: ${b.length} bytes`);
  return b;
}
const EMPTY = new Uint8Array(0);
const fromUtf8 = new TextDecoder();

export interface FileHeader {
  seq: number;
  idHighWater: number;
  salt: number;
}

/** A decoded record. buryOrder orders buried jobs (see binlog.ts). */
export type Decoded =
  | { kind: typeof KIND_FULL | typeof KIND_SHORT | typeof KIND_FULL_X; rec: JobRecord; buryOrder: number }
  | { kind: typeof KIND_IDS; idHighWater: number }
  | { kind: typeof KIND_PURGE; tube: string; ids: number[] }
  | { kind: typeof KIND_POLICY; tube: string; policy: PolicyRecord };

/** A tube's retry policy as the log keeps it (core/memory/extras.ts RetryPolicy). */
export interface PolicyRecord {
  maxAttempts: number;
  deadTube: string;
  backoffBaseSec: number;
  backoffCapSec: number;
}

function putU64(v: DataView, at: number, n: number): void {
  v.setUint32(at, n % 2 ** 32, true);
  v.setUint32(at + 4, Math.floor(n / 2 ** 32), true);
}

function getU64(v: DataView, at: number): number {
  return v.getUint32(at, true) + v.getUint32(at + 4, true) * 2 ** 32;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** The CRC state a file's records start from: the salt already fed in. */
export function saltState(salt: number): number {
  const b = new Uint8Array(4);
  view(b).setUint32(0, salt, true);
  return crc32cUpdate(CRC_INIT, b);
}

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

/**
 * Write a record header at `at` for the payload already in out[at + 16, + length).
 * `v` views all of `out` (offset 0 = out[0]). Every byte is written: `out` may be a
 * reused buffer.
 */
function frameAt(kind: number, length: number, salt: number, out: Uint8Array, v: DataView, at: number): void {
  const p = at + RECORD_HEADER_SIZE;
  out[at] = RECORD_MARK;
  out[at + 1] = kind;
  out[at + 2] = 0;
  out[at + 3] = 0;
  v.setUint32(at + 4, length, true);
  v.setUint32(at + 8, crc32cFinal(crc32cUpdate(salt, out, p, p + length)), true);
  v.setUint32(at + 12, crc32cFinal(crc32cUpdate(salt, out, at, at + 12)), true);
}

/**
 * Encode a job record. `full` adds tube and body (rec.body must be set).
 * `salt` is the file's saltState(). Throws RangeError on a tube name over 255 bytes.
 */
export function encodeJob(full: boolean, rec: JobRecord, buryOrder: number, salt: number): Uint8Array {
  const size = full ? fullRecordSize(rec) : SHORT_RECORD_SIZE;
  const out = new Uint8Array(size);
  encodeJobAt(full, rec, buryOrder, salt, out, view(out), 0);
  return out;
}

/**
 * encodeJob into out[at, at + size) (size: fullRecordSize or SHORT_RECORD_SIZE),
 * without allocating; `v` views all of `out`. Returns the end offset. Throws
 * RangeError on a tube name over 255 bytes, before writing anything.
 */
export function encodeJobAt(
  full: boolean,
  rec: JobRecord,
  buryOrder: number,
  salt: number,
  out: Uint8Array,
  v: DataView,
  at: number,
): number {
  const tube = full ? short(encodeTube(rec.tube), "tube name") : EMPTY;
  const body = full ? rec.body ?? EMPTY : EMPTY;
  const x = full ? extrasOf(rec) : undefined;
  const length = FIXED_SIZE + tube.length + (x ? 2 + x[0].length + x[1].length : 0) + body.length;
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
    }
    out.set(body, q);
  }
  frameAt(full ? (x ? KIND_FULL_X : KIND_FULL) : KIND_SHORT, length, salt, out, v, at);
  return p + length;
}

/** A full record's extension strings (key, origin) when it has any: kind 4 instead of 1. */
function extrasOf(rec: JobRecord): [Uint8Array, Uint8Array] | undefined {
  if (rec.key === undefined && rec.from === undefined) return undefined;
  return [
    short(utf8.encode(rec.key ?? ""), `job ${rec.id}: key`),
    short(utf8.encode(rec.from ?? ""), `job ${rec.id}: origin`),
  ];
}

/** Size on disk of a purge record. */
export function purgeRecordSize(tube: string, ids: number): number {
  return RECORD_HEADER_SIZE + 1 + encodeTube(tube).length + 8 * ids;
}

/** A purge record (kind 5) into out[at, at + purgeRecordSize); returns the end offset. */
export function encodePurgeAt(
  tube: string,
  ids: readonly number[],
  salt: number,
  out: Uint8Array,
  v: DataView,
  at: number,
): number {
  const name = short(encodeTube(tube), "tube name");
  let q = at + RECORD_HEADER_SIZE;
  out[q++] = name.length;
  out.set(name, q);
  q += name.length;
  for (const id of ids) {
    putU64(v, q, id);
    q += 8;
  }
  frameAt(KIND_PURGE, q - at - RECORD_HEADER_SIZE, salt, out, v, at);
  return q;
}

/** Size on disk of a tube policy record. */
export function policyRecordSize(tube: string, p: PolicyRecord): number {
  return RECORD_HEADER_SIZE + 14 + encodeTube(tube).length + encodeTube(p.deadTube).length;
}

/** A tube policy record (kind 6) into out[at, at + policyRecordSize); returns the end offset. */
export function encodePolicyAt(
  tube: string,
  p: PolicyRecord,
  salt: number,
  out: Uint8Array,
  v: DataView,
  at: number,
): number {
  const name = short(encodeTube(tube), "tube name");
  const dead = short(encodeTube(p.deadTube), "dead-letter tube name");
  const q = at + RECORD_HEADER_SIZE;
  v.setUint32(q, p.maxAttempts >>> 0, true);
  v.setUint32(q + 4, p.backoffBaseSec >>> 0, true);
  v.setUint32(q + 8, p.backoffCapSec >>> 0, true);
  out[q + 12] = name.length;
  out[q + 13] = dead.length;
  out.set(name, q + 14);
  out.set(dead, q + 14 + name.length);
  const length = 14 + name.length + dead.length;
  frameAt(KIND_POLICY, length, salt, out, v, at);
  return q + length;
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

/** Size on disk of a full record for this job. */
export function fullRecordSize(rec: JobRecord): number {
  const x = rec.key === undefined && rec.from === undefined
    ? 0
    : 2 + utf8.encode(rec.key ?? "").length + utf8.encode(rec.from ?? "").length;
  return RECORD_HEADER_SIZE + FIXED_SIZE + encodeTube(rec.tube).length + x + (rec.body?.length ?? 0);
}

export type HeaderCheck =
  | { ok: true; kind: number; length: number; payloadCrc: number }
  | { ok: false; reason: string };

/** Check the record header at `at` (the caller made sure 16 bytes are there). */
export function checkRecordHeader(b: Uint8Array, at: number, salt: number): HeaderCheck {
  const v = view(b);
  if (b[at] !== RECORD_MARK) return { ok: false, reason: "no record marker" };
  if (crc32cFinal(crc32cUpdate(salt, b, at, at + 12)) !== v.getUint32(at + 12, true)) {
    return { ok: false, reason: "record header checksum mismatch" };
  }
  const kind = b[at + 1]!;
  const length = v.getUint32(at + 4, true);
  if (kind < KIND_FULL || kind > KIND_POLICY || b[at + 2] !== 0 || b[at + 3] !== 0) {
    return { ok: false, reason: `unknown record kind ${kind}` };
  }
  if (length > MAX_PAYLOAD) return { ok: false, reason: `record length ${length} is impossible` };
  return { ok: true, kind, length, payloadCrc: v.getUint32(at + 8, true) };
}

export function payloadMatches(b: Uint8Array, start: number, length: number, crc: number, salt: number): boolean {
  return crc32cFinal(crc32cUpdate(salt, b, start, start + length)) === crc;
}

/** Decode a checksummed payload; a string is the reason it is malformed. */
export function decodePayload(kind: number, b: Uint8Array, start: number, length: number): Decoded | string {
  const p = b.subarray(start, start + length);
  const v = view(p);
  if (kind === KIND_IDS) {
    if (length !== 8) return `id reservation of ${length} bytes`;
    return { kind: KIND_IDS, idHighWater: getU64(v, 0) };
  }
  if (kind === KIND_PURGE) {
    const t = p[0] ?? 0;
    if (length < 1 + t || t === 0 || (length - 1 - t) % 8 !== 0) return `purge record of ${length} bytes`;
    const ids: number[] = [];
    for (let q = 1 + t; q < length; q += 8) ids.push(getU64(v, q));
    return { kind: KIND_PURGE, tube: fromUtf8.decode(p.subarray(1, 1 + t)), ids };
  }
  if (kind === KIND_POLICY) {
    if (length < 14) return `policy record of ${length} bytes`;
    const t = p[12]!;
    const d = p[13]!;
    if (t === 0 || length !== 14 + t + d) return `policy record of ${length} bytes`;
    return {
      kind: KIND_POLICY,
      tube: fromUtf8.decode(p.subarray(14, 14 + t)),
      policy: {
        maxAttempts: v.getUint32(0, true),
        backoffBaseSec: v.getUint32(4, true),
        backoffCapSec: v.getUint32(8, true),
        deadTube: fromUtf8.decode(p.subarray(14 + t, 14 + t + d)),
      },
    };
  }
  if (length < FIXED_SIZE) return `job record of ${length} bytes`;
  const id = getU64(v, 0);
  const state = STATES[p[12]!];
  const tubeLength = p[13]!;
  if (id < 1 || !Number.isSafeInteger(id)) return `bad job id ${id}`;
  if (state === undefined) return `bad job state ${p[12]}`;
  if (kind === KIND_SHORT && length !== FIXED_SIZE) return `short record of ${length} bytes`;
  const full = kind === KIND_FULL || kind === KIND_FULL_X;
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
  if (kind === KIND_FULL_X) {
    const parts: string[] = [];
    for (let i = 0; i < 2; i++) {
      const n = p[q];
      if (n === undefined || q + 1 + n > length) return `job ${id} has bad extensions`;
      parts.push(fromUtf8.decode(p.subarray(q + 1, q + 1 + n)));
      q += 1 + n;
    }
    if (parts[0] !== "") rec.key = parts[0]!;
    if (parts[1] !== "") rec.from = parts[1]!;
  }
  if (full) rec.body = p.slice(q);
  return { kind: kind as typeof KIND_FULL | typeof KIND_SHORT | typeof KIND_FULL_X, rec, buryOrder: getU64(v, 48) };
}

/** Encode a record of the size given to Binlog#write into buf[at, ...) (`v` views all of buf). */
export type Encode = (salt: number, buf: Uint8Array, v: DataView, at: number) => void;

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
