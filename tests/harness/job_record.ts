// A job record for tests of the log and its files: defaults, overridden field by field.
import type { JobRecord } from "../../core/memory/wal.ts";

export function jobRecord(id: number, over: Partial<JobRecord> = {}): JobRecord {
  return {
    id,
    tube: "default",
    pri: 100,
    delayMs: 0,
    ttrMs: 60_000,
    createdAtMs: 1_700_000_000_000 + id,
    deadlineAtMs: 0,
    state: "ready",
    reserves: 0,
    timeouts: 0,
    releases: 0,
    buries: 0,
    kicks: 0,
    body: new TextEncoder().encode(`body ${id}\r\n`),
    ...over,
  };
}
