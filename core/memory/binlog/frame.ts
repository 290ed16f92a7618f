// What every record of the binlog shares (codec.ts describes the format): the 16-byte
// record header with its two salted checksums, the kinds, little-endian numbers, and
// names written after a one-byte length. The payload of each kind is in the codec file
// of its concept (codec_job.ts, codec_tube.ts, codec_schedule.ts).
import { crc32cFinal, crc32cUpdate, CRC_INIT } from "./crc.ts";

export const RECORD_MARK = 0xb7;
export const RECORD_HEADER_SIZE = 16;
export const KIND_FULL = 1;
export const KIND_SHORT = 2;
export const KIND_IDS = 3;
export const KIND_FULL_X = 4;
export const KIND_PURGE = 5;
export const KIND_POLICY = 6;
export const KIND_LIMITS = 7;
export const KIND_SCHEDULE = 8;
export const KIND_SCHEDULED_JOB = 9;
/** The highest kind this release reads (a higher one is reported as unknown and skipped). */
export const KIND_LAST = KIND_SCHEDULED_JOB;
/** The longest name after a one-byte length (a tube, a key, a schedule, a spec). */
export const MAX_NAME_BYTES = 255;
/** Largest payload accepted: a 1 GiB body (beanstalkd's -z cap) plus its CRLF, a fixed part and names. */
export const MAX_PAYLOAD = 2 ** 30 + 2 + 4096;

export function putU64(v: DataView, at: number, n: number): void {
  v.setUint32(at, n % 2 ** 32, true);
  v.setUint32(at + 4, Math.floor(n / 2 ** 32), true);
}

export function getU64(v: DataView, at: number): number {
  return v.getUint32(at, true) + v.getUint32(at + 4, true) * 2 ** 32;
}

export function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

export const utf8 = new TextEncoder();
export const fromUtf8 = new TextDecoder();
export const EMPTY = new Uint8Array(0);

/**
 * Names encoded once: every full record carries its tube's name, and encoding it per
 * record showed up in profiles. Bounded; cleared wholesale when full.
 */
const nameBytes = new Map<string, Uint8Array>();
export function encodeName(name: string): Uint8Array {
  let b = nameBytes.get(name);
  if (!b) {
    if (nameBytes.size >= 4096) nameBytes.clear();
    b = utf8.encode(name);
    nameBytes.set(name, b);
  }
  return b;
}

/** A name written after a one-byte length: at most MAX_NAME_BYTES, else a RangeError (nothing written). */
export function short(b: Uint8Array, what: string): Uint8Array {
  if (b.length > MAX_NAME_BYTES) throw new RangeError(`${what} too long: ${b.length} bytes`);
  return b;
}

/** The CRC state a file's records start from: the salt already fed in. */
export function saltState(salt: number): number {
  const b = new Uint8Array(4);
  view(b).setUint32(0, salt, true);
  return crc32cUpdate(CRC_INIT, b);
}

/**
 * Write a record header at `at` for the payload already in out[at + 16, + length).
 * `v` views all of `out` (offset 0 = out[0]). Every byte is written: `out` may be a
 * reused buffer.
 */
export function frameAt(kind: number, length: number, salt: number, out: Uint8Array, v: DataView, at: number): void {
  const p = at + RECORD_HEADER_SIZE;
  out[at] = RECORD_MARK;
  out[at + 1] = kind;
  out[at + 2] = 0;
  out[at + 3] = 0;
  v.setUint32(at + 4, length, true);
  v.setUint32(at + 8, crc32cFinal(crc32cUpdate(salt, out, p, p + length)), true);
  v.setUint32(at + 12, crc32cFinal(crc32cUpdate(salt, out, at, at + 12)), true);
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
  if (kind < KIND_FULL || kind > KIND_LAST || b[at + 2] !== 0 || b[at + 3] !== 0) {
    return { ok: false, reason: `unknown record kind ${kind}` };
  }
  if (length > MAX_PAYLOAD) return { ok: false, reason: `record length ${length} is impossible` };
  return { ok: true, kind, length, payloadCrc: v.getUint32(at + 8, true) };
}

export function payloadMatches(b: Uint8Array, start: number, length: number, crc: number, salt: number): boolean {
  return crc32cFinal(crc32cUpdate(salt, b, start, start + length)) === crc;
}

/** Encode a record of the size given to Binlog#write into buf[at, ...) (`v` views all of buf). */
export type Encode = (salt: number, buf: Uint8Array, v: DataView, at: number) => void;
