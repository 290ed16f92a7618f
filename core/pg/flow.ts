// Flow control and recurring jobs on the PostgreSQL engine (docs/extensions.md): one
// limit and one rate per tube for the whole cluster, and schedules whose every due time
// one node runs. The state is the database's (migration 4, schema.ts; the SQL in
// flow_statements.ts); what a node keeps is which tubes have limits (to send the watch
// sets that have one to the claim that counts), when its next schedule is due, and its
// own count of runs.
//
// Limits: the stock claim passes over a tube with limits (statements.ts), so a node
// that does not know of a new limit yet leaves its jobs alone rather than exceed it;
// nodes learn of a change by a NOTIFY ("<node> l <tube>") and re-read the list with
// each renewal of their lease. Schedules: each node's timer (one per node, not one per
// schedule) wakes at the next due time by the database's clock, and a turn locks the
// schedules due, puts each one's job and moves its due time in the same transaction; a
// node that finds a due schedule locked (another node is running it) looks again a
// moment later, so a node killed in the middle leaves it to the others.
import type { Clock, TimerHandle } from "../clock.ts";
import type { NewSchedule, ScheduleInfo } from "../engine.ts";
import { dueAt, parseSpec } from "../schedule_spec.ts";
import { away, type Row, type Sql } from "./sql.ts";
import type { FlowStatements } from "./flow_statements.ts";
import type { RunOp } from "./extensions.ts";
import { all } from "./turn.ts";

/** After a run found a due schedule locked by another node's turn: look again this much later. */
const RETRY_MS = 500;
/**
 * The longest the timer sleeps before reading again which tubes have limits and when the
 * next schedule is due: what a NOTIFY lost on the way would have said.
 */
const REFRESH_MS = 10_000;

/** What a node gives its flow control. */
export interface FlowDeps {
  x: FlowStatements;
  node: number;
  /** The schema's NOTIFY channel. */
  channel: string;
  clock: Clock;
  /** Runs statements in the next turn; the answer after COMMIT. */
  op: RunOp;
  /** Reads outside the turns. */
  read: <T>(run: (sql: Sql) => Promise<T>) => Promise<T>;
  /** This node's next job id. */
  takeId: () => number;
  /** This node refuses puts (drain mode): it runs no schedule. */
  draining: () => boolean;
  /** A failure nobody waits for. */
  error: (line: string) => void;
  /** This node's clients waiting on these tubes claim again (serving.ts). */
  serve: (tubes: string[]) => void;
}

export class PgFlow {
  readonly #d: FlowDeps;
  /** Tubes with limits, as last read: their watch sets claim through the counting claim. */
  #limited = new Set<string>();
  /** Jobs each schedule put through this node since start (the metrics port). */
  readonly runs = new Map<string, number>();
  #timer: TimerHandle | undefined;
  /** When the next schedule is due (monotonic ms, by this node's clock; Infinity: none). */
  #dueAt = Infinity;
  #stopped = false;

  constructor(d: FlowDeps) {
    this.#d = d;
  }

  /** Whether `tubes` include one with limits (as last known). */
  hasLimited(tubes: readonly string[]): boolean {
    if (this.#limited.size === 0) return false;
    for (const t of tubes) if (this.#limited.has(t)) return true;
    return false;
  }

  /** Read which tubes have limits, and when the next schedule is due (start, a NOTIFY, each lease renewal). */
  refresh(): Promise<void> {
    return this.#d.read(async (sql) => {
      const [rows, next] = await all([sql.query(this.#d.x.limitedTubes), sql.query(this.#d.x.nextSchedule)]);
      this.#limited = new Set(rows!.map((r) => r.name as string));
      this.#arm(next![0]?.ms);
    }).catch((e) => {
      // a database away is logged once, when it goes (outage.ts)
      if (!away(e)) this.#d.error(`pg: could not read the limits and schedules: ${e instanceof Error ? e.message : e}`);
    });
  }

  // ---- limits -------------------------------------------------------------------------

  setConcurrency(tube: string, max: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#setLimits(tube, [max, null, null]);
  }

  setRate(tube: string, count: number, windowSec: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#setLimits(tube, [null, count, count > 0 ? windowSec * 1000 : 0]);
  }

  #setLimits(tube: string, l: (number | null)[]): Promise<"OK" | "INTERNAL_ERROR"> {
    const { x, node, channel } = this.#d;
    return this.#d.op(async (tx, turn) => {
      const [r] = await tx.query(x.setLimits, [tube, ...l]);
      const kept = r!.kept === true;
      if (!kept) await tx.query(x.dropLimitRow, [tube]);
      // every node's waiting clients claim again (a higher limit, or none, may let them have jobs)
      await tx.query("select pg_notify($1, $2)", [channel, `${node} l ${tube}`]);
      if (kept) turn.filled.add(tube);
      else if (Number(r!.jobs) <= 0) turn.emptied.add(tube);
      turn.readied.add(tube);
      return () => {
        if (kept) this.#limited.add(tube);
        else this.#limited.delete(tube);
        // this turn's claims went by what was known before: claim again for the tube's waiting clients
        this.#d.serve([tube]);
        return "OK" as const;
      };
    });
  }

  // ---- schedules ----------------------------------------------------------------------

  /** schedule: add or replace (no due time up to now runs for it; its last run is kept). */
  schedule(ns: NewSchedule): Promise<"OK" | "INTERNAL_ERROR"> {
    const spec = parseSpec(ns.spec);
    if (spec === undefined) throw new Error(`schedule ${ns.name}: the protocol let a malformed spec through`);
    const { x, node, channel } = this.#d;
    return this.#d.op(async (tx) => {
      const [st] = await tx.query(x.scheduleState, [ns.name]);
      const afterSec = Math.max(Number(st!.now_sec), Number(st!.after_sec ?? 0));
      const next = spec.next(afterSec);
      await tx.query(x.setSchedule, [
        ns.name,
        ns.tube,
        ns.spec,
        ns.pri,
        ns.ttrSec * 1000,
        ns.body,
        afterSec,
        next === Infinity ? null : next,
      ]);
      await tx.query("select pg_notify($1, $2)", [channel, `${node} s`]);
      return () => {
        void this.refresh();
        return "OK" as const;
      };
    });
  }

  unschedule(name: string): Promise<"DELETED" | "NOT_FOUND"> {
    const { x, node, channel } = this.#d;
    return this.#d.op(async (tx) => {
      const [r] = await tx.query(x.unschedule, [name]);
      if (r) await tx.query("select pg_notify($1, $2)", [channel, `${node} s`]);
      return () => (r ? "DELETED" : "NOT_FOUND");
    });
  }

  listSchedules(): Promise<ScheduleInfo[]> {
    return this.#d.op(async (tx) => {
      const rows = await tx.query(this.#d.x.listSchedules);
      return () =>
        rows.map((r) => ({
          name: r.name as string,
          tube: r.tube as string,
          spec: r.spec as string,
          pri: Number(r.pri),
          ttrSec: Number(r.ttr_ms) / 1000,
          size: Number(r.size),
          nextDueSec: Number(r.next_due),
          lastDueSec: Number(r.last_due),
        }));
    });
  }

  /** Another node changed a schedule ("<node> s"), or limits ("<node> l <tube>"). */
  changed(): void {
    void this.refresh();
  }

  /** Stop the timer for good. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#d.clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  /** Drain mode ended: runs that were due meanwhile go now. */
  undrained(): void {
    void this.refresh();
  }

  /** The next schedule is due in `ms` (null: none): the timer for it, or for the next refresh if sooner. */
  #arm(ms: unknown): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#d.clock.clearTimer(this.#timer);
    const now = this.#d.clock.now();
    this.#dueAt = ms === null || ms === undefined ? Infinity : now + Math.max(0, Number(ms));
    // a draining node runs no schedule: it only keeps its view fresh until the drain ends
    const wait = this.#d.draining() ? REFRESH_MS : Math.min(this.#dueAt - now, REFRESH_MS);
    this.#timer = this.#d.clock.setTimer(() => this.#fire(), Math.ceil(wait));
  }

  /** The timer: run what is due (not while draining: the drain's end does), or refresh. */
  #fire(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    if (this.#dueAt > this.#d.clock.now() || this.#d.draining()) return void this.refresh();
    this.#d.op((tx, turn) => this.#runDue(tx, turn)).then((ms) => this.#arm(ms), (e) => {
      if (!away(e)) this.#d.error(`pg: schedules: ${e instanceof Error ? e.message : e}`);
      this.#arm(RETRY_MS);
    });
  }

  /**
   * In a turn: lock the schedules due now, put each one's job for its latest due time
   * and move its next due time. Then when to look again: at the next due time, or soon
   * when one is still due (another node holds it: if that node dies, this one runs it).
   */
  async #runDue(tx: Sql, turn: { readied: Set<string>; filled: Set<string> }): Promise<() => number | null> {
    const { x } = this.#d;
    const ran: string[] = [];
    for (const r of await tx.query(x.dueSchedules)) {
      const run = this.#run(r);
      if (run === undefined) continue;
      const [p] = await tx.query(x.runSchedule, run);
      if (p!.put) {
        turn.readied.add(r.tube as string);
        turn.filled.add(r.tube as string);
      }
      ran.push(r.name as string);
    }
    const [next] = await tx.query(x.nextSchedule);
    const ms = next!.ms === null ? null : Number(next!.ms);
    return () => {
      for (const name of ran) this.runs.set(name, (this.runs.get(name) ?? 0) + 1);
      return ms === null ? null : ms <= 0 ? RETRY_MS : ms;
    };
  }

  /** The runSchedule parameters of a due row; undefined for a spec this release cannot read. */
  #run(r: Row): unknown[] | undefined {
    const spec = parseSpec(r.spec as string);
    if (spec === undefined) {
      // written by another release: this one leaves it (its next due time unchanged) and says so
      this.#d.error(`pg: schedule ${r.name}: cannot read its spec ${r.spec}; not run by this node`);
      return undefined;
    }
    const due = dueAt(spec, Number(r.after_sec), Number(r.now_sec)) ?? Number(r.next_due);
    const next = spec.next(due);
    const id = this.#d.takeId();
    return [this.#d.node, r.name, due, next === Infinity ? null : next, id, r.tube, r.pri, r.ttr_ms, r.body];
  }
}
