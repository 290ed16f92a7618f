// The group commit of the PostgreSQL engine: every command that arrives in one turn of
// the event loop, from every connection, runs in ONE transaction, its statements
// pipelined (issued without waiting for each other), and each command's answer is
// given only after COMMIT: "acknowledged means committed". While a transaction is
// under way, the next turn's commands gather; they go as soon as it ends. A deadlock
// or serialization failure runs the whole turn again (nothing was answered yet).
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
  /** After every op's statements: more statements (notify, claims); what to do after COMMIT. */
  end(tx: Sql, turn: TurnState): Promise<() => void>;
  /** The transaction failed for good (every op is rejected already). */
  failed(e: unknown): void;
}

/** Wait for every promise, then throw the first failure (so none is left unobserved). */
export async function all<T>(ps: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(ps);
  const bad = settled.find((s) => s.status === "rejected");
  if (bad) throw (bad as PromiseRejectedResult).reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

const MAX_ATTEMPTS = 5;

/** Runs one transaction at a time, each with the plan of what gathered meanwhile. */
export class TurnRunner {
  readonly #sql: SqlClient;
  readonly #turns: Turns;
  readonly #plan: () => Plan | undefined;
  #running = false;
  #scheduled = false;
  #idle: (() => void)[] = [];

  constructor(sql: SqlClient, turns: Turns, plan: () => Plan | undefined) {
    this.#sql = sql;
    this.#turns = turns;
    this.#plan = plan;
  }

  /** A transaction is under way. */
  get running(): boolean {
    return this.#running;
  }

  /** There is work: run a transaction at the end of this turn (or when the one under way ends). */
  kick(): void {
    if (this.#running || this.#scheduled) return;
    this.#scheduled = true;
    this.#turns.afterTurn(() => {
      this.#scheduled = false;
      this.#go();
    });
  }

  /** Settles when no transaction is under way and none is planned. */
  idle(): Promise<void> {
    if (!this.#running && !this.#scheduled) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #go(): void {
    const plan = this.#plan();
    if (!plan) {
      for (const f of this.#idle.splice(0)) f();
      return;
    }
    this.#running = true;
    this.#run(plan).finally(() => {
      this.#running = false;
      this.kick();
    });
  }

  async #run(plan: Plan): Promise<void> {
    for (let attempt = 1;; attempt++) {
      try {
        const { thens, end } = await this.#sql.transaction(async (tx) => {
          const turn = new TurnState();
          const thens = await all(plan.ops.map((op) => op.run(tx, turn)));
          return { thens, end: await plan.end(tx, turn) };
        });
        // Committed: answer in the order the commands came, then the turn's own end.
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
      } catch (e) {
        if (retryable(e) && attempt < MAX_ATTEMPTS) continue;
        for (const op of plan.ops) op.reject(e);
        plan.failed(e);
        return;
      }
    }
  }
}
