// Jobs as the log sees them: plain JobRecords with wall-clock times (monotonic time
// means nothing after a restart), and back.
import type { Clock } from "./clock.ts";
import type { Job } from "./model.ts";
import type { JobRecord, JobState } from "./wal.ts";

export class Records {
  readonly #clock: Clock;
  #wallOffset = 0;
  #checkedAt = -Infinity;

  constructor(clock: Clock) {
    this.#clock = clock;
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
   * The job, in the given state, as a record at monotonic time `now`. The body (a
   * view, not a copy) is attached only when asked for: only full records (a put, a
   * compaction move) carry it.
   */
  of(j: Job, state: JobState | "deleted", now: number, withBody = false): JobRecord {
    const rec: JobRecord = {
      id: j.id,
      tube: j.tube.name,
      pri: j.pri,
      delayMs: j.delayMs,
      ttrMs: j.ttrMs,
      createdAtMs: this.wall(j.createdAt, now),
      deadlineAtMs: j.state === "delayed" ? this.wall(j.deadline, now) : 0,
      state,
      reserves: j.reserves,
      timeouts: j.timeouts,
      releases: j.releases,
      buries: j.buries,
      kicks: j.kicks,
    };
    if (withBody) rec.body = j.body;
    return rec;
  }
}
