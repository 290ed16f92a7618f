// The commands of the PostgreSQL engine as they come in, each as an op of the next turn
// (turn.ts): its statements run in the turn's transaction, its answer is given after
// COMMIT. Puts, deletes and reserves gather in lists of their own, which the turn's plan
// (plan.ts) runs as one statement each for every connection (merged.ts); every other
// command is an op of its own. The reads that count and list run beside the turns
// (reads.ts).
import type { JobOut, JobStats, NewJob, PutResult, Refusal, WaitEnd } from "../engine.ts";
import type { Sql } from "./sql.ts";
import type { Statements } from "./statements.ts";
import type { Op, TurnState } from "./turn.ts";
import type { PgClient } from "./client.ts";
import type { NodeTubes } from "./node_tubes.ts";
import type { DeleteReq, PutReq } from "./merged.ts";
import { jobOut, jobStatsOf, message } from "./views.ts";

/**
 * Ids come from a sequence, so none is above this; a larger one (the protocol reads up
 * to 2^64-1, more than int8 holds) is NOT_FOUND without asking.
 */
const MAX_ID = Number.MAX_SAFE_INTEGER;

/** A reserve waiting for its turn's claims. */
export interface ReserveReq {
  c: PgClient;
  timeoutMs: number;
  resolve(r: JobOut | WaitEnd | null): void;
  reject(e: unknown): void;
}

/** What gathered for the next turn, in the order it came. */
export interface Gathered {
  puts: PutReq[];
  deletes: DeleteReq[];
  reserves: ReserveReq[];
  /**
   * Closed clients' reservations back to ready: the plan runs them before the commands,
   * which the node read after the close (or in the same turn of the event loop).
   */
  releases: Op[];
  /** Every other command, and the engine's own work no client waits for. */
  ops: Op[];
}

export class Intake {
  readonly #q: Statements;
  readonly #node: number;
  readonly #tubes: NodeTubes;
  /** Ask for a turn. */
  readonly #kick: () => void;
  readonly #error: (line: string) => void;
  #gathered: Gathered = { puts: [], deletes: [], reserves: [], releases: [], ops: [] };
  /** Closed clients' releases not yet committed (or failed for good), each settling when it is. */
  readonly #releasing = new Set<Promise<void>>();
  /** Of those, the ones in a turn under way. */
  #releasesInFlight = 0;

  constructor(q: Statements, node: number, tubes: NodeTubes, kick: () => void, error: (line: string) => void) {
    this.#q = q;
    this.#node = node;
    this.#tubes = tubes;
    this.#kick = kick;
    this.#error = error;
  }

  /** Commands (and background work) waiting for a turn. */
  get size(): number {
    const g = this.#gathered;
    return g.puts.length + g.deletes.length + g.reserves.length + g.releases.length + g.ops.length;
  }

  /**
   * A closed client's release is in a turn under way: no other turn may start before it
   * commits, as its statements would not see the jobs ready (plan.ts waits).
   */
  get releasing(): boolean {
    return this.#releasesInFlight > 0;
  }

  /** Settles once every closed client's release asked for so far has committed (or failed): reads wait for it. */
  released(): Promise<void> {
    return this.#releasing.size === 0 ? Promise.resolve() : Promise.all([...this.#releasing]).then(() => {});
  }

  /** What gathered since the last turn, for the next one's plan: taken, so the turn after starts afresh. */
  take(): Gathered {
    const g = this.#gathered;
    this.#gathered = { puts: [], deletes: [], reserves: [], releases: [], ops: [] };
    this.#releasesInFlight += g.releases.length;
    return g;
  }

  /** A command's statements for the next turn; its answer after COMMIT. */
  op<T>(run: (tx: Sql, turn: TurnState) => Promise<() => T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#gathered.ops.push({ run, resolve, reject } as Op);
      this.#kick();
    });
  }

  /**
   * A job was claimed for a client that is gone (or gave up waiting) by then, or it
   * closed holding jobs: release what it holds. Its disconnect may have run in another
   * transaction that could not see this claim yet. Nobody waits for the answer (failures
   * are logged), but the commands and reads after it wait for its COMMIT.
   */
  unclaim(c: PgClient): void {
    let settle = () => {};
    const done = new Promise<void>((r) => (settle = r));
    this.#releasing.add(done);
    const settled = () => {
      this.#releasesInFlight--;
      this.#releasing.delete(done);
      settle();
    };
    this.#gathered.releases.push({
      run: async (tx, turn) => {
        for (const r of await tx.query(this.#q.disconnect, [this.#node, c.conn])) turn.readied.add(r.tube as string);
        return () => undefined;
      },
      resolve: settled,
      reject: (e) => {
        this.#error(`pg: ${message(e)}`);
        settled();
      },
    });
    this.#kick();
  }

  // ---- producing ------------------------------------------------------------------

  put(c: PgClient, job: NewJob): Promise<PutResult> {
    return new Promise((resolve, reject) => {
      // ttr < 1 s is raised to 1 s, as 1.12 does.
      const ttrMs = Math.max(job.ttrSec, 1) * 1000;
      const { id, pri, body } = job;
      const tube = c.use.name;
      this.#gathered.puts.push({ id, tube, pri, delayMs: job.delaySec * 1000, ttrMs, body, resolve, reject });
      this.#kick();
    });
  }

  // ---- consuming ------------------------------------------------------------------

  /** Claimed with every other reserve and waiting client of the turn, at its end (plan.ts). */
  reserve(c: PgClient, timeoutMs: number): Promise<JobOut | WaitEnd | null> {
    c.reserving = true;
    return new Promise((resolve, reject) => {
      this.#gathered.reserves.push({ c, timeoutMs, resolve, reject });
      this.#kick();
    });
  }

  reserveJob(c: PgClient, id: number): Promise<JobOut | undefined> {
    if (!(id <= MAX_ID)) return Promise.resolve(undefined);
    c.reserving = true;
    return this.op(async (tx) => {
      const [row] = await tx.query(this.#q.reserveJob, [this.#node, c.conn, id]);
      return () => {
        if (row && c.closed) this.unclaim(c);
        return row ? jobOut(row) : undefined;
      };
    });
  }

  delete(c: PgClient, id: number): Promise<"DELETED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return new Promise((resolve, reject) => {
      this.#gathered.deletes.push({ id, conn: c.conn, resolve, reject });
      this.#kick();
    });
  }

  release(c: PgClient, id: number, pri: number, delaySec: number): Promise<"RELEASED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return this.op(async (tx, turn) => {
      const [row] = await tx.query(this.#q.release, [this.#node, c.conn, id, pri, delaySec]);
      if (row && delaySec > 0) turn.due = true;
      else if (row) turn.readied.add(row.tube as string);
      return () => (row ? "RELEASED" : "NOT_FOUND");
    });
  }

  bury(c: PgClient, id: number, pri: number): Promise<"BURIED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return this.op(async (tx) => {
      const [row] = await tx.query(this.#q.bury, [this.#node, c.conn, id, pri]);
      return () => (row ? "BURIED" : "NOT_FOUND");
    });
  }

  touch(c: PgClient, id: number): Promise<boolean> {
    if (!(id <= MAX_ID)) return Promise.resolve(false);
    return this.op(async (tx) => {
      const [row] = await tx.query(this.#q.touch, [this.#node, c.conn, id]);
      return () => row !== undefined;
    });
  }

  kick(c: PgClient, bound: number): Promise<number> {
    const tube = c.use.name;
    return this.op(async (tx, turn) => {
      const n = (await tx.query(this.#q.kick, [tube, bound])).length;
      if (n > 0) turn.readied.add(tube);
      return () => n;
    });
  }

  kickJob(id: number): Promise<"KICKED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return this.op(async (tx, turn) => {
      const [row] = await tx.query(this.#q.kickJob, [id]);
      if (row) turn.readied.add(row.tube as string);
      return () => (row ? "KICKED" : "NOT_FOUND");
    });
  }

  // ---- looking (in the turns: a few rows by index) ---------------------------------

  peek(id: number): Promise<JobOut | undefined> {
    if (!(id <= MAX_ID)) return Promise.resolve(undefined);
    return this.#found(this.#q.peek, id);
  }
  peekReady(c: PgClient): Promise<JobOut | undefined> {
    return this.#found(this.#q.peekReady, c.use.name);
  }
  peekDelayed(c: PgClient): Promise<JobOut | undefined> {
    return this.#found(this.#q.peekDelayed, c.use.name);
  }
  peekBuried(c: PgClient): Promise<JobOut | undefined> {
    return this.#found(this.#q.peekBuried, c.use.name);
  }

  statsJob(id: number): Promise<JobStats | undefined> {
    if (!(id <= MAX_ID)) return Promise.resolve(undefined);
    return this.op(async (tx) => {
      const [r] = await tx.query(this.#q.statsJob, [id]);
      return () => r && jobStatsOf(id, r);
    });
  }

  /**
   * The ids each client holds reserved now, as the database's reservation columns (node,
   * conn) say: another node's sweep or lease may have taken a job back since it was
   * claimed here. A client that never reserved holds nothing (no statement then).
   */
  reservedIds(clients: readonly PgClient[]): Promise<number[][]> {
    if (!clients.some((c) => c.reserving)) return Promise.resolve(clients.map(() => []));
    const conns = clients.map((c) => c.conn);
    return this.op(async (tx) => {
      const rows = await tx.query(this.#q.reservedIds, [this.#node, conns]);
      return () => {
        const held = new Map(conns.map((conn) => [conn, [] as number[]]));
        for (const r of rows) held.get(Number(r.conn))!.push(Number(r.id));
        return conns.map((conn) => held.get(conn)!);
      };
    });
  }

  tubeNames(): Promise<string[]> {
    return this.op(async (tx) => {
      const rows = await tx.query(this.#q.tubeNames);
      return () => this.#tubes.sync(rows);
    });
  }

  // ---- tubes ----------------------------------------------------------------------

  pauseTube(name: string, delaySec: number): Promise<boolean> {
    const here = this.#tubes.has(name);
    return this.op(async (tx, turn) => {
      const [row] = await tx.query(this.#q.pause, [name, delaySec, here]);
      if (row && delaySec === 0) turn.readied.add(name);
      else if (row) turn.due = true;
      return () => row !== undefined;
    });
  }

  #found(text: string, arg: unknown): Promise<JobOut | undefined> {
    return this.op(async (tx) => {
      const [row] = await tx.query(text, [arg]);
      return () => (row ? jobOut(row) : undefined);
    });
  }
}
