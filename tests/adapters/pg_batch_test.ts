// adapters/pg_client.ts's batch(): a pipelined turn's statements as one transaction of
// their own, sent as one message (adapters/pg_batch.ts), as every pipelined turn runs
// (core/pg/pipelined.ts). Each statement's rows come once it all committed; a statement
// the database refused rolls back every other and leaves the connection usable; the
// values reach each statement as its parameters would; statements never sent (no
// database) are DatabaseAway that did not commit, so they are run again; ones whose
// connection ended under them may have committed, so they are not.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { freePort } from "../../scripts/machine.ts";
import { pgClient } from "../../adapters/pg_client.ts";
import { DatabaseAway, maybeCommitted, type SqlClient } from "../../core/pg/sql.ts";

describe("pg_client batch(): statements sent together, their own transaction", { skip: skipWithoutPostgres }, () => {
  let sql: SqlClient | undefined;
  let other: SqlClient | undefined;
  let release = () => {};
  const schema = uniqueSchema("batch");
  before(async () => {
    const got = await acquirePostgres();
    release = got.release;
    sql = pgClient(got.pg.url);
    other = pgClient(got.pg.url);
    await sql.query(`create schema ${schema}`);
    await sql.query(`create table ${schema}.t (id int8 primary key, note text)`);
  });
  after(async () => {
    await sql?.query(`drop schema if exists ${schema} cascade`);
    await sql?.close();
    await other?.close();
    release();
  });
  const count = async (where: string) =>
    (await other!.query(`select count(*)::float8 as n from ${schema}.t where ${where}`))[0]!.n;

  it("answers each statement's rows once all committed, statements without rows among them", async () => {
    const rows = await sql!.batch!([
      { text: `insert into ${schema}.t values ($1::int8)`, params: [1] },
      { text: `insert into ${schema}.t values ($1::int8), ($2::int8) returning id::float8 as id`, params: [2, 3] },
      { text: `update ${schema}.t set note = $1 where id = $2::int8`, params: ["x", 1] },
      { text: `update ${schema}.t set note = $1 where id = $2::int8`, params: ["y", 2] },
      { text: `update ${schema}.t set note = $1 where id = $2::int8 returning id`, params: ["z", 99] },
      { text: `select id::float8 as id, note from ${schema}.t where id <= $1::int8 order by id`, params: [2] },
      { text: `select count(*)::float8 as n from ${schema}.t`, params: [] },
    ]);
    assert.deepEqual(rows.map((r) => r.length), [0, 2, 0, 0, 0, 2, 1]);
    assert.deepEqual(rows[1]!.map((r) => r.id), [2, 3]);
    assert.deepEqual(rows[5]!.map((r) => [r.id, r.note]), [[1, "x"], [2, "y"]]);
    assert.equal(rows[6]![0]!.n, 3);
    assert.equal(await count("id in (1, 2, 3)"), 3, "another connection sees them at once");
    // one statement alone, with rows and without
    assert.deepEqual((await sql!.batch!([{ text: "select 1::float8 as one", params: [] }]))[0]!.map((r) => r.one), [1]);
    assert.deepEqual(await sql!.batch!([{ text: `delete from ${schema}.t where id = $1::int8`, params: [3] }]), [[]]);
  });

  it("values reach the statements as parameters do: quotes, backslashes, bytes, arrays, NULL", async () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const values: [string, unknown][] = [
      ["$1::text", `it's a \\ "quoted" ; $$ 'value' ☃`],
      ["$1::text", ""],
      ["$1::int8", -9007199254740991],
      ["$1::float8", 0.1],
      ["$1::int2", 7],
      ["$1::bool", true],
      ["$1::text", null],
      ["$1::bytea", bytes],
      ["$1::bytea", new Uint8Array(0)],
      ["$1::text[]", ["a", "b c", `q"uote`, "back\\slash", "{brace}", "com,ma", "", "NULL"]],
      ["$1::int8[]", [1, -2, 3]],
      ["$1::text[]", []],
    ];
    const text = (cast: string) => `select ${cast} as v`;
    const viaBatch = await sql!.batch!(values.map(([cast, v]) => ({ text: text(cast), params: [v] })));
    for (const [i, [cast, v]] of values.entries()) {
      const viaQuery = await sql!.query(text(cast), [v]);
      assert.deepEqual(viaBatch[i]![0]!.v, viaQuery[0]!.v, `${cast} of ${String(v)}`);
    }
    assert.deepEqual([...(viaBatch[7]![0]!.v as Uint8Array)], [...bytes]);
    assert.equal(viaBatch[0]![0]!.v, values[0]![1]);
  });

  it("a statement refused rolls every one back, is not DatabaseAway, and the connection serves the next", async () => {
    await assert.rejects(
      sql!.batch!([
        { text: `insert into ${schema}.t values ($1::int8)`, params: [10] },
        { text: `insert into ${schema}.t values ($1::int8), ($1::int8)`, params: [11] },
      ]),
      (e: unknown) => !(e instanceof DatabaseAway) && (e as { code?: string }).code === "23505",
    );
    assert.equal(await count("id in (10, 11)"), 0, "nothing of it committed");
    for (let i = 0; i < 8; i++) await sql!.batch!([{ text: "select 1 as one", params: [] }]);
  });

  it("a connection that closed between turns is not used: the next turn runs on another", async () => {
    const pid = (await sql!.batch!([{ text: "select pg_backend_pid()::float8 as pid", params: [] }]))[0]![0]!.pid;
    await other!.query("select pg_terminate_backend($1::int4)", [pid]);
    await new Promise((r) => setTimeout(r, 100));
    const again = await sql!.batch!([{ text: "select pg_backend_pid()::float8 as pid", params: [] }]);
    assert.notEqual(again[0]![0]!.pid, pid);
  });

  it("its connection ended under one statement: DatabaseAway that may have committed (not run again)", async () => {
    await assert.rejects(
      sql!.batch!([{ text: "select pg_terminate_backend(pg_backend_pid())", params: [] }]),
      (e: unknown) => e instanceof DatabaseAway && maybeCommitted(e),
    );
    assert.deepEqual((await sql!.batch!([{ text: "select 1::float8 as one", params: [] }]))[0]!.map((r) => r.one), [1]);
  });

  it("their connection ended under several statements: DatabaseAway that may have committed (not run again)", async () => {
    await assert.rejects(
      sql!.batch!([
        { text: `insert into ${schema}.t values ($1::int8)`, params: [20] },
        { text: "select pg_terminate_backend(pg_backend_pid())", params: [] },
      ]),
      (e: unknown) => e instanceof DatabaseAway && maybeCommitted(e),
    );
  });

  it("no database to send them to: DatabaseAway that did not commit (run again while it is away)", async () => {
    const port = await freePort();
    const none = pgClient(`postgres://postgres@127.0.0.1:${port}/postgres?connect_timeout=2`);
    try {
      await assert.rejects(
        none.batch!([{ text: "select 1", params: [] }]),
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
      sql!.batch!([{ text: `insert into ${schema}.t values (4)`, params: [] }], stop.signal),
      (e: unknown) => e instanceof DatabaseAway && !maybeCommitted(e),
    );
    assert.equal(await count("id = 4"), 0);
  });
});
