// core/pg/sql.ts's SqlClient over the npm package `postgres` (postgres.js), which runs
// unchanged on Deno and Bun. The URL may leave out what the usual PG* environment
// variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE) give; TLS as the URL's
// sslmode asks.
import postgres from "postgres";
import type { Row, Sql, SqlClient } from "../core/pg/sql.ts";
import { driverOptions, passwordFromFile, urlHasPassword } from "./pg_options.ts";

/** Connections per node: two for its turns in flight, one for reads and id blocks, one spare. (LISTEN has its own.) */
const POOL = 4;

type Driver = postgres.Sql<Record<string, never>>;
type Params = postgres.ParameterOrJSON<never>[];

function runner(sql: Driver | postgres.ReservedSql<Record<string, never>>): Sql {
  return {
    // then() sends the statement now: statements issued one after another without
    // awaiting are pipelined on the connection, in the order issued.
    query: (text, params = []) =>
      sql.unsafe(text, params as Params, { prepare: true }).then((rows) => rows as unknown as Row[]),
  };
}

/**
 * A pool on `url` (undefined: from the PG* variables alone). Connects at the first
 * statement. Throws on an sslmode or certificate file that cannot be used
 * (adapters/pg_options.ts); `warn` hears of a password file it ignores.
 */
export function pgClient(url: string | undefined, warn: (line: string) => void = console.error): SqlClient {
  const d = driverOptions(url);
  // asked at each connect, for the hosts the driver parsed from the URL
  const fromFile = () => {
    const o = sql.options;
    const hosts = o.host.map((host, i) => ({ host, port: o.port[i] ?? 5432 }));
    return passwordFromFile(d.passfile, hosts, o.database, o.user, warn) ?? "";
  };
  const options = {
    max: POOL,
    onnotice: () => {},
    connect_timeout: 10,
    // int8 as strings (the default): the engine casts what it reads to float8 or Number().
    ...(d.ssl === undefined ? {} : { ssl: d.ssl as boolean | object }),
    ...((d.url && urlHasPassword(d.url)) || process.env.PGPASSWORD ? {} : { pass: fromFile }),
  };
  const sql: Driver = d.url ? postgres(d.url, options) : postgres(options);
  // For the metrics: connections reserved by transactions, statements in flight on the
  // rest of the pool (the driver spreads them over its free connections).
  const busy = { reserved: 0, statements: 0 };
  const pool = runner(sql);
  return {
    query: (text, params) => {
      busy.statements++;
      return pool.query(text, params).finally(() => busy.statements--);
    },
    transaction: <T>(body: (tx: Sql) => Promise<T>) => transaction(sql, body, busy),
    pool: () => ({ inUse: busy.reserved + Math.min(busy.statements, POOL - busy.reserved), size: POOL }),
    listen: async (channel, onNotify) => {
      await sql.listen(channel, onNotify);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}

/**
 * BEGIN, the body's statements and COMMIT on one reserved connection, BEGIN pipelined
 * with the first statements: sql.begin() waits for BEGIN's answer first, a round trip
 * of four in a turn (BEGIN, the commands, the turn's end, COMMIT) that buys nothing.
 * A failed statement aborts the transaction: ROLLBACK, and the error goes up.
 */
async function transaction<T>(sql: Driver, body: (tx: Sql) => Promise<T>, busy: { reserved: number }): Promise<T> {
  const tx = await sql.reserve();
  busy.reserved++;
  try {
    const begin = tx.unsafe("begin").execute();
    let result: T;
    try {
      result = await body(runner(tx));
      await begin;
    } catch (e) {
      await begin.catch(() => {});
      await tx.unsafe("rollback").catch(() => {});
      throw e;
    }
    const done = await tx.unsafe("commit");
    // COMMIT of a transaction that failed answers ROLLBACK
    if (done.command !== "COMMIT") throw new Error(`COMMIT answered ${done.command}`);
    return result;
  } finally {
    busy.reserved--;
    tx.release();
  }
}

/** Where a URL points, without its password, for messages: "host:port/db". */
export function pgTarget(url: string | undefined): string {
  if (!url) return "the PG* environment variables";
  try {
    const u = new URL(url);
    return `${u.hostname || "localhost"}:${u.port || "5432"}${u.pathname || ""}`;
  } catch {
    return "an unreadable URL";
  }
}
