// Writing jobs as one beanstalkd version-7 binlog file: the way back from tubeway.
// beanstalkd 1.5 … 1.13 reads it on start with -b DIR (file.c readrec). Every job
// gets one full record in its current state, in the order given: beanstalkd
// restores jobs in the order it first sees them, so buried jobs must come in the
// order of their tube's buried list (what `kick` takes first comes first).
// Pure: records in, bytes out.
import type { JobRecord } from "../wal.ts";

/** sizeof(Jobrec) on LP64 (x86-64, arm64); the file header is a 4-byte int. */
const JOBREC_BYTES = 80;
const VERSION = 7;
const NS_PER_MS = 1_000_000;

const STATE_BYTE = { deleted: 0, ready: 1, reserved: 2, buried: 3, delayed: 4 } as const;

/** Bytes the file takes for `jobs`. */
function sizeOf(jobs: JobRecord[], names: Uint8Array[]): number {
  let n = 4;
  jobs.forEach((j, i) => (n += 4 + names[i]!.length + JOBREC_BYTES + j.body!.length));
  return n;
}

/** A ready job in tube "default" with an empty body, then its delete: 2 records. */
const TOMBSTONE_NAME = new TextEncoder().encode("default");
const TOMBSTONE_BYTES = 4 + TOMBSTONE_NAME.length + JOBREC_BYTES + 2 + 4 + JOBREC_BYTES;

function writeTombstone(out: Uint8Array, v: DataView, off: number, id: number): void {
  v.setInt32(off, TOMBSTONE_NAME.length, true);
  out.set(TOMBSTONE_NAME, off + 4);
  const at = off + 4 + TOMBSTONE_NAME.length;
  v.setUint32(at, id % 2 ** 32, true);
  v.setUint32(at + 4, Math.floor(id / 2 ** 32), true);
  setNs(v, at + 24, 1000); // ttr 1 s: a job of 0 s TTR is not one beanstalkd makes
  v.setInt32(at + 32, 2, true);
  out[at + 76] = STATE_BYTE.ready;
  out.set([13, 10], at + JOBREC_BYTES);
  // the short record: name length 0 (already zero), the same Jobrec with state 0
  const short = at + JOBREC_BYTES + 2 + 4;
  out.copyWithin(short, at, at + JOBREC_BYTES);
  out[short + 76] = STATE_BYTE.deleted;
}

/** Write ms as an i64 of ns (two 32-bit halves: no BigInt per field). */
function setNs(v: DataView, at: number, ms: number): void {
  const ns = Math.round(ms) * NS_PER_MS; // below 2^63; exact to within a few hundred ns
  const hi = Math.floor(ns / 2 ** 32);
  v.setInt32(at + 4, hi, true);
  v.setUint32(at, ns - hi * 2 ** 32, true);
}

/**
 * The file bytes. Jobs need their body (with its trailing CRLF); a reserved job is
 * written ready (beanstalkd would make it ready on replay anyway), a deleted one is
 * left out. `idFloor`: beanstalkd's next id is one above the highest id of a job
 * it created on replay, so when ids up to idFloor were handed out (jobs since
 * deleted) the file ends with a job of that id, put and deleted: a full record
 * then a short one with state 0. Replay creates the job (which moves its next id
 * above it) and frees it (file.c readrec); a full record with state 0 alone would
 * not be created at all.
 */
export function encodeV7(jobs: JobRecord[], idFloor = 0): Uint8Array {
  const live = jobs.filter((j) => j.state !== "deleted");
  const top = live.reduce((n, j) => Math.max(n, j.id), 0);
  const tombstone = idFloor > top;
  for (const j of live) if (!j.body) throw new Error(`job ${j.id} has no body`);
  const enc = new TextEncoder();
  const names = live.map((j) => enc.encode(j.tube));
  const out = new Uint8Array(sizeOf(live, names) + (tombstone ? TOMBSTONE_BYTES : 0));
  const v = new DataView(out.buffer);
  v.setInt32(0, VERSION, true);
  let off = 4;
  live.forEach((j, i) => {
    const name = names[i]!;
    v.setInt32(off, name.length, true);
    out.set(name, off + 4);
    const at = off + 4 + name.length;
    v.setUint32(at, j.id % 2 ** 32, true);
    v.setUint32(at + 4, Math.floor(j.id / 2 ** 32), true);
    v.setUint32(at + 8, j.pri, true);
    setNs(v, at + 16, j.delayMs);
    setNs(v, at + 24, j.ttrMs);
    v.setInt32(at + 32, j.body!.length, true);
    setNs(v, at + 40, j.createdAtMs);
    setNs(v, at + 48, j.state === "delayed" ? j.deadlineAtMs : 0);
    v.setUint32(at + 56, j.reserves, true);
    v.setUint32(at + 60, j.timeouts, true);
    v.setUint32(at + 64, j.releases, true);
    v.setUint32(at + 68, j.buries, true);
    v.setUint32(at + 72, j.kicks, true);
    out[at + 76] = STATE_BYTE[j.state === "reserved" ? "ready" : j.state];
    out.set(j.body!, at + JOBREC_BYTES);
    off = at + JOBREC_BYTES + j.body!.length;
  });
  if (tombstone) writeTombstone(out, v, off, idFloor);
  return out;
}

/**
 * The smallest -z with which beanstalkd 1.12 reads every job back: its replay
 * compares the stored size (body + CRLF) with -z, so a body of exactly -z bytes is
 * refused there, and with it the rest of the file.
 */
export function minMaxJobSize(jobs: JobRecord[]): number {
  let n = 0;
  for (const j of jobs) if (j.body) n = Math.max(n, j.body.length);
  return n;
}
