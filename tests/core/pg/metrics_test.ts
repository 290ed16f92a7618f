// The turns' figures (core/pg/metrics.ts) as the TurnRunner keeps them (core/pg/turn.ts):
// a committed turn's statement and COMMIT times and its commands, a deadlock run again,
// a failure for good, and the lease as last renewed. The database here is a stand-in
// that advances a manual clock as its statements and COMMIT "take" time, so every
// figure is exact; the real database's figures are tests/system/pg_http_test.ts's.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type Turns } from "../../../core/clock.ts";
import { TurnMetrics } from "../../../core/pg/metrics.ts";
import type { Sql, SqlClient } from "../../../core/pg/sql.ts";
import { type Op, type Plan, TurnRunner } from "../../../core/pg/turn.ts";

const turns: Turns = { afterIO: (f) => queueMicrotask(f), afterTurn: (f) => queueMicrotask(f) };

/** A stand-in database: statements take `statementMs`, COMMIT `commitMs`; `failures` are thrown by the next transactions. */
function database(clock: ManualClock, statementMs: number, commitMs: number, failures: unknown[] = []): SqlClient {
  const tx: Sql = {
    query: () => {
      clock.advance(statementMs);
      return Promise.resolve([]);
    },
  };
  return {
    query: tx.query,
    transaction: async <T>(body: (tx: Sql) => Promise<T>) => {
      const result = await body(tx);
      const failure = failures.shift();
      if (failure) throw failure;
      clock.advance(commitMs);
      return result;
    },
    listen: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

/** A plan of `n` ops, each one statement, carrying `commands` commands. */
function plan(n: number, commands: number, settled: string[]): Plan {
  const ops: Op[] = Array.from({ length: n }, (_, i) => ({
    run: async (tx) => {
      await tx.query("select 1");
      return () => i;
    },
    resolve: (v) => settled.push(`ok ${v}`),
    reject: () => settled.push(`failed`),
  }));
  return { ops, commands, end: () => Promise.resolve(() => {}), failed: () => settled.push("plan failed") };
}

async function runOnce(sql: SqlClient, p: Plan, m: TurnMetrics): Promise<void> {
  let given = false;
  const runner = new TurnRunner(sql, turns, () => (given ? undefined : (given = true, p)), 1, undefined, m);
  runner.kick();
  await new Promise((resolve) => queueMicrotask(() => resolve(undefined)));
  await runner.idle();
}

describe("TurnMetrics through the TurnRunner", () => {
  it("times a committed turn's statements and COMMIT and counts its commands", async () => {
    const clock = new ManualClock();
    const m = new TurnMetrics(() => clock.now());
    const settled: string[] = [];
    await runOnce(database(clock, 2, 0.5), plan(3, 40, settled), m);
    assert.deepEqual(settled, ["ok 0", "ok 1", "ok 2"]);
    assert.deepEqual([m.transactions, m.retries, m.errors], [1, 0, 0]);
    assert.deepEqual([m.statements.count, m.statements.sumMs], [1, 6]);
    assert.deepEqual([m.commits.count, m.commits.sumMs], [1, 0.5]);
    assert.deepEqual([m.batchSizes.count, m.batchSizes.sumMs], [1, 40]);
    assert.equal(m.batchSizes.counts[m.batchSizes.boundsMs.indexOf(50)], 1, "40 commands: in the (20, 50] bucket");
  });

  it("counts a deadlock run again as a retry, and a failure for good as an error", async () => {
    const clock = new ManualClock();
    const m = new TurnMetrics(() => clock.now());
    const settled: string[] = [];
    await runOnce(database(clock, 1, 1, [{ code: "40P01" }]), plan(1, 1, settled), m);
    assert.deepEqual(settled, ["ok 0"]);
    assert.deepEqual([m.transactions, m.retries, m.errors], [1, 1, 0]);
    assert.equal(m.statements.count, 2, "both attempts' statements answered");
    await runOnce(database(clock, 1, 1, [new Error("connection lost")]), plan(2, 2, settled), m);
    assert.deepEqual(settled.slice(1), ["failed", "failed", "plan failed"]);
    assert.deepEqual([m.transactions, m.retries, m.errors], [1, 1, 1]);
    assert.deepEqual([m.commits.count, m.batchSizes.count], [1, 1], "only committed turns");
  });

  it("keeps the lease from the latest renewal sent, and shows it lapsing", () => {
    const clock = new ManualClock(1000);
    const m = new TurnMetrics(() => clock.now());
    assert.equal(m.leaseRemainingMs(), -Infinity, "no lease yet");
    m.leaseRenewed(1000, 5000);
    clock.advance(1500);
    assert.equal(m.leaseRemainingMs(), 3500);
    m.leaseRenewed(2400, 5000);
    m.leaseRenewed(2000, 5000); // an older renewal committing later does not shorten it
    assert.equal(m.leaseRemainingMs(), 4900);
    clock.advance(6000);
    assert.equal(m.leaseRemainingMs(), -1100, "lapsed 1.1 s ago");
  });
});
