// Reading beanstalkd's own binlog files (v7 from 1.5 … 1.13, v5 from 1.4.x) into
// JobRecords, following beanstalkd's replay rules (file.c readrec, prot.c
// prot_replay): records in (file number, offset) order, the last record of a job
// wins, a short record of an unknown id is ignored, state 0 deletes, reserved comes
// back ready, delayed keeps its absolute deadline.
//
// Where we read better than 1.12 (README.md beside this file has the details):
//   * no size check against -z: 1.12 compares the stored size (body + CRLF) with -z
//     and so rejects bodies of exactly -z and -z - 1 bytes, losing the rest of the
//     file with them;
//   * every unreadable record is reported as `<file>:<offset>: <reason>`, and after
//     damage the reader looks for the next record that parses plausibly, instead of
//     skipping the rest of the file;
//   * buried jobs come back in the order they were buried (the order of the records
//     that buried them); 1.12 restores them in the order it first saw the jobs, so
//     after its restart `kick` can take them in another order than before;
//   * bury counters are taken as written; 1.12's replay adds one to each buried
//     job's (it counts the replay as a bury);
//   * ids above 2^53 (which a JavaScript number cannot hold) are reported, not
//     rounded.
// Pure: bytes in, records out. Little-endian 64-bit layouts only (what real
// installations write); other layouts are reported by file, never guessed at.
import type { JobRecord, JobState } from "../wal.ts";

/** One binlog.N file: its name (for messages) and its bytes. */
export interface SourceFile {
  name: string;
  bytes: Uint8Array;
}

export interface Problem {
  file: string;
  offset: number;
  reason: string;
}

export interface ReadResult {
  /**
   * Live jobs: the others in the order first seen, then the buried ones in bury
   * order (append them to their tubes' buried lists in array order). Reserved ones
   * are already made ready.
   */
  jobs: JobRecord[];
  /** Highest id in any record (0 when none): new ids go above it. */
  maxId: number;
  /** Files whose records were read (a known version). */
  filesRead: number;
  /** Jobs that were reserved when the log was written (now ready). */
  wereReserved: number;
  problems: Problem[];
}

/** beanstalkd's data file names: `binlog.` and a decimal number. */
const NAME = /^binlog\.([0-9]{1,15})$/;

/** The N of a beanstalkd data file name, or undefined for any other name. */
export function binlogSeq(name: string): number | undefined {
  const m = NAME.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** A record layout: v7 (ns, int name length, 80-byte Jobrec) or v5 (µs, size_t, 77 bytes). */
interface Layout {
  nameLenBytes: 4 | 8;
  jobrecBytes: number;
  /** Divide the file's time values by this to get ms. */
  perMs: number;
}

const V7: Layout = { nameLenBytes: 4, jobrecBytes: 80, perMs: 1_000_000 };
const V5: Layout = { nameLenBytes: 8, jobrecBytes: 77, perMs: 1_000 };

/** beanstalkd's MAX_TUBE_NAME_LEN is 201 including the NUL. */
const MAX_NAME = 200;

const STATES: (JobState | "deleted")[] = ["deleted", "ready", "reserved", "buried", "delayed"];

/** Bytes beanstalkd accepts in a tube name (prot.c NAME_CHARS). */
function nameByte(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) ||
    c === 0x2d || c === 0x2b || c === 0x2f || c === 0x3b || c === 0x2e || c === 0x24 || c === 0x5f ||
    c === 0x28 || c === 0x29;
}

/** Stateless (no streaming decode), so one serves every call. */
const TEXT = new TextDecoder();

/**
 * 64-bit integers as two 32-bit halves: BigInt per field was most of the reading
 * time. Exact up to 2^53; the times (ns since 1970, about 2^61) lose some ns, not ms.
 */
function u64(v: DataView, at: number): number {
  return v.getUint32(at + 4, true) * 2 ** 32 + v.getUint32(at, true);
}
function i64(v: DataView, at: number): number {
  return v.getInt32(at + 4, true) * 2 ** 32 + v.getUint32(at, true);
}

function allZero(b: Uint8Array, from: number): boolean {
  for (let i = from; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

type Parsed =
  /** `zeros`: only zero bytes from here to the end of the file (the preallocated tail) */
  | { kind: "end"; zeros: boolean }
  | { kind: "record"; rec: JobRecord; full: boolean; next: number }
  | { kind: "bad"; reason: string; /** the record's extent is known: reading can go on here */ next?: number };

/**
 * The record at `off`. `strict` (used when looking for a restart point after
 * damage) also demands what a genuine record always has: zero padding, a valid
 * tube name, a state beanstalkd writes.
 */
function parseAt(b: Uint8Array, v: DataView, off: number, l: Layout, strict: boolean): Parsed {
  const left = b.length - off;
  // allZero stops at the first nonzero byte: a few bytes into any record
  if (left === 0 || allZero(b, off)) return { kind: "end", zeros: true };
  if (left < l.nameLenBytes) return { kind: "bad", reason: `truncated record (${left} bytes left)` };
  const nameLen = l.nameLenBytes === 4 ? v.getInt32(off, true) : Number(v.getBigInt64(off, true));
  if (nameLen < 0 || nameLen > MAX_NAME) return { kind: "bad", reason: `bad tube name length ${nameLen}` };
  const at = off + l.nameLenBytes + nameLen;
  if (at + l.jobrecBytes > b.length) {
    return { kind: "bad", reason: `truncated record: needs ${at + l.jobrecBytes - off} bytes, ${left} left` };
  }
  const id = u64(v, at);
  if (id === 0) {
    // beanstalkd stops reading a file at an id of 0 (the zeroed preallocated tail)
    return nameLen === 0 ? { kind: "end", zeros: false } : { kind: "bad", reason: "job id 0 in a full record" };
  }
  if (!Number.isSafeInteger(id)) return { kind: "bad", reason: `job id ${v.getBigUint64(at, true)} is too large` };
  const stateByte = b[at + 76]!;
  const state = STATES[stateByte];
  if (state === undefined) return { kind: "bad", reason: `unknown job state ${stateByte}` };
  const bodySize = v.getInt32(at + 32, true);
  const full = nameLen > 0;
  const end = full ? at + l.jobrecBytes + bodySize : at + l.jobrecBytes;
  if (strict) {
    const pads = l.jobrecBytes === 80 ? [12, 13, 14, 15, 36, 37, 38, 39, 77, 78, 79] : [12, 13, 14, 15, 36, 37, 38, 39];
    if (pads.some((p) => b[at + p] !== 0)) return { kind: "bad", reason: "nonzero padding" };
    for (let i = off + l.nameLenBytes; i < at; i++) if (!nameByte(b[i]!)) return { kind: "bad", reason: "tube name" };
    if (full && (state === "deleted" || bodySize < 2)) return { kind: "bad", reason: "implausible full record" };
  }
  if (full && bodySize < 2) return { kind: "bad", reason: `bad body size ${bodySize}`, next: at + l.jobrecBytes };
  if (end > b.length) return { kind: "bad", reason: `truncated record: needs ${end - off} bytes, ${left} left` };
  // nearest ms: the halves cannot hold every ns exactly, and a time written from whole ms must read back as it was
  const ms = (pos: number) => Math.round(i64(v, pos) / l.perMs);
  const rec: JobRecord = {
    id,
    tube: full ? TEXT.decode(b.subarray(off + l.nameLenBytes, at)) : "",
    pri: v.getUint32(at + 8, true),
    delayMs: ms(at + 16),
    ttrMs: ms(at + 24),
    createdAtMs: ms(at + 40),
    deadlineAtMs: state === "delayed" ? ms(at + 48) : 0,
    state,
    reserves: v.getUint32(at + 56, true),
    timeouts: v.getUint32(at + 60, true),
    releases: v.getUint32(at + 64, true),
    buries: v.getUint32(at + 68, true),
    kicks: v.getUint32(at + 72, true),
  };
  if (full) {
    const body = b.slice(at + l.jobrecBytes, end);
    if (body[bodySize - 2] !== 0x0d || body[bodySize - 1] !== 0x0a) {
      return { kind: "bad", reason: `job ${id}: body does not end in CRLF; record skipped`, next: end };
    }
    rec.body = body;
  }
  return { kind: "record", rec, full, next: end };
}

/** The next offset after `from` where a record parses under the strict checks, or -1. */
function resync(b: Uint8Array, v: DataView, from: number, l: Layout, known: Map<number, JobRecord>): number {
  for (let p = from; p + l.nameLenBytes + l.jobrecBytes <= b.length; p++) {
    const r = parseAt(b, v, p, l, true);
    if (r.kind === "end" && r.zeros) return -1;
    // a short record is only 4 zero bytes and a Jobrec: trust it only for a job we know
    if (r.kind === "record" && (r.full || known.has(r.rec.id))) return p;
  }
  return -1;
}

/** Jobs by id in the order first seen, and the bury order of the buried ones. */
interface Replay {
  jobs: Map<number, JobRecord>;
  buryOrder: Map<number, number>;
  buries: number;
}

/** Apply one record with beanstalkd's replay rules (prot_replay, walread). */
function apply(r: Replay, rec: JobRecord, full: boolean): void {
  const old = r.jobs.get(rec.id);
  if (rec.state === "deleted") {
    r.jobs.delete(rec.id);
    r.buryOrder.delete(rec.id);
    return;
  }
  // a short record of a job whose full record was in a collected file: nothing to update
  if (!old && !full) return;
  // a record that buries the job marks its place in the buried list; a compaction
  // copy of a job already buried keeps the place it has
  if (rec.state !== "buried") r.buryOrder.delete(rec.id);
  else if (old?.state !== "buried" || !r.buryOrder.has(rec.id)) r.buryOrder.set(rec.id, ++r.buries);
  if (!old) r.jobs.set(rec.id, rec);
  else if (full) Object.assign(old, rec); // a compaction copy: same place in the restore order
  else Object.assign(old, rec, { tube: old.tube, body: old.body });
}

/** Read one file's records into `jobs`; false when its version is not one we read. */
function readFile(
  f: SourceFile,
  replay: Replay,
  out: ReadResult,
  report: (off: number, reason: string) => void,
): boolean {
  const b = f.bytes;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length < 4) {
    report(0, b.length === 0 ? "empty file" : "truncated header");
    return false;
  }
  const version = v.getInt32(0, true);
  const layout = version === 7 ? V7 : version === 5 ? V5 : undefined;
  if (!layout) {
    const be = v.getInt32(0, false);
    report(
      0,
      be === 7 || be === 5
        ? `version ${be} big-endian: not supported; file skipped`
        : `unknown version ${version}; file skipped`,
    );
    return false;
  }
  let off = 4;
  for (;;) {
    const r = parseAt(b, v, off, layout, false);
    if (r.kind === "end" && r.zeros) break;
    if (r.kind === "record") {
      out.maxId = Math.max(out.maxId, r.rec.id);
      apply(replay, r.rec, r.full);
      off = r.next;
      continue;
    }
    if (r.kind === "end") {
      // beanstalkd stops at an id of 0; data after it means zeros where records were
      const next = resync(b, v, off + 1, layout, replay.jobs);
      if (next < 0) break;
      report(off, `a record of job id 0 (zeros), then more data; skipped ${next - off} bytes`);
      off = next;
      continue;
    }
    if (r.next !== undefined) {
      report(off, r.reason);
      off = r.next;
      continue;
    }
    const next = resync(b, v, off + 1, layout, replay.jobs);
    if (next < 0) {
      report(off, `${r.reason}; nothing readable in the remaining ${b.length - off} bytes`);
      break;
    }
    report(off, `${r.reason}; skipped ${next - off} bytes`);
    off = next;
  }
  return true;
}

/**
 * Read beanstalkd's binlog files (any order: they are sorted by N here) into the
 * jobs it would restore. Never throws for damaged data: that is in `problems`.
 */
export function readBeanstalkdLog(files: SourceFile[]): ReadResult {
  const out: ReadResult = { jobs: [], maxId: 0, filesRead: 0, wereReserved: 0, problems: [] };
  const replay: Replay = { jobs: new Map(), buryOrder: new Map(), buries: 0 };
  const sorted = files.map((f) => ({ f, seq: binlogSeq(f.name) ?? 0 })).sort((a, b) => a.seq - b.seq);
  for (const { f } of sorted) {
    const report = (offset: number, reason: string) => out.problems.push({ file: f.name, offset, reason });
    if (readFile(f, replay, out, report)) out.filesRead++;
  }
  const buried: JobRecord[] = [];
  for (const rec of replay.jobs.values()) {
    if (rec.state === "reserved") {
      rec.state = "ready";
      out.wereReserved++;
    }
    if (rec.state === "buried") buried.push(rec);
    else out.jobs.push(rec);
  }
  const order = (j: JobRecord) => replay.buryOrder.get(j.id) ?? 0;
  out.jobs.push(...buried.sort((a, b) => order(a) - order(b)));
  return out;
}

/** A count and its noun, for the lines a person reads: "1 job", "2 jobs", "0 problems". */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** The one-line summary: jobs per state, files read, problems, the next id. */
export function summary(r: ReadResult): string {
  const n = { ready: 0, delayed: 0, buried: 0 };
  for (const j of r.jobs) if (j.state === "ready" || j.state === "delayed" || j.state === "buried") n[j.state]++;
  const reserved = r.wereReserved > 0 ? ` (${r.wereReserved} of them were reserved)` : "";
  return `${counted(r.jobs.length, "job")}: ${n.ready} ready${reserved}, ${n.delayed} delayed, ${n.buried} buried; ` +
    `${counted(r.filesRead, "file")} read, ${counted(r.problems.length, "problem")}; next id ${r.maxId + 1}`;
}
