// The PostgreSQL engine: core/engine.ts over tables that any number of tubeway nodes
// share (core/pg/README.md). Jobs, their states, tube pauses and the cluster's counters
// live in the database, with the database's clock; what lives here is this node's
// connections (used and watched tubes, their waits in reserve) and its id blocks.
// Every answer is a promise given after the COMMIT of the turn that made it (turn.ts).
import type { Clock, Turns } from "../clock.ts";
import { Histogram, QUEUE_BOUNDS_MS } from "../histogram.ts";
import { DEFAULT_LEASE_MS, DEFAULT_WAIT_MS } from "./defaults.ts";
import type {
  ClusterNode,
  Engine,
  EngineMetrics,
  EngineStats,
  Exists,
  JobList,
  JobOut,
  JobStats,
  ListState,
  NewJob,
  NewJobAt,
  PutResult,
  Refusal,
  Settling,
  TubeSnapshot,
  TubeState,
  TubeStats,
  UniqueJob,
  WaitEnd,
  Wake,
} from "../engine.ts";
import { away, type ListenEvents, type Row, type Sql, type SqlClient } from "./sql.ts";
import { migrate, SLOTS } from "./schema.ts";
import { IdBlocks } from "./ids.ts";
import { type Statements, statements } from "./statements.ts";
import { all, type Op, type Plan, TurnRunner, type TurnState, untilBack, type Waiting } from "./turn.ts";
import { TurnMetrics } from "./metrics.ts";
import { DEADLINE_SOON_MS } from "../clients.ts";
import type { PgClient } from "./client.ts";
import { type ServeOrder, Serving } from "./serving.ts";
import { NodeTubes } from "./node_tubes.ts";
import { claimAll, deleteOp, type DeleteReq, internalOp, putOp, type PutReq } from "./merged.ts";
import { jobOut, jobSnapshotOf, jobStatsOf, LIST_STATES, message } from "./views.ts";
import { PgExtensions } from "./extensions.ts";
import { extStatements } from "./ext_statements.ts";

/**
 * A node vacuums the jobs table itself after this many deletes, at most every
 * VACUUM_EVERY_MS: autovacuum looks at a table once per `autovacuum_naptime` (a minute by
 * default, a setting of the whole server), and a table whose rows are deleted as fast as
 * they come fills its claim index with dead entries meanwhile (docs/pg.md#measured).
 */
const VACUUM_AFTER = 20_000;
const VACUUM_EVERY_MS = 5_000;
/** A NOTIFY payload is at most 8000 bytes; past this, "something is due" says enough. */
const MAX_TUBES_PAYLOAD = 7000;
/**
 * Ids come from a sequence, so none is above this; a larger one (the protocol reads up
 * to 2^64-1, more than int8 holds) is NOT_FOUND without asking.
 */
const MAX_ID = Number.MAX_SAFE_INTEGER;

/** A reserve waiting for its turn's claims. */
interface ReserveReq {
  c: PgClient;
  timeoutMs: number;
  resolve(r: JobOut | WaitEnd | null): void;
  reject(e: unknown): void;
}

export interface PgEngineOptions {
  sql: SqlClient;
  /** The schema holding the tables (--pg-schema). */
  schema: string;
  clock: Clock;
  turns: Turns;
  maxJobSize: number;
  /** How long a node's lease lasts without renewal (it renews every third of it). */
  leaseMs?: number;
  /** Where failures of the database go (a command that hit one answers INTERNAL_ERROR). */
  error?: (line: string) => void;
  /** Where this node runs, recorded in its row of the nodes table (the dashboard's cluster view). */
  host?: { hostname: string; pid: number };
  /** Where news that is no failure goes (the database is back). */
  log?: (line: string) => void;
  /** How long a command waits for a database that is away (--pg-wait), then answers INTERNAL_ERROR. */
  waitMs?: number;
  /** The database as logs name it ("host:port/db", no password). */
  target?: string;
  /** What stats shows as binlog-max-size (-s): a node over PostgreSQL writes no log, but 1.12 shows -s without one too. */
  binlogMaxSize: number;
}

/** Migrate the schema, register this node, take its first ids, listen: then serve. */
export async function openPgEngine(opts: PgEngineOptions): Promise<PgEngine> {
  await migrate(opts.sql, opts.schema);
  const q = statements(opts.schema);
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const [reg] = await opts.sql.query(q.register, [leaseMs, opts.host?.hostname ?? null, opts.host?.pid ?? null]);
  const [block] = await opts.sql.query(q.idBlock);
  const engine = new PgEngine(opts, q, Number(reg!.id), Number(block!.id), leaseMs);
  await opts.sql.listen(engine.channel, (p) => engine.heard(p), engine.listenEvents);
  return engine;
}

export class PgEngine implements Engine<PgClient> {
  readonly clock: Clock;
  readonly maxJobSize: number;
  /** This node life's id in the nodes table. */
  readonly node: number;
  /** The LISTEN/NOTIFY channel of this schema. */
  readonly channel: string;

  readonly #sql: SqlClient;
  readonly #q: Statements;
  readonly #runner: TurnRunner;
  readonly #error: (line: string) => void;
  readonly #log: (line: string) => void;
  readonly #leaseMs: number;
  /** The tubes of this node's connections, and those it knows have jobs (node_tubes.ts). */
  readonly #tubes = new NodeTubes(() => this.#runner.kick());
  /** Clients waiting in reserve, and the one timer (serving.ts). */
  readonly #serving: Serving;
  readonly #readyToReserve = new Histogram(QUEUE_BOUNDS_MS);
  readonly #reserveToDelete = new Histogram(QUEUE_BOUNDS_MS);
  /** The turns' latencies, sizes, retries and errors, and the lease as last renewed. */
  readonly #turnMetrics: TurnMetrics;
  readonly #waiting: Waiting;
  readonly #target: string;
  readonly #binlogMaxSize: number;
  /** Whether the database takes this node's transactions, and why not (DatabaseHealth). */
  readonly #database = { available: true, reason: "" };
  /** When the database last went away, and last came back (monotonic ms). */
  readonly #outage = { since: -Infinity, backAt: -Infinity };
  /** When a transaction last committed (monotonic ms). */
  #okAt = -Infinity;

  #puts: PutReq[] = [];
  #reserves: ReserveReq[] = [];
  #deletes: DeleteReq[] = [];
  #ops: Op[] = [];
  /**
   * What a committed turn's ops found that its end, issued before their rows came, did
   * not know: tubes readied (by a sweep, release, kick, ...), something due, tubes left
   * empty. The next turn notifies, claims and forgets for them (a turn is asked for the
   * first two; tubes left empty wait for one).
   */
  #late = { readied: new Set<string>(), due: false, emptied: new Set<string>() };
  readonly #ids: IdBlocks;
  /** The extension commands (extensions.ts). */
  readonly #ext: PgExtensions;
  /** Deletes since this node last vacuumed the jobs table; whether it is vacuuming, since when. */
  #deleted = 0;
  #vacuuming = false;
  #vacuumedAt = -Infinity;

  #conns = 0;
  #draining = false;
  #closing: Promise<void> | undefined;

  constructor(opts: PgEngineOptions, q: Statements, node: number, firstId: number, leaseMs: number) {
    this.clock = opts.clock;
    this.maxJobSize = opts.maxJobSize;
    this.node = node;
    this.channel = `tubeway.${opts.schema}`;
    this.#sql = opts.sql;
    this.#q = q;
    this.#error = opts.error ?? ((l) => console.error(l));
    this.#log = opts.log ?? ((l) => console.log(l));
    this.#leaseMs = leaseMs;
    this.#ids = new IdBlocks(
      firstId,
      () => this.#sql.query(q.idBlock).then(([row]) => Number(row!.id)),
      (e) => {
        // a database away is logged once, when it goes (#away)
        if (!away(e)) this.#error(`pg: could not take a block of job ids: ${message(e)}`);
      },
    );
    this.#turnMetrics = new TurnMetrics(() => this.clock.now());
    // registered a moment ago (the id block's round trip): close enough for a lease of seconds
    this.#turnMetrics.leaseRenewed(this.clock.now(), leaseMs);
    this.#target = opts.target ?? "the database";
    this.#binlogMaxSize = opts.binlogMaxSize;
    const database = this.#database, outage = this.#outage;
    this.#waiting = {
      clock: this.clock,
      waitMs: opts.waitMs ?? DEFAULT_WAIT_MS,
      health: {
        get available() {
          return database.available;
        },
        get wentAwayAt() {
          return outage.since;
        },
        get backAt() {
          return outage.backAt;
        },
        away: (e, startedAt) => this.#away(e, startedAt),
        back: () => this.#back(),
      },
    };
    this.#runner = new TurnRunner(
      opts.sql,
      opts.turns,
      (slot) => this.#plan(slot),
      SLOTS,
      this.#waiting,
      this.#turnMetrics,
    );
    this.#serving = new Serving(this.clock, leaseMs, () => this.#runner.kick());
    this.#ext = new PgExtensions(extStatements(opts.schema), q, node, (run) => this.#op(run));
    // The first turn releases what nodes whose lease lapsed still hold (a previous life's).
    this.#runner.kick();
  }

  // ---- connections ----------------------------------------------------------------

  connect(wake: Wake): PgClient {
    return this.#tubes.connect(wake, ++this.#conns);
  }

  disconnect(c: PgClient): void {
    c.closed = true;
    if (c.isWaiting) this.#serving.waiters.end(c);
    this.#tubes.disconnect(c);
    if (c.reserving) this.#unclaim(c);
  }

  // ---- producing ------------------------------------------------------------------

  /** From this node's block of ids (ids.ts). */
  takeId(): number {
    return this.#ids.take();
  }

  put(c: PgClient, job: NewJob): Promise<PutResult> {
    if (this.#draining) return Promise.resolve("DRAINING");
    return new Promise((resolve, reject) => {
      // ttr < 1 s is raised to 1 s, as 1.12 does.
      const ttrMs = Math.max(job.ttrSec, 1) * 1000;
      const { id, pri, body } = job;
      this.#puts.push({ id, tube: c.use.name, pri, delayMs: job.delaySec * 1000, ttrMs, body, resolve, reject });
      this.#runner.kick();
    });
  }

  // ---- consuming ------------------------------------------------------------------

  /** Claimed with every other reserve and waiting client of the turn, at its end (merged.ts claimAll). */
  reserve(c: PgClient, timeoutMs: number): Promise<JobOut | WaitEnd | null> {
    c.reserving = true;
    return new Promise((resolve, reject) => {
      this.#reserves.push({ c, timeoutMs, resolve, reject });
      this.#runner.kick();
    });
  }

  /** After COMMIT: a reserve's answer from its claim's row; true when the client now waits. */
  #answer(r: ReserveReq, row: Row): boolean {
    const c = r.c;
    if (row.id !== null) {
      if (c.closed) this.#unclaim(c);
      r.resolve(jobOut(row));
      return false;
    }
    const soonMs = row.soon_ms === null ? Infinity : Number(row.soon_ms);
    if (soonMs <= DEADLINE_SOON_MS) r.resolve("DEADLINE_SOON");
    else if (r.timeoutMs <= 0 || c.closed) r.resolve("TIMED_OUT");
    else {
      this.#serving.begin(c, r.timeoutMs, soonMs, row.due_ms === null ? Infinity : Number(row.due_ms));
      r.resolve(null);
      return true;
    }
    return false;
  }

  /**
   * A job was claimed for a client that is gone (or gave up waiting) by then: release
   * what it holds. Its disconnect may have run in another transaction that could not
   * see this claim yet.
   */
  #unclaim(c: PgClient): void {
    this.#background(async (tx, turn) => {
      for (const r of await tx.query(this.#q.disconnect, [this.node, c.conn])) turn.readied.add(r.tube as string);
    });
  }

  cancelWait(c: PgClient): void {
    this.#serving.cancel(c);
  }

  reserveJob(c: PgClient, id: number): Promise<JobOut | undefined> {
    if (!(id <= MAX_ID)) return Promise.resolve(undefined);
    c.reserving = true;
    return this.#op(async (tx) => {
      const [row] = await tx.query(this.#q.reserveJob, [this.node, c.conn, id]);
      return () => {
        if (row && c.closed) this.#unclaim(c);
        return row ? jobOut(row) : undefined;
      };
    });
  }

  delete(c: PgClient, id: number): Promise<"DELETED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return new Promise((resolve, reject) => {
      this.#deletes.push({ id, conn: c.conn, resolve, reject });
      this.#runner.kick();
    });
  }

  release(c: PgClient, id: number, pri: number, delaySec: number): Promise<"RELEASED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return this.#op(async (tx, turn) => {
      const [row] = await tx.query(this.#q.release, [this.node, c.conn, id, pri, delaySec]);
      if (row && delaySec > 0) turn.due = true;
      else if (row) turn.readied.add(row.tube as string);
      return () => (row ? "RELEASED" : "NOT_FOUND");
    });
  }

  bury(c: PgClient, id: number, pri: number): Promise<"BURIED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return this.#op(async (tx) => {
      const [row] = await tx.query(this.#q.bury, [this.node, c.conn, id, pri]);
      return () => (row ? "BURIED" : "NOT_FOUND");
    });
  }

  touch(c: PgClient, id: number): Promise<boolean> {
    if (!(id <= MAX_ID)) return Promise.resolve(false);
    return this.#op(async (tx) => {
      const [row] = await tx.query(this.#q.touch, [this.node, c.conn, id]);
      return () => row !== undefined;
    });
  }

  kick(c: PgClient, bound: number): Promise<number> {
    const tube = c.use.name;
    return this.#op(async (tx, turn) => {
      const n = (await tx.query(this.#q.kick, [tube, bound])).length;
      if (n > 0) turn.readied.add(tube);
      return () => n;
    });
  }

  kickJob(id: number): Promise<"KICKED" | Refusal> {
    if (!(id <= MAX_ID)) return Promise.resolve("NOT_FOUND");
    return this.#op(async (tx, turn) => {
      const [row] = await tx.query(this.#q.kickJob, [id]);
      if (row) turn.readied.add(row.tube as string);
      return () => (row ? "KICKED" : "NOT_FOUND");
    });
  }

  // ---- looking --------------------------------------------------------------------

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
    return this.#op(async (tx) => {
      const [r] = await tx.query(this.#q.statsJob, [id]);
      return () => r && jobStatsOf(id, r);
    });
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
      return () => ({
        urgent: Number(s!.urgent),
        ready: Number(s!.ready),
        reserved: Number(s!.reserved),
        delayed: Number(s!.delayed),
        buried: Number(s!.buried),
        tubes: this.#tubes.sync(names!).length,
        waiting: this.#serving.waiters.size,
        totalJobs: Number(s!.total_jobs),
        jobTimeouts: Number(s!.job_timeouts),
        draining: this.#draining,
        binlog: {
          oldestIndex: 0,
          currentIndex: 0,
          maxSize: this.#binlogMaxSize,
          recordsWritten: 0,
          recordsMigrated: 0,
        },
      });
    });
  }

  tubeNames(): Promise<string[]> {
    return this.#op(async (tx) => {
      const rows = await tx.query(this.#q.tubeNames);
      return () => this.#tubes.sync(rows);
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
          out.push({ ...s, paused: left > 0, pauseLeftMs: left, oldestReadyMs: 0 });
        });
        return out;
      };
    });
  }

  listJobs(tube: string, state: ListState, limit: number, offset = 0): Promise<JobList | undefined> {
    return this.#read(async (tx) => {
      const [counted, listed] = await all([
        tx.query(this.#q.statsTube, [tube]),
        tx.query(this.#q.listJobs, [tube, LIST_STATES[state], Math.max(0, limit), Math.max(0, offset)]),
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

  metrics(): EngineMetrics {
    const m = this.#turnMetrics, pool = this.#sql.pool?.();
    return {
      readyToReserve: this.#readyToReserve,
      reserveToDelete: this.#reserveToDelete,
      log: undefined,
      database: {
        available: this.#database.available,
        reason: this.#database.reason,
        node: this.node,
        leaseRemainingMs: m.leaseRemainingMs(),
        poolInUse: pool?.inUse ?? 0,
        poolSize: pool?.size ?? 0,
        statements: m.statements,
        commits: m.commits,
        batchSizes: m.batchSizes,
        transactions: m.transactions,
        retries: m.retries,
        errors: m.errors,
        nodes: () => this.#liveNodes(),
      },
    };
  }

  /** The cluster's nodes whose lease has not lapsed, read now (outside the turns). */
  #liveNodes(): Promise<ClusterNode[]> {
    return this.#sql.query(this.#q.liveNodes).then((rows) =>
      rows.map((r) => ({
        id: Number(r.id),
        host: (r.host as string | null) ?? "",
        pid: Number(r.pid ?? 0),
        leaseRemainingMs: Math.max(0, Number(r.lease_ms)),
        self: Number(r.id) === this.node,
      }))
    );
  }

  /**
   * A transaction or read begun at `startedAt` failed because the database is away: said
   * once per outage. Not when another one committed since it began (it waited across the
   * database's return).
   */
  #away(e: unknown, startedAt = Infinity): void {
    if (!this.#database.available || this.#okAt > startedAt) return;
    this.#database.available = false;
    this.#database.reason = `PostgreSQL at ${this.#target} is unavailable: ${message(e)}`;
    this.#outage.since = this.clock.now();
    this.#error(
      `pg: database at ${this.#target} went away (${message(e)}); commands wait up to ${
        this.#waiting.waitMs / 1000
      } s for it, then answer INTERNAL_ERROR`,
    );
  }

  /** A transaction committed (or a read answered) again. */
  #back(): void {
    this.#okAt = this.clock.now();
    if (this.#database.available) return;
    this.#database.available = true;
    this.#database.reason = "";
    this.#outage.backAt = this.#okAt;
    const s = ((this.clock.now() - this.#outage.since) / 1000).toFixed(1);
    this.#log(`pg: database at ${this.#target} is back after ${s} s`);
  }

  // ---- tubes ----------------------------------------------------------------------

  use(c: PgClient, name: string): void {
    this.#tubes.use(c, name);
  }

  watch(c: PgClient, name: string): number {
    return this.#tubes.watch(c, name);
  }

  ignore(c: PgClient, name: string): number | "NOT_IGNORED" {
    return this.#tubes.ignore(c, name);
  }

  pauseTube(name: string, delaySec: number): Promise<boolean> {
    const here = this.#tubes.has(name);
    return this.#op(async (tx, turn) => {
      const [row] = await tx.query(this.#q.pause, [name, delaySec, here]);
      if (row && delaySec === 0) turn.readied.add(name);
      else if (row) turn.due = true;
      return () => row !== undefined;
    });
  }

  // ---- extensions (extensions.ts; docs/extensions.md) ------------------------------

  deleteTube(tube: string, state?: TubeState): Promise<number | Refusal> {
    return this.#ext.deleteTube(tube, state, this.#tubes.has(tube));
  }
  kickTube(tube: string, bound: number, state?: "buried" | "delayed"): Promise<number | Refusal> {
    return this.#ext.kickTube(tube, bound, state, this.#tubes.has(tube));
  }
  peekTube(tube: string, state: ListState): Promise<JobOut | undefined> {
    return this.#ext.peekTube(tube, state);
  }
  putAt(c: PgClient, job: NewJobAt): Promise<PutResult> {
    if (this.#draining) return Promise.resolve("DRAINING");
    return this.#ext.putAt(c.use.name, job);
  }
  putUnique(c: PgClient, job: UniqueJob): Promise<PutResult | Exists> {
    if (this.#draining) return Promise.resolve("DRAINING");
    return this.#ext.putUnique(c.use.name, job);
  }
  setDlq(tube: string, maxAttempts: number, deadTube: string): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#ext.setDlq(tube, maxAttempts, deadTube);
  }
  setBackoff(tube: string, baseSec: number, capSec: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#ext.setBackoff(tube, baseSec, capSec);
  }

  // ---- the server -----------------------------------------------------------------

  /** Drain mode is this node's (SIGUSR1, `drain on`): the other nodes go on taking puts. */
  drain(): void {
    this.#draining = true;
  }

  undrain(): void {
    this.#draining = false;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** Answers come after their COMMIT already: replies may always go at once. */
  settle(_s: Settling, _changed: boolean, _replies: boolean): boolean {
    return false;
  }

  /** Stop the timer; once the turns under way are done, end this node's lease and close the pool. */
  close(): void {
    this.closed();
  }

  /** close(), settling when the pool is closed. */
  closed(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#serving.stop();
    this.#closing = (async () => {
      await this.#runner.idle();
      try {
        await this.#sql.query(this.#q.retire, [this.node]);
      } catch (e) {
        this.#error(`pg: could not end this node's lease: ${message(e)}`);
      }
      await this.#sql.close();
    })();
    return this.#closing;
  }

  /**
   * The LISTEN connection lost: the database went away (most likely; a turn under way or
   * the next one tells). LISTEN again: NOTIFYs may have been missed meanwhile, and the
   * lease may be close to lapsing: renew it now.
   */
  readonly listenEvents: ListenEvents = {
    lost: (e) => this.#away(e),
    again: () => {
      this.#serving.renewLease();
      this.heard(undefined);
    },
  };

  /**
   * A NOTIFY on this schema's channel: "<node> r|d <tube>,<tube>..."; undefined: LISTEN
   * was established again, NOTIFYs may have been missed meanwhile.
   */
  heard(payload: string | undefined): void {
    if (payload === undefined) return this.#serving.heard(undefined);
    const [from, kind, tubes] = payload.split(" ");
    if (Number(from) === this.node) return;
    this.#serving.heard(kind === "d" || !tubes ? undefined : tubes.split(","));
  }

  // ---- turns ----------------------------------------------------------------------

  /** A command's statements for the next turn; its answer after COMMIT. */
  #op<T>(run: (tx: Sql, turn: TurnState) => Promise<() => T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#ops.push({ run, resolve, reject } as Op);
      this.#runner.kick();
    });
  }

  /**
   * A command that only reads and counts (stats, stats-tube, the metrics port's and the
   * dashboard's views): on the pool, outside the turns, so that a scan of a large table
   * never holds a turn's replies back. It sees everything committed, so every change
   * acknowledged before it was asked; its statements count jobs as the next sweep would
   * leave them.
   */
  #read<T>(run: (sql: Sql) => Promise<() => T>): Promise<T> {
    const since = this.clock.now();
    return this.#tubes.forgotten().then(() => untilBack(this.#waiting, () => run(this.#sql), since)).then((then) =>
      then()
    );
  }

  /** Work no client waits for (a closed connection's reservations): failures are logged. */
  #background(run: (tx: Sql, turn: TurnState) => Promise<void>): void {
    this.#ops.push({
      run: async (tx, turn) => {
        await run(tx, turn);
        return () => undefined;
      },
      resolve: () => {},
      reject: (e) => this.#error(`pg: ${message(e)}`),
    });
    this.#runner.kick();
  }

  #found(text: string, arg: unknown): Promise<JobOut | undefined> {
    return this.#op(async (tx) => {
      const [row] = await tx.query(text, [arg]);
      return () => (row ? jobOut(row) : undefined);
    });
  }

  /** What gathered since the last turn, as one transaction's plan; undefined when there is nothing to do. */
  #plan(slot: number): Plan | undefined {
    const late = this.#late;
    const work = this.#puts.length + this.#deletes.length + this.#reserves.length + this.#ops.length +
      (this.#tubes.hasDrops ? 1 : 0) + late.readied.size + (late.due ? 1 : 0);
    if (work === 0 && !this.#serving.wanted) return undefined;
    this.#late = { readied: new Set(), due: false, emptied: new Set() };
    const order = this.#serving.take();
    const ops: Op[] = [this.#sweepOp(slot)];
    if (order.leaseDue) ops.push(this.#leaseOp());
    const drops = this.#tubes.takeDrops();
    const dropsDone = drops?.done;
    if (drops) ops.push(this.#dropOp(drops.names));
    if (this.#puts.length > 0) ops.push(putOp(this.#q, this.node, slot, this.#puts));
    if (this.#deletes.length > 0) {
      ops.push(deleteOp(this.#q, this.node, slot, this.#deletes));
      this.#deleted += this.#deletes.length;
      this.#vacuum();
    }
    const commands = this.#puts.length + this.#deletes.length + this.#reserves.length + this.#ops.length;
    // the turn's own ops, puts and deletes issue their one statement at once; other commands may not
    const pipelined = this.#ops.length === 0;
    ops.push(...this.#ops);
    const reserves = this.#reserves;
    this.#reserves = [];
    this.#puts = [];
    this.#deletes = [];
    this.#ops = [];
    /** The waiting clients this turn claims for (marked claiming until it ends). */
    let served: PgClient[] = [];
    return {
      ops,
      commands,
      pipelined,
      end: (tx, turn) => {
        // the last turn's late findings are this one's
        for (const t of late.readied) turn.readied.add(t);
        turn.due ||= late.due;
        // claims run again if the turn does: unmark the last attempt's
        for (const c of served) c.claiming = false;
        served = this.#serving.toServe(turn, order);
        return this.#end(tx, turn, served, reserves, order, late.emptied).then((then) => () => {
          then();
          dropsDone?.();
        });
      },
      failed: (e) => {
        this.#relate(late);
        dropsDone?.();
        for (const r of reserves) r.reject(e);
        // a database away is logged once, when it goes (#away)
        if (!away(e)) this.#error(`pg: transaction failed: ${message(e)}`);
        this.#serving.failed(order, served);
      },
    };
  }

  /** Late findings (of a committed turn, or of a failed one's plan) for the next turn. */
  #relate(late: { readied: Iterable<string>; due: boolean; emptied: Iterable<string> }): void {
    for (const t of late.readied) this.#late.readied.add(t);
    for (const t of late.emptied) this.#late.emptied.add(t);
    this.#late.due ||= late.due;
    // tubes left empty wait for the next turn there is (at the latest the lease's): no turn of their own
    if (this.#late.readied.size > 0 || this.#late.due) this.#runner.kick();
  }

  /** Vacuum the jobs table on the pool, beside the turns, when this node has deleted enough (VACUUM_AFTER). */
  #vacuum(): void {
    const now = this.clock.now();
    if (this.#vacuuming || this.#closing || this.#deleted < VACUUM_AFTER || now - this.#vacuumedAt < VACUUM_EVERY_MS) {
      return;
    }
    this.#vacuuming = true;
    this.#deleted = 0;
    this.#sql.query(this.#q.vacuum)
      .catch((e) => {
        if (!this.#closing) this.#error(`pg: could not vacuum the jobs table: ${message(e)}`);
      })
      .finally(() => {
        this.#vacuuming = false;
        this.#vacuumedAt = this.clock.now();
      });
  }

  #sweepOp(slot: number): Op {
    return internalOp(async (tx, turn) => {
      for (const r of await tx.query(this.#q.sweep, [this.node, slot])) turn.readied.add(r.tube as string);
    });
  }

  #leaseOp(): Op {
    let sentAt = 0;
    return {
      ...internalOp(async (tx, turn) => {
        sentAt = this.clock.now();
        for (const r of await tx.query(this.#q.lease, [this.node, this.#leaseMs])) turn.readied.add(r.tube as string);
      }),
      resolve: () => this.#turnMetrics.leaseRenewed(sentAt, this.#leaseMs),
    };
  }

  #dropOp(names: string[]): Op {
    return internalOp(async (tx) => {
      const gone = names.filter((n) => !this.#tubes.has(n));
      if (gone.length > 0) await tx.query(this.#q.dropTubes, [gone]);
    });
  }

  /**
   * The end of a turn, in its transaction, behind the ops' statements (issued before
   * their rows came: it knows of this turn's work what puts said and the last turn's
   * late findings): forget tubes left empty, tell the other nodes what became ready,
   * claim jobs for the waiting clients and this turn's reserves, learn when the next
   * thing falls due. After COMMIT: hand the claimed jobs over; what the ops found that
   * this did not know goes to the next turn (#late).
   */
  async #end(
    tx: Sql,
    turn: TurnState,
    served: PgClient[],
    reserves: ReserveReq[],
    order: ServeOrder,
    emptiedBefore: ReadonlySet<string>,
  ): Promise<() => void> {
    const q = this.#q;
    const work: Promise<unknown>[] = [];
    const known = new Set(turn.readied);
    const knownDue = turn.due;
    const emptied = [...emptiedBefore].filter((n) => !this.#tubes.referenced(n));
    if (emptied.length > 0) work.push(tx.query(q.dropTubes, [emptied]));
    if (turn.readied.size > 0 || turn.due) work.push(tx.query(q.notify, [this.channel, this.#payload(turn)]));
    const claims = claimAll(tx, q, this.node, [...served, ...reserves.map((r) => r.c)]);
    const due = this.#serving.waiters.size > 0 ? tx.query(q.due) : undefined;
    const [, claimed, dueRows] = await all<unknown>([all(work), claims, due ?? Promise.resolve(undefined)]) as [
      unknown,
      Map<PgClient, Row>,
      Row[] | undefined,
    ];
    return () => {
      this.#relate({
        readied: [...turn.readied].filter((t) => !known.has(t)),
        due: turn.due && !knownDue,
        emptied: turn.emptied,
      });
      this.#tubes.jobsMoved(turn);
      this.#serving.handOver(served, claimed, jobOut, (c) => this.#unclaim(c));
      let began = 0;
      for (const r of reserves) if (this.#answer(r, claimed.get(r.c)!)) began++;
      const ms = dueRows?.[0]?.ms;
      this.#serving.afterTurn(order, dueRows ? (ms === null ? null : Number(ms)) : undefined, began, turn.readied);
    };
  }

  #payload(turn: TurnState): string {
    const tubes = [...turn.readied].join(",");
    return tubes.length > MAX_TUBES_PAYLOAD || turn.due ? `${this.node} d` : `${this.node} r ${tubes}`;
  }
}
