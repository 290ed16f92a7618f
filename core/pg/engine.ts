// The PostgreSQL engine: core/engine.ts over tables that any number of tubeway nodes
// share (core/pg/README.md). Jobs, their states, tube pauses and the cluster's counters
// live in the database, with the database's clock; what lives here is this node's
// connections (used and watched tubes, their waits in reserve) and its id blocks.
// Every answer is a promise given after the COMMIT of the turn that made it (turn.ts).
// This class wires the parts: the commands' intake (intake.ts) and the reads beside the
// turns (reads.ts), a turn's plan and end (plan.ts), outages (outage.ts), the lease and
// LISTEN (lease.ts), vacuuming (vacuum.ts).
import type { Clock, Turns } from "../clock.ts";
import { Histogram, QUEUE_BOUNDS_MS } from "../histogram.ts";
import { DEFAULT_LEASE_MS, DEFAULT_WAIT_MS } from "./defaults.ts";
import type {
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
  NewSchedule,
  PutResult,
  Refusal,
  ScheduleInfo,
  Settling,
  TubeSnapshot,
  TubeState,
  TubeStats,
  UniqueJob,
  WaitEnd,
  Wake,
} from "../engine.ts";
import { away, type SqlClient } from "./sql.ts";
import { migrate } from "./schema.ts";
import { IdBlocks, NO_ID_YET } from "./ids.ts";
import { dueMsOf, type Statements, statements } from "./statements.ts";
import { TurnRunner, untilBack } from "./turn.ts";
import { TurnMetrics } from "./metrics.ts";
import type { PgClient } from "./client.ts";
import { Serving } from "./serving.ts";
import { NodeTubes } from "./node_tubes.ts";
import { message } from "./views.ts";
import { PgExtensions } from "./extensions.ts";
import { PgFlow } from "./flow.ts";
import { flowStatements } from "./flow_statements.ts";
import { extStatements } from "./ext_statements.ts";
import { Intake } from "./intake.ts";
import { Reads } from "./reads.ts";
import { Planner } from "./plan.ts";
import { Outage } from "./outage.ts";
import { Lease } from "./lease.ts";
import { Vacuum } from "./vacuum.ts";

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

/**
 * Transactions a node keeps in flight at once (each in a slot of the count rows, up to
 * schema.ts's SLOTS). One: the commands that gather while it commits make the next turn
 * larger, and two turns side by side cost the node and the database more per command and
 * lengthened the tails (docs/pg.md, Measured).
 */
const IN_FLIGHT = 1;
/** Migrate the schema, register this node, take its first ids, listen: then serve. */
export async function openPgEngine(opts: PgEngineOptions): Promise<PgEngine> {
  await migrate(opts.sql, opts.schema);
  const q = statements(opts.schema);
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const [reg] = await opts.sql.query(q.register, [leaseMs, opts.host?.hostname ?? null, opts.host?.pid ?? null]);
  const [block] = await opts.sql.query(q.idBlock);
  const engine = new PgEngine(opts, q, Number(reg!.id), Number(block!.id), leaseMs);
  await engine.listen();
  return engine;
}

export class PgEngine implements Engine<PgClient> {
  readonly clock: Clock;
  readonly maxJobSize: number;
  /** This node life's id in the nodes table. */
  readonly node: number;

  readonly #sql: SqlClient;
  readonly #runner: TurnRunner;
  readonly #error: (line: string) => void;
  /** The tubes of this node's connections, and those it knows have jobs (node_tubes.ts). */
  readonly #tubes = new NodeTubes(() => this.#runner.kick());
  /** Clients waiting in reserve, and the one timer (serving.ts). */
  readonly #serving: Serving;
  readonly #readyToReserve = new Histogram(QUEUE_BOUNDS_MS);
  readonly #reserveToDelete = new Histogram(QUEUE_BOUNDS_MS);
  /** The turns' latencies, sizes, retries and errors, and the lease as last renewed. */
  readonly #turnMetrics: TurnMetrics;
  readonly #outage: Outage;
  readonly #lease: Lease;
  readonly #vacuum: Vacuum;
  readonly #intake: Intake;
  readonly #reads: Reads;
  readonly #planner: Planner;
  readonly #ids: IdBlocks;
  /** The extension commands (extensions.ts). */
  readonly #ext: PgExtensions;
  /** Limits and schedules (flow.ts). */
  readonly #flow: PgFlow;

  /** A worker's delete and its next reserve read behind it go in one turn (intake.ts keeps their order). */
  readonly reserveBehindDelete = true;

  #conns = 0;
  #draining = false;
  #closing: Promise<void> | undefined;

  constructor(opts: PgEngineOptions, q: Statements, node: number, firstId: number, leaseMs: number) {
    const { sql, schema, clock } = opts;
    this.clock = clock;
    this.maxJobSize = opts.maxJobSize;
    this.node = node;
    this.#sql = sql;
    const error = this.#error = opts.error ?? ((l) => console.error(l));
    const kick = () => this.#runner.kick();
    const metrics = this.#turnMetrics = new TurnMetrics(() => clock.now());
    const [waitMs, target, log] = [opts.waitMs ?? DEFAULT_WAIT_MS, opts.target ?? "the database", opts.log];
    const outage = this.#outage = new Outage(clock, waitMs, target, error, log ?? ((l) => console.log(l)));
    // a block is asked for again while the database is away, up to --pg-wait, as a read is
    const fetchBlock = () => untilBack(outage.waiting, () => sql.query(q.idBlock)).then(([row]) => Number(row!.id));
    this.#ids = new IdBlocks(firstId, fetchBlock, (e) => {
      // a database away is logged once, when it goes (outage.ts)
      if (!away(e)) error(`pg: could not take a block of job ids: ${message(e)}`);
    });
    this.#runner = new TurnRunner(
      sql,
      opts.turns,
      (slot) => this.#planner.plan(slot),
      IN_FLIGHT,
      outage.waiting,
      metrics,
    );
    const serving = this.#serving = new Serving(clock, leaseMs, kick);
    const flowChanged = (kind: "l" | "s" | undefined, tubes: string[]) => {
      // the waiting clients of a tube whose limits changed claim again once they are read
      this.#flow.refresh().then(() => kind === "l" && serving.heard(tubes));
    };
    const lease = this.#lease = new Lease({
      sql,
      q,
      node,
      schema,
      clock,
      leaseMs,
      metrics,
      serving,
      outage,
      flowChanged,
      joined: () => this.#planner.joined(),
    });
    const vacuum = this.#vacuum = new Vacuum(sql, q.vacuum, clock, error);
    const tubes = this.#tubes;
    const intake = this.#intake = new Intake(q, node, tubes, kick, error);
    const binlogMaxSize = opts.binlogMaxSize;
    this.#reads = new Reads(sql, q, tubes, outage.waiting, () => ({
      waiting: serving.waiters.size,
      draining: this.#draining,
      binlogMaxSize,
    }), () => intake.released());
    const x = flowStatements(schema, dueMsOf(schema));
    const flow = this.#flow = new PgFlow({
      x,
      node,
      channel: lease.channel,
      clock,
      op: (run) => intake.op(run),
      read: (run) => run(sql),
      // a schedule's run takes its id inside a turn, where it cannot wait: with none left it fails
      takeId: () => {
        const id = this.#ids.take();
        if (id === undefined) throw new Error("no job ids: the next block has not come yet");
        return id;
      },
      draining: () => this.#draining,
      error,
      serve: (tubes) => serving.heard(tubes),
    });
    const counting = { has: (t: readonly string[]) => flow.hasLimited(t), claims: x.claims };
    this.#planner = new Planner({ q, node, intake, serving, tubes, lease, vacuum, counting, error, kick });
    this.#ext = new PgExtensions(extStatements(schema), q, node, (run) => intake.op(run));
    // The first turn releases what nodes whose lease lapsed still hold (a previous life's).
    this.#runner.kick();
  }

  /** LISTEN on the schema's channel (lease.ts), once, as the node opens; then read the limits and schedules. */
  async listen(): Promise<void> {
    await this.#lease.listen();
    await this.#flow.refresh();
  }

  // ---- connections ----------------------------------------------------------------

  connect(wake: Wake): PgClient {
    return this.#tubes.connect(wake, ++this.#conns);
  }

  disconnect(c: PgClient): void {
    c.closed = true;
    if (c.isWaiting) this.#serving.waiters.end(c);
    this.#tubes.disconnect(c);
    if (c.reserving) this.#intake.unclaim(c);
  }

  // ---- commands: ops of the next turn (intake.ts) ----------------------------------

  /** From this node's block of ids (ids.ts); NO_ID_YET while none is left (the put then waits for one). */
  takeId(): number {
    return this.#ids.take() ?? NO_ID_YET;
  }

  put(c: PgClient, job: NewJob): Promise<PutResult> {
    if (this.#draining) return Promise.resolve("DRAINING");
    if (job.id === NO_ID_YET) return this.#ids.next().then((id) => this.put(c, { ...job, id }));
    return this.#intake.put(c, job);
  }
  reserve(c: PgClient, timeoutMs: number): Promise<JobOut | WaitEnd | null> {
    return this.#intake.reserve(c, timeoutMs);
  }
  cancelWait(c: PgClient): void {
    this.#serving.cancel(c);
  }
  reserveJob(c: PgClient, id: number): Promise<JobOut | undefined> {
    return this.#intake.reserveJob(c, id);
  }
  delete(c: PgClient, id: number): Promise<"DELETED" | Refusal> {
    return this.#intake.delete(c, id);
  }
  release(c: PgClient, id: number, pri: number, delaySec: number): Promise<"RELEASED" | Refusal> {
    return this.#intake.release(c, id, pri, delaySec);
  }
  bury(c: PgClient, id: number, pri: number): Promise<"BURIED" | Refusal> {
    return this.#intake.bury(c, id, pri);
  }
  touch(c: PgClient, id: number): Promise<boolean> {
    return this.#intake.touch(c, id);
  }
  kick(c: PgClient, bound: number): Promise<number> {
    return this.#intake.kick(c, bound);
  }
  kickJob(id: number): Promise<"KICKED" | Refusal> {
    return this.#intake.kickJob(id);
  }
  peek(id: number): Promise<JobOut | undefined> {
    return this.#intake.peek(id);
  }
  peekReady(c: PgClient): Promise<JobOut | undefined> {
    return this.#intake.peekReady(c);
  }
  peekDelayed(c: PgClient): Promise<JobOut | undefined> {
    return this.#intake.peekDelayed(c);
  }
  peekBuried(c: PgClient): Promise<JobOut | undefined> {
    return this.#intake.peekBuried(c);
  }
  statsJob(id: number): Promise<JobStats | undefined> {
    return this.#intake.statsJob(id);
  }
  tubeNames(): Promise<string[]> {
    return this.#intake.tubeNames();
  }
  pauseTube(name: string, delaySec: number): Promise<boolean> {
    return this.#intake.pauseTube(name, delaySec);
  }

  // ---- reads beside the turns (reads.ts) -------------------------------------------

  statsTube(name: string): Promise<TubeStats | undefined> {
    return this.#reads.statsTube(name);
  }
  stats(): Promise<EngineStats> {
    return this.#reads.stats();
  }
  tubes(names: readonly string[]): Promise<TubeSnapshot[]> {
    return this.#reads.tubes(names);
  }
  listJobs(tube: string, state: ListState, limit: number, offset = 0): Promise<JobList | undefined> {
    return this.#reads.listJobs(tube, state, limit, offset);
  }

  metrics(): EngineMetrics {
    const m = this.#turnMetrics, pool = this.#sql.pool?.();
    return {
      readyToReserve: this.#readyToReserve,
      reserveToDelete: this.#reserveToDelete,
      log: undefined,
      scheduleRuns: this.#flow.runs,
      database: {
        available: this.#outage.available,
        reason: this.#outage.reason,
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
        nodes: () => this.#lease.nodes(),
      },
    };
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
    if (job.id === NO_ID_YET) return this.#ids.next().then((id) => this.putAt(c, { ...job, id }));
    return this.#ext.putAt(c.use.name, job);
  }
  putUnique(c: PgClient, job: UniqueJob): Promise<PutResult | Exists> {
    if (this.#draining) return Promise.resolve("DRAINING");
    if (job.id === NO_ID_YET) return this.#ids.next().then((id) => this.putUnique(c, { ...job, id }));
    return this.#ext.putUnique(c.use.name, job);
  }
  setDlq(tube: string, maxAttempts: number, deadTube: string): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#ext.setDlq(tube, maxAttempts, deadTube);
  }
  setBackoff(tube: string, baseSec: number, capSec: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#ext.setBackoff(tube, baseSec, capSec);
  }
  reservedIds(clients: readonly PgClient[]): Promise<number[][]> {
    return this.#intake.reservedIds(clients);
  }
  setConcurrency(tube: string, max: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#flow.setConcurrency(tube, max);
  }
  setRate(tube: string, count: number, windowSec: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#flow.setRate(tube, count, windowSec);
  }
  /** Every node runs the schedules (one of them each due time, flow.ts), except a draining one. */
  schedule(s: NewSchedule): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#flow.schedule(s);
  }
  unschedule(name: string): Promise<"DELETED" | Refusal> {
    return this.#flow.unschedule(name);
  }
  listSchedules(): Promise<ScheduleInfo[]> {
    return this.#flow.listSchedules();
  }

  // ---- the server -----------------------------------------------------------------

  /** Drain mode is this node's (SIGUSR1, `drain on`): the other nodes go on taking puts. */
  drain(): void {
    this.#draining = true;
  }

  undrain(): void {
    this.#draining = false;
    this.#flow.undrained();
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
    this.#vacuum.stop();
    this.#flow.stop();
    this.#closing = (async () => {
      await this.#runner.idle();
      try {
        await this.#lease.retire();
      } catch (e) {
        this.#error(`pg: could not end this node's lease: ${message(e)}`);
      }
      await this.#sql.close();
    })();
    return this.#closing;
  }
}
