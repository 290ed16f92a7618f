// The reads that count and list (stats, stats-tube, the metrics port's and the
// dashboard's views): on the pool, outside the turns, so that a scan of a large table
// never holds a turn's replies back. A read sees everything committed, so every change
// acknowledged before it was asked; its statements count jobs as the next sweep would
// leave them (statements.ts).
import type { EngineStats, JobList, ListState, TubeSnapshot, TubeStats } from "../engine.ts";
import type { Sql, SqlClient } from "./sql.ts";
import type { Statements } from "./statements.ts";
import { all, untilBack, type Waiting } from "./turn.ts";
import type { NodeTubes } from "./node_tubes.ts";
import { jobSnapshotOf } from "./views.ts";

/** What stats shows of this node beside the database's counts, read when the counts come. */
export interface NodeFacts {
  /** Clients of this node waiting in reserve. */
  waiting: number;
  draining: boolean;
  /** binlog-max-size (-s): a node over PostgreSQL writes no log, but 1.12 shows -s without one too. */
  binlogMaxSize: number;
}

export class Reads {
  readonly #sql: SqlClient;
  readonly #q: Statements;
  readonly #tubes: NodeTubes;
  readonly #waiting: Waiting;
  readonly #here: () => NodeFacts;
  /** Settles once the closed clients' releases asked for so far have committed (intake.ts). */
  readonly #released: () => Promise<void>;

  constructor(
    sql: SqlClient,
    q: Statements,
    tubes: NodeTubes,
    waiting: Waiting,
    here: () => NodeFacts,
    released: () => Promise<void>,
  ) {
    this.#sql = sql;
    this.#q = q;
    this.#tubes = tubes;
    this.#waiting = waiting;
    this.#here = here;
    this.#released = released;
  }

  statsTube(name: string): Promise<TubeStats | undefined> {
    return this.#read(async (tx) => {
      const [row] = await tx.query(this.#q.statsTube, [name]);
      return () => this.#tubes.stats(name, row);
    });
  }

  stats(): Promise<EngineStats> {
    return this.#read(async (tx) => {
      const [stats, names] = await all([tx.query(this.#q.stats), tx.query(this.#q.tubeNames)]);
      const s = stats![0];
      return () => {
        const here = this.#here();
        return {
          urgent: Number(s!.urgent),
          ready: Number(s!.ready),
          reserved: Number(s!.reserved),
          delayed: Number(s!.delayed),
          buried: Number(s!.buried),
          tubes: this.#tubes.sync(names!).length,
          waiting: here.waiting,
          totalJobs: Number(s!.total_jobs),
          jobTimeouts: Number(s!.job_timeouts),
          draining: here.draining,
          binlog: {
            oldestIndex: 0,
            currentIndex: 0,
            maxSize: here.binlogMaxSize,
            recordsWritten: 0,
            recordsMigrated: 0,
          },
        };
      };
    });
  }

  tubes(names: readonly string[]): Promise<TubeSnapshot[]> {
    return this.#read(async (tx) => {
      const rows = await all(names.map((n) => tx.query(this.#q.statsTube, [n])));
      return () => {
        const out: TubeSnapshot[] = [];
        names.forEach((n, i) => {
          const s = this.#tubes.stats(n, rows[i]![0]);
          if (!s) return;
          const left = Math.max(0, Number(rows[i]![0]?.pause_left_ms ?? 0));
          const held = rows[i]![0]?.held === true ? s.ready : 0; // the ready jobs its limits keep back now
          out.push({ ...s, paused: left > 0, pauseLeftMs: left, oldestReadyMs: 0, heldJobs: held });
        });
        return out;
      };
    });
  }

  listJobs(tube: string, state: ListState, limit: number, offset = 0): Promise<JobList | undefined> {
    return this.#read(async (tx) => {
      const [counted, listed] = await all([
        tx.query(this.#q.statsTube, [tube]),
        tx.query(this.#q.listJobs[state], [tube, Math.max(0, limit), Math.max(0, offset)]),
      ]);
      const t = counted![0];
      const rows = listed!;
      return () => {
        const s = this.#tubes.stats(tube, t);
        if (!s) return undefined;
        const jobs = rows.map((r) => jobSnapshotOf(r, state));
        return { tube, state, total: s[state], jobs };
      };
    });
  }

  /**
   * Run a read on the pool, again while the database is away (up to --pg-wait), once
   * every tube this node let go of is forgotten in the database too (node_tubes.ts), and
   * the jobs of every client that closed before it was asked are ready (intake.ts).
   */
  #read<T>(run: (sql: Sql) => Promise<() => T>): Promise<T> {
    const since = this.#waiting.clock.now();
    return Promise.all([this.#tubes.forgotten(), this.#released()])
      .then(() => untilBack(this.#waiting, () => run(this.#sql), since))
      .then((then) => then());
  }
}
