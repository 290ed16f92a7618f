// Reading the binlog at startup. Files tubeway.N are read in increasing N and every
// intact record is replayed; damage is reported as `<path>:<offset>: <reason>` and
// skipped, never thrown. The rules:
//   * A record counts only when its header checksum and its payload checksum (both
//     salted with the file's salt) match. After any bad spot we scan forward byte by
//     byte for the next record that passes both checks and carry on from there, so
//     one flipped byte costs one record, not the rest of the file (beanstalkd stops
//     reading the file at the first error).
//   * A record whose checksummed length runs past the end of the file is a torn
//     tail: it and the (nonexistent) rest are dropped. Zero bytes up to the end of
//     the file are an unwritten tail (delayed allocation after a power cut), and are
//     reported, unless they are what preallocation leaves (-f 0, codec.ts): at most
//     PREALLOCATION_CHUNK plus a block of them, up to a file end on a block boundary.
//     That is every file a crash interrupted under -f 0, so it is no news.
//   * A file whose header is not ours (magic, version) is reported and left alone;
//     an empty or all-zero file holds nothing and is removed. A header with a bad
//     checksum is reported, and its records are still tried with its salt: only
//     records that verify are used, so a wrong salt just yields nothing.
//   * Replay: a full record creates the job or replaces all its fields; a short
//     record updates a known job (unknown ids are ignored: their full record was in
//     a file already collected); state deleted removes the job. Reserved comes back
//     ready. Delayed keeps its absolute deadline. No size check against -z: a job
//     that was accepted is replayed whatever -z is now (beanstalkd's off-by-two
//     check loses jobs of the maximum size and everything after them).
//   * Extensions (docs/extensions.md): a full record with extensions (kind 4) is a full record that also
//     carries a key and an origin; a purge (kind 5) deletes each job it lists; a tube
//     policy (kind 6) or limits (kind 7) replace the tube's (all zero: remove them); a
//     schedule (kind 8) replaces the schedule of its name (no tube: removes it); a
//     scheduled job (kind 9) is a full record, and its run is the schedule's last one.
//   * Buried jobs come back ordered by the bury order stored in their records
//     (assigned when they were buried, carried along by compaction), so the order
//     is the order of the bury commands.
//   * maxId = the highest id in any record or any trusted header/id reservation, so
//     ids handed out but lost with a torn tail are never reused. The files ids.N
//     (ids.ts: the high-water kept apart from the log files) count too;
//     only their id reservations are used.
import type { Files } from "../../files.ts";
import { errorText, joinPath, PREALLOCATION_BLOCK } from "../../files.ts";
import type { JobRecord, ScheduleRecord, TubeLimits } from "../wal.ts";
import {
  activeLimits,
  checkRecordHeader,
  decodeFileHeader,
  decodePayload,
  KIND_FULL,
  KIND_FULL_X,
  KIND_IDS,
  KIND_LIMITS,
  KIND_POLICY,
  KIND_PURGE,
  KIND_SCHEDULE,
  KIND_SCHEDULED_JOB,
  LOG_NAME_PREFIX,
  payloadMatches,
  type PolicyRecord,
  PREALLOCATION_CHUNK,
  RECORD_HEADER_SIZE,
  RECORD_MARK,
  saltState,
} from "./codec.ts";

/** A job as the log knows it after replay. */
export interface LiveJob {
  rec: JobRecord;
  /** Seq of the file holding its newest full record. */
  file: number;
  /** Bytes of that full record. */
  fullSize: number;
  buryOrder: number;
}

/** A readable log file that takes part in collection. */
export interface LogFile {
  seq: number;
  path: string;
  size: number;
}

export interface ReplayResult {
  jobs: Map<number, LiveJob>;
  /** Our readable files, oldest first. */
  files: LogFile[];
  /** Highest N among all tubeway.N names, readable or not (new files go above it). */
  maxSeq: number;
  maxId: number;
  maxBuryOrder: number;
  /** The readable ids.N files (ids.ts), lowest N first. */
  idFiles: { seq: number; path: string }[];
  /** Highest N among all ids.N names. */
  maxIdSeq: number;
  /** Number of problems reported. */
  problems: number;
  /** Tube retry policies in force (set-dlq, set-backoff), by tube name. */
  policies: Map<string, PolicyRecord>;
  /** Tube limits in force (set-concurrency, set-rate), by tube name. */
  limits: Map<string, TubeLimits>;
  /** Schedules, by name, with their last runs. */
  schedules: Map<string, ScheduleRecord>;
}

/** LOG_NAME_PREFIX and N. */
const NAME = /^tubeway\.([1-9][0-9]{0,15})$/;
const IDS_NAME = /^ids\.([1-9][0-9]{0,15})$/;

function emptyResult(): ReplayResult {
  return {
    jobs: new Map(),
    files: [],
    maxSeq: 0,
    maxId: 0,
    maxBuryOrder: 0,
    idFiles: [],
    maxIdSeq: 0,
    problems: 0,
    policies: new Map(),
    limits: new Map(),
    schedules: new Map(),
  };
}

function allZero(b: Uint8Array, from: number): boolean {
  for (let i = from; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

/** Whether zero bytes from `from` to `end` may be blocks preallocated ahead of the data (codec.ts). */
function preallocated(end: number, from: number): boolean {
  return end % PREALLOCATION_BLOCK === 0 && end - from <= PREALLOCATION_CHUNK + PREALLOCATION_BLOCK;
}

/** Next offset >= from holding a record that fully verifies, or -1. */
function resync(b: Uint8Array, from: number, salt: number): number {
  const last = b.length - RECORD_HEADER_SIZE;
  for (let p = from; p <= last; p++) {
    if (b[p] !== RECORD_MARK || b[p + 2] !== 0 || b[p + 3] !== 0) continue;
    const h = checkRecordHeader(b, p, salt);
    if (!h.ok) continue;
    const start = p + RECORD_HEADER_SIZE;
    // a verified header whose record runs past the end: the torn tail starts here
    if (start + h.length > b.length) return p;
    if (payloadMatches(b, start, h.length, h.payloadCrc, salt)) return p;
  }
  return -1;
}

export function replay(dir: string, files: Files, log: (msg: string) => void): ReplayResult {
  const out = emptyResult();
  const report = (path: string, off: number, reason: string) => {
    out.problems++;
    log(`${path}:${off}: ${reason}`);
  };
  const seqs: number[] = [];
  const idSeqs: number[] = [];
  for (const name of files.list(dir)) {
    const m = NAME.exec(name);
    const seq = m ? Number(m[1]) : NaN;
    if (Number.isSafeInteger(seq)) seqs.push(seq);
    const i = IDS_NAME.exec(name);
    const idSeq = i ? Number(i[1]) : NaN;
    if (Number.isSafeInteger(idSeq)) idSeqs.push(idSeq);
  }
  seqs.sort((a, b) => a - b);
  idSeqs.sort((a, b) => a - b);
  for (const seq of seqs) {
    out.maxSeq = Math.max(out.maxSeq, seq);
    const path = joinPath(dir, LOG_NAME_PREFIX + seq);
    let bytes: Uint8Array;
    try {
      bytes = files.read(path);
    } catch (e) {
      report(path, 0, `cannot read: ${errorText(e)}; file ignored`);
      continue;
    }
    if (readOne(path, seq, bytes, out, report)) {
      out.files.push({ seq, path, size: bytes.length });
    } else if (allZero(bytes, 0)) {
      try {
        files.unlink(path);
      } catch (e) {
        log(`${path}: cannot remove: ${errorText(e)}`);
      }
    }
  }
  for (const seq of idSeqs) {
    out.maxIdSeq = Math.max(out.maxIdSeq, seq);
    const path = joinPath(dir, `ids.${seq}`);
    let bytes: Uint8Array;
    try {
      bytes = files.read(path);
    } catch (e) {
      report(path, 0, `cannot read: ${errorText(e)}; file ignored`);
      continue;
    }
    // only the high-water counts: anything else in such a file is ignored
    const scratch = emptyResult();
    if (readOne(path, seq, bytes, scratch, report)) {
      out.maxId = Math.max(out.maxId, scratch.maxId);
      out.idFiles.push({ seq, path });
    } else if (allZero(bytes, 0)) {
      try {
        files.unlink(path);
      } catch (e) {
        log(`${path}: cannot remove: ${errorText(e)}`);
      }
    }
  }
  for (const j of out.jobs.values()) {
    if (j.rec.state === "reserved") {
      j.rec.state = "ready";
      j.rec.deadlineAtMs = 0;
    }
  }
  if (out.problems > 0) {
    log("Errors reading one or more WAL files.");
    log("Continuing. You may be missing data.");
  }
  return out;
}

/** Read one file into `out`; false when it is not a usable log file. */
function readOne(
  path: string,
  seq: number,
  b: Uint8Array,
  out: ReplayResult,
  report: (path: string, off: number, reason: string) => void,
): boolean {
  const head = decodeFileHeader(b);
  if (!head.ok) {
    report(path, 0, head.reason + (allZero(b, 0) ? "; file removed" : "; file ignored"));
    return false;
  }
  if (!head.trusted) {
    report(path, 0, "file header checksum mismatch; trying its records anyway");
  } else {
    out.maxId = Math.max(out.maxId, head.header.idHighWater);
    if (head.header.seq !== seq) {
      report(path, 0, `header says ${LOG_NAME_PREFIX}${head.header.seq}; read in file-name order`);
    }
  }
  const salt = saltState(head.header.salt);
  let off = head.length;
  while (off < b.length) {
    let reason: string;
    if (b.length - off < RECORD_HEADER_SIZE) {
      reason = `truncated record header (${b.length - off} bytes)`;
    } else {
      const h = checkRecordHeader(b, off, salt);
      if (h.ok) {
        const start = off + RECORD_HEADER_SIZE;
        const end = start + h.length;
        if (end > b.length) {
          report(path, off, `truncated record: needs ${end - off} bytes, ${b.length - off} left`);
          break;
        }
        if (payloadMatches(b, start, h.length, h.payloadCrc, salt)) {
          const d = decodePayload(h.kind, b, start, h.length);
          if (typeof d === "string") report(path, off, `${d}; record skipped`);
          else apply(d, seq, end - off, out);
          off = end;
          continue;
        }
        reason = `checksum mismatch in a record of ${h.length} bytes`;
      } else {
        reason = h.reason;
      }
    }
    if (allZero(b, off)) {
      if (!preallocated(b.length, off)) {
        report(path, off, `${b.length - off} zero bytes at end of file (an unwritten tail)`);
      }
      break;
    }
    const next = resync(b, off + 1, salt);
    if (next < 0) {
      report(path, off, `${reason}; no valid record in the remaining ${b.length - off} bytes`);
      break;
    }
    report(path, off, `${reason}; skipped ${next - off} bytes`);
    off = next;
  }
  return true;
}

function apply(d: Exclude<ReturnType<typeof decodePayload>, string>, seq: number, size: number, out: ReplayResult) {
  if (d.kind === KIND_IDS) {
    out.maxId = Math.max(out.maxId, d.idHighWater);
    return;
  }
  if (d.kind === KIND_PURGE) {
    for (const id of d.ids) out.jobs.delete(id);
    return;
  }
  if (d.kind === KIND_POLICY) {
    const p = d.policy;
    if (p.maxAttempts === 0 && p.backoffBaseSec === 0) out.policies.delete(d.tube);
    else out.policies.set(d.tube, p);
    return;
  }
  if (d.kind === KIND_LIMITS) {
    if (activeLimits(d.limits)) out.limits.set(d.tube, d.limits);
    else out.limits.delete(d.tube);
    return;
  }
  if (d.kind === KIND_SCHEDULE) {
    if (d.schedule === null) out.schedules.delete(d.name);
    else out.schedules.set(d.name, d.schedule);
    return;
  }
  if (d.kind === KIND_SCHEDULED_JOB && d.run !== undefined) {
    const s = out.schedules.get(d.run.name);
    if (s !== undefined && d.run.dueSec > s.afterSec) s.afterSec = s.lastDueSec = d.run.dueSec;
  }
  const rec = d.rec;
  out.maxId = Math.max(out.maxId, rec.id);
  out.maxBuryOrder = Math.max(out.maxBuryOrder, d.buryOrder);
  const buryOrder = rec.state === "buried" ? d.buryOrder : 0;
  if (rec.state === "deleted") {
    out.jobs.delete(rec.id);
    return;
  }
  if (d.kind === KIND_FULL || d.kind === KIND_FULL_X || d.kind === KIND_SCHEDULED_JOB) {
    out.jobs.set(rec.id, { rec, file: seq, fullSize: size, buryOrder });
    return;
  }
  const j = out.jobs.get(rec.id);
  if (!j) return;
  // a short record carries every field but tube, body and extensions
  const old = j.rec;
  j.rec = { ...rec, tube: old.tube, ...(old.body ? { body: old.body } : {}) };
  if (old.key !== undefined) j.rec.key = old.key;
  if (old.from !== undefined) j.rec.from = old.from;
  j.buryOrder = buryOrder;
}

/** The live jobs for the engine: ids ascending, buried ones last in bury order. */
export function jobsInOrder(jobs: Map<number, LiveJob>): JobRecord[] {
  const list = [...jobs.values()];
  list.sort((a, b) => {
    const ab = a.rec.state === "buried" ? 1 : 0;
    const bb = b.rec.state === "buried" ? 1 : 0;
    if (ab !== bb) return ab - bb;
    if (ab === 1 && a.buryOrder !== b.buryOrder) return a.buryOrder - b.buryOrder;
    return a.rec.id - b.rec.id;
  });
  return list.map((j) => j.rec);
}
