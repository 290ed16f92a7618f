// How the TurnRunner (core/pg/turn.ts, core/pg/pipelined.ts) sends a turn: a pipelined turn
// as statements sent together, a transaction of their own (SqlClient.batch), in the
// order issued; any other in BEGIN ... COMMIT; and what it does when the batch fails: run
// it again when it was not sent or rolled back (a deadlock), answer the error when it
// may have committed. The database is a stand-in that logs what it is sent.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { systemClock, type Turns } from "../../../core/clock.ts";
import { DatabaseAway, type Row, type Sql, type SqlClient } from "../../../core/pg/sql.ts";
import { type Health, type Op, type Plan, TurnRunner } from "../../../core/pg/turn.ts";

const turns: Turns = { afterIO: (f) => queueMicrotask(f), afterTurn: (f) => queueMicrotask(f) };

/** A stand-in database: logs what it is sent; `batchFailures` are thrown by the next batches. */
function database(log: string[], batchFailures: unknown[] = [], batches = true): SqlClient {
  const rows = (text: string): Row[] => [{ text }];
  const tx: Sql = {
    query: (text) => {
      log.push(text);
      return Promise.resolve(rows(text));
    },
  };
  return {
    query: tx.query,
    transaction: async <T>(body: (tx: Sql) => Promise<T>) => {
      log.push("begin");
      const result = await body(tx);
      await new Promise((r) => setTimeout(r, 1)); // statements answered before COMMIT
      log.push("commit");
      return result;
    },
    ...(batches
      ? {
        batch: (calls: readonly { text: string }[]) => {
          const failure = batchFailures.shift();
          const texts = calls.map((c) => c.text).join(";");
          log.push(failure ? `batch ${texts} (failed)` : `batch ${texts}`);
          return failure ? Promise.reject(failure) : Promise.resolve(calls.map((c) => rows(c.text)));
        },
      }
      : {}),
    listen: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

/** An op issuing `texts` one after another; `awaiting`: each after the last one's rows (not pipelined). */
function op(texts: string[], settled: string[], awaiting = false): Op {
  return {
    run: async (tx) => {
      const got: string[] = [];
      if (awaiting) { for (const t of texts) got.push(...(await tx.query(t)).map((r) => r.text as string)); }
      else {
        const all = await Promise.all(texts.map((t) => tx.query(t)));
        for (const rows of all) got.push(...rows.map((r) => r.text as string));
      }
      return () => got.join(",");
    },
    resolve: (v) => settled.push(`ok ${v}`),
    reject: (e) => settled.push(`failed: ${e instanceof Error ? e.message : String(e)}`),
  };
}

/** A plan of `ops`; its end issues `endTexts` behind them. */
function plan(ops: Op[], settled: string[], endTexts: string[] = [], pipelined = true): Plan {
  return {
    ops,
    pipelined,
    end: async (tx) => {
      await Promise.all(endTexts.map((t) => tx.query(t)));
      return () => settled.push("end");
    },
    failed: () => settled.push("plan failed"),
  };
}

class Available implements Health {
  available = true;
  wentAwayAt = -Infinity;
  backAt = -Infinity;
  away(): void {
    this.available = false;
    this.wentAwayAt = systemClock.now();
  }
  back(): void {
    this.available = true;
    this.backAt = systemClock.now();
  }
}

async function runOnce(sql: SqlClient, p: Plan, waitMs?: number): Promise<void> {
  let given = false;
  const waiting = waitMs === undefined ? undefined : { clock: systemClock, waitMs, health: new Available() };
  const runner = new TurnRunner(sql, turns, () => (given ? undefined : (given = true, p)), 1, waiting);
  runner.kick();
  await new Promise((resolve) => queueMicrotask(() => resolve(undefined)));
  await runner.idle();
}

describe("TurnRunner: how a turn is sent", () => {
  it("a pipelined turn is its statements sent together, no BEGIN, no COMMIT, in the order issued", async () => {
    const log: string[] = [], settled: string[] = [];
    await runOnce(database(log), plan([op(["put"], settled)], settled));
    assert.deepEqual(log, ["batch put"]);
    assert.deepEqual(settled, ["ok put", "end"]);
    log.length = settled.length = 0;
    await runOnce(database(log), plan([op(["sweep"], settled), op(["put", "delete"], settled)], settled, ["claims"]));
    assert.deepEqual(log, ["batch sweep;put;delete;claims"]);
    assert.deepEqual(settled, ["ok sweep", "ok put,delete", "end"]);
  });

  it("a turn that is not pipelined is one transaction, its later statements in it too", async () => {
    const log: string[] = [], settled: string[] = [];
    await runOnce(database(log), plan([op(["release", "read"], settled, true)], settled, [], false));
    assert.deepEqual(log, ["begin", "release", "read", "commit"]);
    assert.deepEqual(settled, ["ok release,read", "end"]);
  });

  it("without batches in the client, every turn is a transaction", async () => {
    const log: string[] = [], settled: string[] = [];
    await runOnce(database(log, [], false), plan([op(["put"], settled)], settled));
    assert.deepEqual(log, ["begin", "put", "commit"]);
    log.length = 0;
    await runOnce(database(log, [], false), plan([op(["sweep"], settled), op(["put"], settled)], settled, ["claims"]));
    assert.deepEqual(log, ["begin", "sweep", "put", "claims", "commit"]);
  });

  it("runs a batch again when it was not sent, or rolled back (a deadlock)", async () => {
    const log: string[] = [], settled: string[] = [];
    const notSent = new DatabaseAway("connection refused", false);
    await runOnce(database(log, [notSent, { code: "40P01" }]), plan([op(["put"], settled)], settled), 5000);
    assert.deepEqual(log, ["batch put (failed)", "batch put (failed)", "batch put"]);
    assert.deepEqual(settled, ["ok put", "end"], "answered once, after it committed");
  });

  it("a transaction whose connection was lost after COMMIT was sent is not run again, though its end's statements were cut", async () => {
    // The end's statements are not waited for before COMMIT (turn.ts): when the connection
    // is lost with them and COMMIT unanswered, each is cut, and COMMIT may still have run.
    const log: string[] = [], settled: string[] = [];
    const cut = new DatabaseAway("connection lost under a statement", false);
    const lost = new DatabaseAway("connection lost after COMMIT was sent", true);
    const tx: Sql = {
      query: (text) => {
        log.push(text);
        return text === "notify" ? Promise.reject(cut) : Promise.resolve([{ text }]);
      },
    };
    const sql: SqlClient = {
      query: tx.query,
      transaction: async <T>(body: (tx: Sql) => Promise<T>) => {
        log.push("begin");
        await body(tx);
        log.push("commit (lost)");
        throw lost;
      },
      listen: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    await runOnce(sql, plan([op(["release"], settled, true)], settled, ["notify"], false), 5000);
    assert.deepEqual(log, ["begin", "release", "notify", "commit (lost)"], "sent once");
    assert.deepEqual(settled, ["failed: connection lost after COMMIT was sent", "plan failed"]);
  });

  it("answers the error, and does not run it again, when a batch may have committed", async () => {
    const log: string[] = [], settled: string[] = [];
    const lost = new DatabaseAway("connection lost after the statement was sent", true);
    await runOnce(database(log, [lost]), plan([op(["put"], settled)], settled), 5000);
    assert.deepEqual(log, ["batch put (failed)"]);
    assert.deepEqual(settled, ["failed: connection lost after the statement was sent", "plan failed"]);
  });
});
