// Recurring jobs of the in-memory engine (schedule, unschedule, list-schedules;
// docs/extensions.md): each schedule puts one job into its tube at each of its due times
// (core/schedule_spec.ts), on the engine's clock and its one timer: the store's tick calls
// due() like the rest of what falls due, and nextDueMs says when to come back.
//
// Exactly once: a run's job and its due time are logged as one record (-b), and the next
// due time is computed from the last one done, so a restart neither repeats a run nor
// skips one; due times that passed while the server was down (or draining) put one job,
// for the latest of them, not a burst. The job carries the unique key `<name>@<due>`
// (put-unique's, so stats-job shows which schedule and due time put it).
import type { NewSchedule, ScheduleInfo } from "../engine.ts";
import { dueAt, parseSpec, type Spec } from "../schedule_spec.ts";
import { Heap } from "./heap.ts";
import type { Recurring, Store } from "./store.ts";
import type { ScheduleRecord } from "./wal.ts";

/** After the log refused a run (a full disk), runs are tried again this much later. */
const RETRY_MS = 1000;

interface Entry {
  /** Its definition and state, as the log keeps them (rec.body is the schedule's own copy). */
  rec: ScheduleRecord;
  spec: Spec;
  /** Its next due time, Unix seconds (Infinity: never again). */
  nextDueSec: number;
  /** Slot in the heap of due times. */
  slot: number;
}

const slot = {
  get: (e: Entry) => e.slot,
  set: (e: Entry, i: number) => {
    e.slot = i;
  },
};

export class Schedules implements Recurring {
  readonly #s: Store;
  readonly #takeId: () => number;
  readonly #draining: () => boolean;
  readonly #byName = new Map<string, Entry>();
  readonly #due = new Heap<Entry>(
    (a, b) => a.nextDueSec < b.nextDueSec || (a.nextDueSec === b.nextDueSec && a.rec.name < b.rec.name),
    slot,
  );
  /** Jobs each schedule put since start, by name (the metrics port). */
  readonly runs = new Map<string, number>();
  /** After a run the log refused: no run before this (monotonic ms). */
  #retryAt = 0;

  /** `takeId`: the engine's ids; `draining`: runs wait while puts are refused. */
  constructor(store: Store, takeId: () => number, draining: () => boolean) {
    this.#s = store;
    this.#takeId = takeId;
    this.#draining = draining;
    store.recurring = this;
  }

  /** schedule: add or replace; a replaced schedule keeps its last run, and no due time up to now runs for it. */
  set(ns: NewSchedule): "OK" | "INTERNAL_ERROR" {
    const spec = parseSpec(ns.spec);
    if (spec === undefined) throw new Error(`schedule ${ns.name}: the protocol let a malformed spec through`);
    const s = this.#s;
    const now = s.clock.now();
    const old = this.#byName.get(ns.name);
    const rec: ScheduleRecord = {
      name: ns.name,
      tube: ns.tube,
      spec: ns.spec,
      pri: ns.pri,
      ttrSec: ns.ttrSec,
      // never earlier than what is done already, whatever the wall clock did meanwhile
      afterSec: Math.max(this.#nowSec(), old?.rec.afterSec ?? 0),
      lastDueSec: old?.rec.lastDueSec ?? 0,
      // its own copy: the protocol's body may be a view of a buffer other bodies share
      body: ns.body.slice(),
    };
    if (s.logging && !s.logged(s.wal.schedule(rec), now)) return "INTERNAL_ERROR";
    if (old !== undefined) this.#due.remove(old);
    this.#add(rec, spec);
    this.arm();
    return "OK";
  }

  /** unschedule. */
  remove(name: string): "DELETED" | "NOT_FOUND" | "INTERNAL_ERROR" {
    const e = this.#byName.get(name);
    if (e === undefined) return "NOT_FOUND";
    const s = this.#s;
    if (s.logging && !s.logged(s.wal.unschedule(name), s.clock.now())) return "INTERNAL_ERROR";
    this.#due.remove(e);
    this.#byName.delete(name);
    return "DELETED";
  }

  /** list-schedules: by name. */
  list(): ScheduleInfo[] {
    return [...this.#byName.values()]
      .sort((a, b) => (a.rec.name < b.rec.name ? -1 : a.rec.name > b.rec.name ? 1 : 0))
      .map(({ rec, nextDueSec }) => ({
        name: rec.name,
        tube: rec.tube,
        spec: rec.spec,
        pri: rec.pri,
        ttrSec: rec.ttrSec,
        size: rec.body.length - 2,
        nextDueSec,
        lastDueSec: rec.lastDueSec,
      }));
  }

  get size(): number {
    return this.#byName.size;
  }

  /** Schedules recovered from the log, their last runs with them; missed runs are put by the first tick. */
  restore(records: Iterable<ScheduleRecord>): void {
    for (const rec of records) {
      const spec = parseSpec(rec.spec);
      if (spec !== undefined) this.#add({ ...rec }, spec);
    }
    this.arm();
  }

  /** Ask the timer for the next due time (after a change, or when drain mode ends). */
  arm(): void {
    const at = this.nextDueMs;
    if (at < Infinity) this.#s.schedule.at(at);
  }

  get nextDueMs(): number {
    const e = this.#due.peek();
    if (e === undefined || e.nextDueSec === Infinity || this.#draining()) return Infinity;
    const clock = this.#s.clock;
    return Math.max(clock.now() + e.nextDueSec * 1000 - clock.wallMs(), this.#retryAt);
  }

  /** Put the jobs that are due: one per schedule, for its latest due time up to now. */
  due(now: number): void {
    if (this.#draining() || now < this.#retryAt) return;
    const nowSec = this.#nowSec();
    for (let e = this.#due.peek(); e !== undefined && e.nextDueSec <= nowSec; e = this.#due.peek()) {
      const dueSec = dueAt(e.spec, e.rec.afterSec, nowSec) ?? e.nextDueSec;
      if (!this.#run(e, dueSec, now)) {
        this.#retryAt = now + RETRY_MS;
        return;
      }
      e.rec.afterSec = e.rec.lastDueSec = dueSec;
      this.#due.remove(e);
      e.nextDueSec = e.spec.next(dueSec);
      this.#due.push(e);
    }
  }

  #add(rec: ScheduleRecord, spec: Spec): void {
    const e: Entry = { rec, spec, nextDueSec: spec.next(rec.afterSec), slot: -1 };
    this.#byName.set(rec.name, e);
    this.#due.push(e);
  }

  /** One run: its job into the tube, logged with the due time; false when the log refused it. */
  #run(e: Entry, dueSec: number, now: number): boolean {
    const s = this.#s;
    const { name, tube, pri, ttrSec, body } = e.rec;
    const t = s.tubes.obtain(tube);
    const key = `${name}@${dueSec}`;
    if (t.keys?.get(key) === undefined) {
      const j = s.newJob(t, pri, 0, ttrSec, body, this.#takeId(), now);
      // keyed before insert, as put-unique does: the log's record carries the key, and a
      // waiting worker may take the job inside insert
      s.extras.set(j.id, { key });
      (t.keys ??= new Map()).set(key, j);
      if (!s.insert(j, now, { name, dueSec })) {
        s.dropExtras(j);
        s.tubes.dropIfUnused(t);
        return false;
      }
    }
    this.runs.set(name, (this.runs.get(name) ?? 0) + 1);
    return true;
  }

  #nowSec(): number {
    return Math.floor(this.#s.clock.wallMs() / 1000);
  }
}
