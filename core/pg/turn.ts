// The group commit of the PostgreSQL engine: every command that arrives in one turn of
// the event loop, from every connection, runs in ONE transaction, its statements
// pipelined (issued without waiting for each other), and each command's answer is
// given only after COMMIT: "acknowledged means committed". Up to SLOTS transactions
// are in flight at once (each on its own connection, PostgreSQL flushing their commits
// together); while every slot is busy, the next commands gather and go as soon as one
// ends. A connection has at most one command in flight, so commands in different
// transactions are from different connections: any order of them is one a single
// server could have seen. A deadlock or serialization failure runs the whole turn
// again (nothing was answered yet).
import type { Turns } from "../clock.ts";
import { retryable, type Sql, type SqlClient } from "./sql.ts";

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
  /**
   * Every op issues all its statements before its first await (one statement, or several
   * at once): the end and COMMIT may then go right behind them, before their rows come (one
   * round trip). Otherwise the end waits for the ops' rows: an op that issues a statement
   * after reading another's rows must not have it come after COMMIT.
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

/** Runs transactions, up to `slots` at once, each with the plan of what gathered meanwhile. */
export class TurnRunner {
  readonly #sql: SqlClient;
  readonly #turns: Turns;
  readonly #plan: (slot: number) => Plan | undefined;
  /** Slots not in use; a plan is made for one of them. */
  readonly #free: number[] = [];
  #inFlight = 0;
  #scheduled = false;
  #idle: (() => void)[] = [];

  constructor(sql: SqlClient, turns: Turns, plan: (slot: number) => Plan | undefined, slots = 1) {
    this.#sql = sql;
    this.#turns = turns;
    this.#plan = plan;
    for (let s = slots - 1; s >= 0; s--) this.#free.push(s);
  }

  /** A transaction is under way. */
  get running(): boolean {
    return this.#inFlight > 0;
  }

  /** There is work: plan a transaction at the end of this turn (or when a slot comes free). */
  kick(): void {
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
    if (!plan) {
      this.#free.push(slot);
      if (this.#inFlight === 0) { for (const f of this.#idle.splice(0)) f(); }
      return;
    }
    this.#inFlight++;
    this.#run(plan).finally(() => {
      this.#inFlight--;
      this.#free.push(slot);
      this.kick();
      if (this.#inFlight === 0 && !this.#scheduled) { for (const f of this.#idle.splice(0)) f(); }
    });
  }

  async #run(plan: Plan): Promise<void> {
    for (let attempt = 1;; attempt++) {
      let running: Promise<(() => unknown)[]> | undefined;
      let ending: Promise<() => void> | undefined;
      try {
        // One round trip when the plan is pipelined: the commands' statements, the end's
        // behind them (they see what the commands did; they know of it only what the ops
        // said before their rows came), and COMMIT, all pipelined; the rows are read
        // after COMMIT. Otherwise two: the commands' rows, then the end and COMMIT.
        await this.#sql.transaction(async (tx) => {
          const turn = new TurnState();
          running = all(plan.ops.map((op) => op.run(tx, turn)));
          running.catch(() => {}); // observed below
          if (!plan.pipelined) await running;
          ending = plan.end(tx, turn);
          ending.catch(() => {});
        });
      } catch (caught) {
        // a failed statement makes COMMIT answer ROLLBACK (and the statements after it
        // fail as "aborted"): the first failed statement is the cause
        let e: unknown = undefined;
        if (running) await running.catch((why) => (e = why));
        if (e === undefined && ending) await ending.catch((why) => (e = why));
        e ??= caught;
        if (retryable(e) && attempt < MAX_ATTEMPTS) continue;
        return this.#fail(plan, e);
      }
      // Committed (so never run again): the rows, then the answers in the order the
      // commands came, then the turn's own end.
      let thens: (() => unknown)[];
      let end: () => void;
      try {
        thens = await running!;
        end = await ending!;
      } catch (e) {
        return this.#fail(plan, e);
      }
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
      return;
    }
  }

  #fail(plan: Plan, e: unknown): void {
    for (const op of plan.ops) op.reject(e);
    plan.failed(e);
  }
}
