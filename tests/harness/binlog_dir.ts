// Looking at a binlog directory from outside the server, for the process-level
// durability tests: which tubeway.N files exist and how big they are, where the
// records of a file start (walking the record headers' length fields only, no
// checksums: see core/memory/binlog/codec.ts for the format), copying a directory, and a
// process's resident memory.
import { copyFileSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

export interface BinlogFile {
  seq: number;
  path: string;
  size: number;
}

const NAME = /^tubeway\.([1-9][0-9]{0,15})$/;

/** The tubeway.N files (the log) in dir, lowest N first (files that vanish while listing are skipped). */
export function binlogFiles(dir: string): BinlogFile[] {
  const out: BinlogFile[] = [];
  for (const name of readdirSync(dir)) {
    const m = NAME.exec(name);
    if (!m) continue;
    const path = join(dir, name);
    try {
      out.push({ seq: Number(m[1]), path, size: statSync(path).size });
    } catch {
      // removed by the server between readdir and stat
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** Total bytes of the tubeway.N files in dir (lock and ballast not counted). */
export function binlogBytes(dir: string): number {
  return binlogFiles(dir).reduce((n, f) => n + f.size, 0);
}

/** The tubeway.N file with the highest N, or undefined. */
export function newestBinlog(dir: string): BinlogFile | undefined {
  return binlogFiles(dir).at(-1);
}

/** Where binlog files start their records (the file header's length). */
export const FILE_HEADER_SIZE = 40;
export const RECORD_HEADER_SIZE = 16;
export const KIND_FULL = 1;
export const KIND_SHORT = 2;
export const KIND_IDS = 3;

export interface RecordSpan {
  /** Offset of the record header in the file. */
  offset: number;
  /** Offset just past the record. */
  end: number;
  kind: number;
  /** The job id for job records (kinds 1 and 2). */
  id?: number;
}

/**
 * The records of an undamaged file, by their length fields. Stops at the first
 * header that is not a record or whose length runs past the end of the file.
 */
export function recordSpans(path: string): RecordSpan[] {
  const b = readFileSync(path);
  const out: RecordSpan[] = [];
  let off = FILE_HEADER_SIZE;
  while (off + RECORD_HEADER_SIZE <= b.length && b[off] === 0xb7) {
    const kind = b[off + 1]!;
    const end = off + RECORD_HEADER_SIZE + b.readUInt32LE(off + 4);
    if (end > b.length) break;
    const span: RecordSpan = { offset: off, end, kind };
    if ((kind === KIND_FULL || kind === KIND_SHORT) && end >= off + RECORD_HEADER_SIZE + 8) {
      span.id = Number(b.readBigUInt64LE(off + RECORD_HEADER_SIZE));
    }
    out.push(span);
    off = end;
  }
  return out;
}

/** Copy the tubeway.N files of `from` into the existing directory `to`. */
export function copyBinlogs(from: string, to: string): void {
  for (const f of binlogFiles(from)) copyFileSync(f.path, join(to, `tubeway.${f.seq}`));
}

/** Resident set size of a Linux process in KiB, or undefined (not Linux, or gone). */
export function vmRssKb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
