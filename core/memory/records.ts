// Jobs as the log sees them: plain JobRecords with wall-clock times (monotonic time
// means nothing after a restart), and back: restore() rebuilds recovered jobs.
import type { Clock } from "../clock.ts";
import { Job, jobMs } from "./model.ts";
import type { Tubes } from "./tubes.ts";
import type { JobRecord, JobState } from "./wal.ts";
import type { JobExtras } from "./extras.ts";
import { GONE } from "./binlog/codec.ts";

/** A JobRecord whose optional fields are always present (undefined when absent): one shape. */
type Scratch = { [K in keyof JobRecord]-?: JobRecord[K] | undefined } & { state: JobRecord["state"] };

export class Records {
  readonly #clock: Clock;
  /** The store's extension state by job id (see store.ts): full records carry a job's key and origin. */
  readonly #extras: Map<number, JobExtras>;
  /**
   * What of() fills in, every field of it (its optional fields undefined when absent: the
   * log tests for undefined); it starts as the log's empty record.
   */
  readonly #scratch: Scratch = { ...GONE, body: undefined, key: undefined, from: undefined };
  #wallOffset = 0;
  #checkedAt = -Infinity;

  constructor(clock: Clock, extras: Map<number, JobExtras>) {
    this.#clock = clock;
    this.#extras = extras;
  }

  /**
   * Monotonic ms -> wall-clock ms. The offset between the two clocks is read at most
   * once a second (reading both per record showed in profiles); a wall-clock jump is
   * picked up within that second.
   */
  wall(monoMs: number, now: number = this.#clock.now()): number {
    if (now - this.#checkedAt >= 1000) {
      this.#wallOffset = this.#clock.wallMs() - now;
      this.#checkedAt = now;
    }
    return monoMs + this.#wallOffset;
  }

  /** Wall-clock ms -> monotonic ms (for recovered jobs). */
  mono(wallMs: number): number {
    return wallMs - this.#clock.wallMs() + this.#clock.now();
  }

  /**
   * The job, in the given state, as a record at monotonic time `now`, for the log to
   * take in the call it is passed to (Wal.put/update): the same object every time, so
   * that logging a change allocates nothing (the log keeps nothing of it; wal.ts). The
   * body (a view, not a copy) is attached only when asked for: only full records (a
   * put, a compaction move) carry it. fresh() makes a record to keep.
   */
  of(j: Job, state: JobState | "deleted", now: number, withBody = false): JobRecord {
    const rec = this.#scratch;
    rec.id = j.id;
    rec.tube = j.tube.name;
    rec.pri = j.pri;
    rec.delayMs = j.delayMs;
    rec.ttrMs = j.ttrMs;
    rec.createdAtMs = this.wall(j.createdAt, now);
    rec.deadlineAtMs = j.state === "delayed" ? this.wall(j.deadline, now) : 0;
    rec.state = state;
    rec.reserves = j.reserves;
    rec.timeouts = j.timeouts;
    rec.releases = j.releases;
    rec.buries = j.buries;
    rec.kicks = j.kicks;
    rec.body = undefined;
    rec.key = undefined;
    rec.from = undefined;
    if (withBody) {
      rec.body = j.body;
      const x = this.#extras.size > 0 ? this.#extras.get(j.id) : undefined;
      if (x !== undefined) {
        rec.key = x.key;
        rec.from = x.from;
      }
    }
    return rec as JobRecord;
  }

  /** The job as a record of its own (for a caller that keeps it), body included. */
  fresh(j: Job, now: number): JobRecord {
    const rec: JobRecord = {
      id: j.id,
      tube: j.tube.name,
      pri: j.pri,
      delayMs: j.delayMs,
      ttrMs: j.ttrMs,
      createdAtMs: this.wall(j.createdAt, now),
      deadlineAtMs: j.state === "delayed" ? this.wall(j.deadline, now) : 0,
      state: j.state,
      reserves: j.reserves,
      timeouts: j.timeouts,
      releases: j.releases,
      buries: j.buries,
      kicks: j.kicks,
      body: j.body,
    };
    const x = this.#extras.size > 0 ? this.#extras.get(j.id) : undefined;
    if (x?.key !== undefined) rec.key = x.key;
    if (x?.from !== undefined) rec.from = x.from;
    return rec;
  }

  /**
   * Rebuild jobs recovered from the log into their tubes; `keep` stores each one, `delay`
   * schedules a delayed one (its deadline set). Reserved jobs come back ready; delayed
   * jobs keep their absolute deadline (ready at once if it has passed); buried order is
   * kept. Counters are not restored (as 1.12).
   */
  restore(records: Iterable<JobRecord>, tubes: Tubes, keep: (j: Job) => void, delay: (j: Job) => void): void {
    const wallNow = this.#clock.wallMs();
    const now = this.#clock.now();
    for (const r of records) {
      if (r.state === "deleted" || !r.body) continue;
      const t = tubes.obtain(r.tube);
      const j = new Job(r.id, t, r.pri, r.delayMs, r.ttrMs, r.body, this.mono(r.createdAtMs));
      j.reserves = r.reserves;
      j.timeouts = r.timeouts;
      j.releases = r.releases;
      j.buries = r.buries;
      j.kicks = r.kicks;
      if (r.key !== undefined || r.from !== undefined) {
        this.#extras.set(j.id, {
          ...(r.key !== undefined ? { key: r.key } : {}),
          ...(r.from !== undefined ? { from: r.from } : {}),
        });
        if (r.key !== undefined) (t.keys ??= new Map()).set(r.key, j);
      }
      keep(j);
      if (r.state === "buried") {
        j.state = "buried";
        t.buried.push(j);
      } else if (r.state === "delayed" && r.deadlineAtMs > wallNow) {
        j.state = "delayed";
        j.deadline = jobMs(this.mono(r.deadlineAtMs));
        delay(j);
      } else t.pushReady(j, now);
    }
  }
}
