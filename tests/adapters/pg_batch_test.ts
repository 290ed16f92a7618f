// adapters/pg_client.ts's single(): one statement as a transaction of its own, as a turn
// of puts alone runs (core/pg/turn.ts). Its rows come once it committed; a statement
// the database refused rolled back and leaves the connection usable; a statement never
// sent (no database) is DatabaseAway that did not commit, so it is run again; one whose
// connection ended under it may have committed, so it is not.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { freePort } from "../../scripts/machine.ts";
import { pgClient } from "../../adapters/pg_client.ts";
import { DatabaseAway, maybeCommitted, type SqlClient } from "../../core/pg/sql.ts";

describe("pg_client single(): one statement, its own transaction", { skip: skipWithoutPostgres }, () => {
  let sql: SqlClient | undefined;
  let other: SqlClient | undefined;
  let release = () => {};
  const schema = uniqueSchema("single");
  before(async () => {
    const got = await acquirePostgres();
    release = got.release;
    sql = pgClient(got.pg.url);
    other = pgClient(got.pg.url);
    await sql.query(`create schema ${schema}`);
    await sql.query(`create table ${schema}.t (id int8 primary key)`);
  });
  after(async () => {
    await sql?.query(`drop schema if exists ${schema} cascade`);
    await sql?.close();
    await other?.close();
    release();
  });

  it("answers with its rows once it committed: another connection sees them at once", async () => {
    const rows = await sql!.single!(
      `insert into ${schema}.t values ($1::int8), ($2::int8) returning id::float8 as id`,
      [
        1,
        2,
      ],
    );
    assert.deepEqual(rows.map((r) => r.id), [1, 2]);
    const seen = await other!.query(`select count(*)::float8 as n from ${schema}.t where id in (1, 2)`);
    assert.equal(seen[0]!.n, 2);
  });

  it("a statement refused rolls back, is not DatabaseAway, and the connection serves the next", async () => {
    await assert.rejects(
      sql!.single!(`insert into ${schema}.t values ($1::int8), ($1::int8)`, [3]),
      (e: unknown) => !(e instanceof DatabaseAway) && (e as { code?: string }).code === "23505",
    );
    const seen = await other!.query(`select count(*)::float8 as n from ${schema}.t where id = 3`);
    assert.equal(seen[0]!.n, 0, "nothing of it committed");
    for (let i = 0; i < 8; i++) await sql!.single!("select 1 as one", []); // every pooled connection still works
  });

  it("its connection ended under it: DatabaseAway that may have committed (not run again)", async () => {
    await assert.rejects(
      sql!.single!("select pg_terminate_backend(pg_backend_pid())", []),
      (e: unknown) => e instanceof DatabaseAway && maybeCommitted(e),
    );
    // the pool connects again
    assert.deepEqual((await sql!.single!("select 1::float8 as one", [])).map((r) => r.one), [1]);
  });

  it("no database to send it to: DatabaseAway that did not commit (run again while it is away)", async () => {
    const port = await freePort();
    const none = pgClient(`postgres://postgres@127.0.0.1:${port}/postgres?connect_timeout=2`);
    try {
      await assert.rejects(
        none.single!("select 1", []),
        (e: unknown) => e instanceof DatabaseAway && !maybeCommitted(e),
      );
    } finally {
      await none.close();
    }
  });

  it("is not sent once its signal is aborted", async () => {
    const stop = new AbortController();
    stop.abort();
    await assert.rejects(
      sql!.single!(`insert into ${schema}.t values (4)`, [], stop.signal),
      (e: unknown) => e instanceof DatabaseAway && !maybeCommitted(e),
    );
    const seen = await other!.query(`select count(*)::float8 as n from ${schema}.t where id = 4`);
    assert.equal(seen[0]!.n, 0);
  });
});
