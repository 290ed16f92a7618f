// The group commit of the PostgreSQL engine: every command that arrives in one turn of
// the event loop, from every connection, runs in ONE transaction, its statements
// pipelined (issued without waiting for each other), and each command's answer is
// given only after COMMIT: "acknowledged means committed". Up to SLOTS transactions
// are in flight at once (each on its own connection, PostgreSQL flushing their commits
// together); while every slot is busy, the next commands gather and go as soon as one
// ends. A connection has at most one command in flight, so commands in different
// transactions are from different connections: any order of them is one a single
// server could have seen. A deadlock or serialization failure runs the whole turn
// again (nothing was answered yet). So does a database that is away (down, restarting,
// failing over, a read-only standby): the same turn is run again until `waitMs` after
// its first command came, then its commands are answered with the error (INTERNAL_ERROR).
// A turn whose COMMIT was sent but not answered (or, sent as one message, whose message
// was) may have committed: it is neither run again (a delete or a kick would not do the
// same twice) nor acknowledged.
import type { Clock, Turns } from "../clock.ts";
import type { TurnMetrics } from "./metrics.ts";
import { away, DatabaseAway, maybeCommitted, retryable, type Sql, type SqlClient } from "./sql.ts";
import { sendPipelined } from "./pipelined.ts";

/** What the statements of a turn found out, for its end (notify, claims) and after commit. */
export class TurnState {
  /** Tubes where jobs became ready (put, release, kick, a delay or TTR ending, ...). */
  readonly readied = new Set<string>();
  /** Tubes that got jobs (puts). */
  readonly filled = new Set<string>();
  /** Tubes left without jobs. */
  readonly emptied = new Set<string>();
  /** Something will fall due later (a delayed job, a pause): other nodes' timers may need to know. */
  due = false;
}

/** One command's part of a turn: statements on tx; after COMMIT, `then()` gives its answer. */
export interface Op<T = unknown> {
  run(tx: Sql, turn: TurnState): Promise<() => T>;
  resolve(value: T): void;
  reject(e: unknown): void;
}

/** A turn's work: its commands, then what runs after them in the same transaction. */
export interface Plan {
  ops: Op[];
  /**
   * Behind every op's statements, issued before their rows come (so it sees in `turn`
   * only what the ops set before their first await): more statements (notify, claims);
   * what to do after COMMIT, when `turn` holds all the ops found.
   */
  end(tx: Sql, turn: TurnState): Promise<() => void>;
  /** The transaction failed for good (every op is rejected already). */
  failed(e: unknown): void;
  /** Commands the plan carries, for the metrics (default: its ops). */
  commands?: number;
  /**
   * Every op issues all its statements before its first await (one statement, or several
   * at once): the end and COMMIT may then go right behind them, before their rows come (one
   * round trip). Otherwise the end waits for the ops' rows (an op may issue a statement
   * after reading another's rows, which must not come after COMMIT).
   */
  pipelined?: boolean;
}

/** Wait for every promise, then throw the first failure (so none is left unobserved). */
export async function all<T>(ps: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(ps);
  const bad = settled.find((s) => s.status === "rejected");
  if (bad) throw (bad as PromiseRejectedResult).reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

const MAX_ATTEMPTS = 8;
/** Between two attempts of a turn while the database is away (ms). */
const AWAY_PAUSE_MS = 100;

/** Told when the database goes away (each failure) and when a transaction commits again. */
export interface Health {
  /** False from the first sign that the database is away until a transaction commits again. */
  readonly available: boolean;
  /** When it last went away, and last came back (monotonic ms; -Infinity: never). */
  readonly wentAwayAt: number;
  readonly backAt: number;
  /** An attempt begun at `startedAt` (monotonic ms) failed because the database is away. */
  away(e: unknown, startedAt: number): void;
  back(): void;
}

/** How long a turn waits for a database that is away, and who hears about it. */
export interface Waiting {
  clock: Clock;
  /** A command waits this long after it came (--pg-wait), then answers INTERNAL_ERROR. */
  waitMs: number;
  health: Health;
}

/** How often an attempt under way looks whether to give up. */
const RECHECK_MS = 100;
/** A turn past its bound is given up even while the database seems there, this much later (ms). */
const HANG_MS = 10_000;
/**
 * An attempt begun before the database went away and still under way this long after it
 * came back is stuck on a connection that died under it: given up (ms).
 */
const STUCK_MS = 1000;

/** Should an attempt begun at `started`, bounded at `due`, be given up `now`? */
function stuck(w: Waiting, started: number, due: number, now: number, hangMs: number): boolean {
  const h = w.health;
  if (now >= due && (!h.available || now - due >= hangMs)) return true;
  return h.available && h.wentAwayAt > started && now - h.backAt >= STUCK_MS;
}

/**
 * p, or a rejection once `giveUp(now)` says so (asked every RECHECK_MS): a slow statement
 * of a database that is there is not cut off. p is then left to end on its own, observed.
 */
function bounded<T>(clock: Clock, p: Promise<T>, giveUp: (now: number) => boolean, why: () => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let t: unknown;
    const check = () => {
      if (giveUp(clock.now())) reject(why());
      else t = clock.setTimer(check, RECHECK_MS);
    };
    t = clock.setTimer(check, RECHECK_MS);
    p.then(
      (v) => {
        clock.clearTimer(t);
        resolve(v);
      },
      (e) => {
        clock.clearTimer(t);
        reject(e);
      },
    );
  });
}

/**
 * An error of a database that is away, marked as logged: the engine said once that the
 * database went away (Health.away), so the commands it fails are not logged one by one.
 */
function logged(e: unknown): unknown {
  if (typeof e === "object" && e !== null) (e as { logged?: boolean }).logged = true;
  return e;
}

function pause(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, ms));
}

/** `sent`: the attempt given up may have sent its COMMIT (so it is not run again). */
function gaveUp(waitMs: number, last: unknown, sent = false): DatabaseAway {
  const why = last instanceof Error ? `: ${last.message}` : "";
  return new DatabaseAway(`the database did not answer within --pg-wait (${waitMs} ms)${why}`, sent);
}

/**
 * Run `run` (which only reads: running it twice does no harm) again while the database
 * is away, until `waitMs` after `since`.
 */
export async function untilBack<T>(w: Waiting, run: () => Promise<T>, since = w.clock.now()): Promise<T> {
  const deadline = since + w.waitMs;
  let last: unknown;
  for (;;) {
    const started = w.clock.now();
    try {
      // a read that takes long (stats counting a large table) is cut only while the database is away
      const v = await bounded(
        w.clock,
        run(),
        (now) => stuck(w, started, deadline, now, Infinity),
        () => gaveUp(w.waitMs, last),
      );
      w.health.back();
      return v;
    } catch (e) {
      if (!away(e)) throw e;
      w.health.away(e, started);
      last = e;
      if (deadline - w.clock.now() <= AWAY_PAUSE_MS) {
        const given = e instanceof DatabaseAway ? e : gaveUp(w.waitMs, e);
        throw w.health.available ? given : logged(given);
      }
      await pause(w.clock, AWAY_PAUSE_MS);
    }
  }
}

/** One attempt of a turn's transaction: what its ops and its end will answer (once it ran), for after COMMIT. */
interface Attempt {
  running: Promise<(() => unknown)[]> | undefined;
  ending: Promise<() => void> | undefined;
  /** When every statement had answered (TurnMetrics.answered), for the COMMIT's time. */
  answered: number;
}

/** Runs transactions, up to `slots` at once, each with the plan of what gathered meanwhile. */
export class TurnRunner {
  readonly #sql: SqlClient;
  readonly #turns: Turns;
  /** The plan for a slot; undefined: nothing to do; "wait": work that waits for a turn in flight to end. */
  readonly #plan: (slot: number) => Plan | "wait" | undefined;
  /** Slots not in use; a plan is made for one of them. */
  readonly #free: number[] = [];
  #inFlight = 0;
  #scheduled = false;
  #idle: (() => void)[] = [];
  readonly #metrics: TurnMetrics | undefined;
  readonly #waiting: Waiting | undefined;
  /** When the first command not yet in a turn came (its wait for the database counts from then). */
  #since: number | undefined;

  constructor(
    sql: SqlClient,
    turns: Turns,
    plan: (slot: number) => Plan | "wait" | undefined,
    slots = 1,
    waiting?: Waiting,
    metrics?: TurnMetrics,
  ) {
    this.#metrics = metrics;
    this.#sql = sql;
    this.#turns = turns;
    this.#plan = plan;
    this.#waiting = waiting;
    for (let s = slots - 1; s >= 0; s--) this.#free.push(s);
  }

  /** A transaction is under way. */
  get running(): boolean {
    return this.#inFlight > 0;
  }

  /** There is work: plan a transaction at the end of this turn (or when a slot comes free). */
  kick(): void {
    this.#since ??= this.#waiting?.clock.now();
    if (this.#scheduled || this.#free.length === 0) return;
    this.#scheduled = true;
    this.#turns.afterTurn(() => {
      this.#scheduled = false;
      this.#go();
    });
  }

  /** Settles when no transaction is under way and none is planned. */
  idle(): Promise<void> {
    if (this.#inFlight === 0 && !this.#scheduled) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #go(): void {
    const slot = this.#free.pop();
    if (slot === undefined) return;
    const plan = this.#plan(slot);
    const since = this.#since;
    // commands held back until a turn in flight ends wait for the database from when they came
    this.#since = plan === "wait" ? since : undefined;
    if (plan === undefined || plan === "wait") {
      this.#free.push(slot);
      if (this.#inFlight === 0) { for (const f of this.#idle.splice(0)) f(); }
      return;
    }
    this.#inFlight++;
    this.#run(plan, since).finally(() => {
      this.#inFlight--;
      this.#free.push(slot);
      this.kick();
      if (this.#inFlight === 0 && !this.#scheduled) { for (const f of this.#idle.splice(0)) f(); }
    });
  }

  /**
   * Run the plan's transaction until it commits (then answer its commands), or fails for
   * good (then fail them): again after a deadlock, and while the database is away until
   * `waitMs` after its first command came.
   */
  async #run(plan: Plan, since: number | undefined): Promise<void> {
    const w = this.#waiting;
    const m = this.#metrics;
    const deadline = w ? (since ?? w.clock.now()) + w.waitMs : Infinity;
    let last: unknown;
    for (let attempt = 1;; attempt++) {
      const started = w?.clock.now() ?? 0;
      let done: Attempt;
      try {
        done = await this.#attempt(plan, started, deadline, last);
      } catch (e) {
        if (retryable(e) && attempt < MAX_ATTEMPTS) {
          m?.failed(true);
          continue;
        }
        if (w && away(e)) {
          w.health.away(e, started);
          last = e;
          if (!maybeCommitted(e) && deadline - w.clock.now() > AWAY_PAUSE_MS) {
            m?.failed(true);
            await pause(w.clock, AWAY_PAUSE_MS);
            attempt = 0;
            continue;
          }
        }
        m?.failed(false);
        // the outage was logged (unless it already passed): not every command it failed
        return this.#fail(plan, w && away(e) && !w.health.available ? logged(e) : e);
      }
      return this.#committed(plan, done);
    }
  }

  /**
   * One attempt of the plan's transaction, begun at `started`. Throws the cause when it
   * did not commit: a failed statement makes COMMIT answer ROLLBACK (and the statements
   * after it fail as "aborted"), so the first failed statement is the cause (its answer
   * came before COMMIT's; a statement never answered is not waited for); or, when it may
   * have committed, the failure that says so.
   */
  async #attempt(plan: Plan, started: number, deadline: number, last: unknown): Promise<Attempt> {
    const w = this.#waiting;
    const m = this.#metrics;
    const done: Attempt = { running: undefined, ending: undefined, answered: 0 };
    /** The first statement that failed (of the commands', else of the end's), once it has. */
    let runFailed: unknown, endFailed: unknown;
    try {
      const stop = new AbortController();
      // One round trip when the plan is pipelined: the commands' statements and the
      // end's behind them (they see what the commands did; they know of it only what the
      // ops said before their rows came), sent together (pipelined.ts); the rows are
      // read once it all committed. Otherwise two: the commands' rows, then the end and
      // COMMIT.
      const body = (tx: Sql) => {
        const start = m?.begin() ?? 0, turn = new TurnState();
        const running = done.running = all(plan.ops.map((op) => op.run(tx, turn)));
        running.catch((why) => (runFailed ??= why));
        const end = () => {
          const ending = done.ending = plan.end(tx, turn);
          ending.then(() => (done.answered = m?.answered(start) ?? 0), (why) => (endFailed ??= why));
        };
        return plan.pipelined ? Promise.resolve(end()) : running.then(end);
      };
      const tx = plan.pipelined
        ? sendPipelined(this.#sql, body, stop.signal)
        : this.#sql.transaction(body, stop.signal);
      // A transaction may hang (no host reachable, or only standbys while one is
      // promoted), or be stuck on a connection that died under it: past the bound,
      // once the database is known to be away (or long after, if nothing told), or
      // once the database is back while it is not, it is told to send nothing more,
      // and answered.
      await (w
        ? bounded(
          w.clock,
          tx,
          (now) => stuck(w, started, deadline, now, HANG_MS),
          () => {
            stop.abort();
            tx.catch(() => {});
            return gaveUp(w.waitMs, last, true);
          },
        )
        : tx);
    } catch (caught) {
      // A statement the database refused aborted the transaction: that is the cause. One
      // cut by a lost connection says nothing once COMMIT was sent (the end's statements
      // are not waited for before it): the transaction may have committed.
      const refused = (e: unknown) => e !== undefined && !(e instanceof DatabaseAway);
      if (maybeCommitted(caught) && !refused(runFailed) && !refused(endFailed)) throw caught;
      throw runFailed ?? endFailed ?? caught;
    }
    return done;
  }

  /**
   * Committed (so never run again): the rows, then the answers in the order the commands
   * came, then the turn's own end.
   */
  async #committed(plan: Plan, done: Attempt): Promise<void> {
    let thens: (() => unknown)[];
    let end: () => void;
    try {
      thens = await done.running!;
      end = await done.ending!;
    } catch (e) {
      return this.#fail(plan, e);
    }
    this.#metrics?.committed(done.answered, plan.commands ?? plan.ops.length);
    this.#waiting?.health.back();
    for (let i = 0; i < thens.length; i++) {
      const op = plan.ops[i]!;
      let value: unknown;
      try {
        value = thens[i]!();
      } catch (e) {
        op.reject(e);
        continue;
      }
      op.resolve(value);
    }
    end();
  }

  #fail(plan: Plan, e: unknown): void {
    for (const op of plan.ops) op.reject(e);
    plan.failed(e);
  }
}
