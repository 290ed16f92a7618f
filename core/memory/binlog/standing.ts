// What the log keeps that belongs to no job: the tubes' retry policies and limits and
// the schedules with their last runs. No live job keeps the file such a record is in, so
// every new file starts with all of them as they stand (Binlog restates them when
// Segments rotates, and at start before any old file is collected): the newest file
// always holds them all, and removing old files never loses one.
import type { ScheduleRecord, TubeLimits } from "../wal.ts";
import type { Encode } from "./frame.ts";
import type { Segments } from "./segments.ts";
import {
  activeLimits,
  encodeLimitsAt,
  encodePolicyAt,
  limitsRecordSize,
  type PolicyRecord,
  policyRecordSize,
} from "./codec_tube.ts";
import { encodeScheduleAt, scheduleRecordSize } from "./codec_schedule.ts";

/** Replayed standing state, as a Binlog starts with it (options.ts BinlogParts). */
export interface StandingState {
  policies: Map<string, PolicyRecord>;
  limits: Map<string, TubeLimits>;
  schedules: Map<string, ScheduleRecord>;
}

/** Writes one record of the given size (the binlog's accounting included); false when the log refused it. */
export type WriteRecord = (size: number, encode: Encode) => boolean;

export class Standing {
  readonly #s: StandingState;
  readonly #write: WriteRecord;

  constructor(s: StandingState, write: WriteRecord) {
    this.#s = s;
    this.#write = write;
  }

  /** Records a new file starts with. */
  get size(): number {
    return this.#s.policies.size + this.#s.limits.size + this.#s.schedules.size;
  }

  /** Each record that restates them, as its size and encoder. */
  *records(): Iterable<[number, Encode]> {
    for (const [tube, p] of this.#s.policies) {
      yield [policyRecordSize(tube, p), (salt, buf, v, at) => encodePolicyAt(tube, p, salt, buf, v, at)];
    }
    for (const [tube, l] of this.#s.limits) {
      yield [limitsRecordSize(tube), (salt, buf, v, at) => encodeLimitsAt(tube, l, salt, buf, v, at)];
    }
    for (const s of this.#s.schedules.values()) {
      yield [scheduleRecordSize(s), (salt, buf, v, at) => encodeScheduleAt(s, salt, buf, v, at)];
    }
  }

  /** A new file was started (segs.onRotate): what stands goes first into it. */
  restate(segs: Segments, restated: (size: number) => void): void {
    for (const [size, encode] of this.records()) {
      const at = segs.claim(size);
      encode(segs.current!.seed, segs.buf, segs.view, at); // written once already: cannot throw
      segs.commit(size, false);
      restated(size);
    }
  }

  /** set-dlq / set-backoff: the tube's policy from now on (all zero: none), written first. */
  policy(tube: string, p: PolicyRecord): boolean {
    if (!this.#write(policyRecordSize(tube, p), (salt, buf, v, at) => encodePolicyAt(tube, p, salt, buf, v, at))) {
      return false;
    }
    if (p.maxAttempts === 0 && p.backoffBaseSec === 0) this.#s.policies.delete(tube);
    else this.#s.policies.set(tube, { ...p });
    return true;
  }

  /** set-concurrency / set-rate: the tube's limits from now on (all zero: none), written first. */
  limits(tube: string, l: TubeLimits): boolean {
    if (!this.#write(limitsRecordSize(tube), (salt, buf, v, at) => encodeLimitsAt(tube, l, salt, buf, v, at))) {
      return false;
    }
    if (activeLimits(l)) this.#s.limits.set(tube, { ...l });
    else this.#s.limits.delete(tube);
    return true;
  }

  /** schedule (added or replaced, `s` a name: removed), written first. */
  schedule(s: ScheduleRecord | string): boolean {
    if (!this.#write(scheduleRecordSize(s), (salt, buf, v, at) => encodeScheduleAt(s, salt, buf, v, at))) return false;
    if (typeof s === "string") this.#s.schedules.delete(s);
    else this.#s.schedules.set(s.name, { ...s });
    return true;
  }

  /** A run of a schedule for its due time was written. */
  ran(name: string, dueSec: number): void {
    const s = this.#s.schedules.get(name);
    if (s !== undefined && dueSec > s.afterSec) s.afterSec = s.lastDueSec = dueSec;
  }
}
