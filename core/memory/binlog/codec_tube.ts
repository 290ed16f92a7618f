// Records about a whole tube (codec.ts describes the format around them).
//
// Purge (kind 5, delete-tube): 1 byte tube length T, the tube name, then the ids of
// the jobs deleted, 8 bytes each: one record for the whole command. Replay deletes
// every one of them (reserved ones too: those were to be deleted when they came back,
// and a restart brings them back).
// Tube policy (kind 6, set-dlq / set-backoff): 4 maxAttempts, 4 backoff base s, 4
// backoff cap s, 1 tube length T, 1 dead tube length D, the two names.
// Tube limits (kind 7, set-concurrency / set-rate): 4 concurrency, 4 rate count, 4 rate
// window s, 1 tube length T, the name.
// For policies and limits the newest record of a tube wins and all zero clears it; each
// new file starts with those in force (binlog.ts), so removing old files never loses one.
import type { TubeLimits } from "../wal.ts";
import {
  encodeName,
  frameAt,
  fromUtf8,
  getU64,
  KIND_LIMITS,
  KIND_POLICY,
  KIND_PURGE,
  putU64,
  RECORD_HEADER_SIZE,
  short,
  view,
} from "./frame.ts";

/** A tube's retry policy as the log keeps it (core/memory/extras.ts RetryPolicy). */
export interface PolicyRecord {
  maxAttempts: number;
  deadTube: string;
  backoffBaseSec: number;
  backoffCapSec: number;
}

export type DecodedTube =
  | { kind: typeof KIND_PURGE; tube: string; ids: number[] }
  | { kind: typeof KIND_POLICY; tube: string; policy: PolicyRecord }
  | { kind: typeof KIND_LIMITS; tube: string; limits: TubeLimits };

/** Size on disk of a purge record. */
export function purgeRecordSize(tube: string, ids: number): number {
  return RECORD_HEADER_SIZE + 1 + encodeName(tube).length + 8 * ids;
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
  const name = short(encodeName(tube), "tube name");
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
  return RECORD_HEADER_SIZE + 14 + encodeName(tube).length + encodeName(p.deadTube).length;
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
  const name = short(encodeName(tube), "tube name");
  const dead = short(encodeName(p.deadTube), "dead-letter tube name");
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

/** Size on disk of a tube limits record. */
export function limitsRecordSize(tube: string): number {
  return RECORD_HEADER_SIZE + 13 + encodeName(tube).length;
}

/** A tube limits record (kind 7) into out[at, at + limitsRecordSize); returns the end offset. */
export function encodeLimitsAt(
  tube: string,
  l: TubeLimits,
  salt: number,
  out: Uint8Array,
  v: DataView,
  at: number,
): number {
  const name = short(encodeName(tube), "tube name");
  const q = at + RECORD_HEADER_SIZE;
  v.setUint32(q, l.concurrency >>> 0, true);
  v.setUint32(q + 4, l.rateCount >>> 0, true);
  v.setUint32(q + 8, l.rateWindowSec >>> 0, true);
  out[q + 12] = name.length;
  out.set(name, q + 13);
  const length = 13 + name.length;
  frameAt(KIND_LIMITS, length, salt, out, v, at);
  return q + length;
}

/** Whether limits do anything (all zero: the record clears the tube's). */
export function activeLimits(l: TubeLimits): boolean {
  return l.concurrency > 0 || l.rateCount > 0;
}

/** Decode a checksummed tube payload p (kinds 5-7); a string is the reason it is malformed. */
export function decodeTube(kind: DecodedTube["kind"], p: Uint8Array): DecodedTube | string {
  const length = p.length;
  const v = view(p);
  if (kind === KIND_PURGE) {
    const t = p[0] ?? 0;
    if (length < 1 + t || t === 0 || (length - 1 - t) % 8 !== 0) return `purge record of ${length} bytes`;
    const ids: number[] = [];
    for (let q = 1 + t; q < length; q += 8) ids.push(getU64(v, q));
    return { kind: KIND_PURGE, tube: fromUtf8.decode(p.subarray(1, 1 + t)), ids };
  }
  if (kind === KIND_LIMITS) {
    const t = p[12] ?? 0;
    if (length < 13 || t === 0 || length !== 13 + t) return `limits record of ${length} bytes`;
    const limits = { concurrency: v.getUint32(0, true), rateCount: v.getUint32(4, true), rateWindowSec: 0 };
    if (limits.rateCount > 0) limits.rateWindowSec = v.getUint32(8, true);
    return { kind: KIND_LIMITS, tube: fromUtf8.decode(p.subarray(13, 13 + t)), limits };
  }
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
