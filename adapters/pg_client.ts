// core/pg/sql.ts's SqlClient over the npm package `postgres` (postgres.js), which runs
// unchanged on Deno and Bun. The URL may leave out what the usual PG* environment
// variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE) give; TLS as the URL's
// sslmode asks.
import postgres from "postgres";
import { userInfo } from "node:os";
import { DatabaseAway, readOnly, type Row, type Sql, type SqlClient, type Statement } from "../core/pg/sql.ts";
import { driverOptions, passwordFromFile, urlHasPassword } from "./pg_options.ts";
import { loadTlsRoots } from "./tls_roots.ts";
import { TurnConnection } from "./pg_batch.ts";
import { Listener } from "./pg_listener.ts";

/** Connections per node: one for its turn in flight, the others for reads and id blocks beside it. (LISTEN has its own.) */
const POOL = 4;
/** A lost connection is tried again after at most this long (s): postgres.js's default grows to 20 s. */
const MAX_BACKOFF_S = 0.5;
/** A pool is dropped for a read-only standby's answer at most this often (ms). */
const RESET_MS = 1000;

type Driver = postgres.Sql<Record<string, never>>;
type Params = postgres.ParameterOrJSON<never>[];

/**
 * postgres.js's errors of a connection (not of a statement): Node's socket errors
 * (ECONNREFUSED, ECONNRESET, ...) and its own (CONNECTION_CLOSED, CONNECT_TIMEOUT, ...).
 */
function lostConnection(e: unknown): boolean {
  if (e instanceof postgres.PostgresError) return false;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^(E[A-Z]+|CONNECT(ION)?_[A-Z_]+)$/.test(code);
}

/**
 * A driver error as the engine reads it: a lost connection is DatabaseAway; after COMMIT
 * was sent, so is any failure other than the server's ERROR answer (the transaction
 * then certainly rolled back): whether it committed is unknown.
 */
function translate(e: unknown, commitSent: boolean): unknown {
  const msg = e instanceof Error ? e.message : String(e);
  if (lostConnection(e)) return new DatabaseAway(msg, commitSent, e);
  if (commitSent && !(e instanceof postgres.PostgresError && e.severity === "ERROR")) {
    return new DatabaseAway(msg, true, e);
  }
  return e;
}

function runner(sql: Driver | postgres.ReservedSql<Record<string, never>>): Sql {
  return {
    // then() sends the statement now: statements issued one after another without
    // awaiting are pipelined on the connection, in the order issued.
    query: (text, params = []) =>
      sql.unsafe(text, params as Params, { prepare: true }).then(
        (rows) => rows as unknown as Row[],
        (e) => Promise.reject(translate(e, false)),
      ),
  };
}

/**
 * A pool on `url` (undefined: from the PG* variables alone). Connects at the first
 * statement, and again by itself after a connection is lost (to whichever host of a
 * multi-host URL answers, as target_session_attrs asks). Throws on an sslmode or
 * certificate file that cannot be used (adapters/pg_options.ts); `warn` hears of a
 * password file it ignores.
 */
export function pgClient(url: string | undefined, warn: (line: string) => void = console.error): SqlClient {
  const d = driverOptions(url);
  // TLS may be used: the root store now, not at a connect when fds may have run out (tls_roots.ts)
  if (d.ssl !== undefined && d.ssl !== false) loadTlsRoots();
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
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, MAX_BACKOFF_S),
    // int8 as strings (the default): the engine casts what it reads to float8 or Number().
    // Each statement is prepared once per connection and planned once: left to choose,
    // PostgreSQL plans the claims and deletes again at every call (their generic plan,
    // with the LIMIT and arrays unknown, looks costlier than a custom one), which costs
    // more than running them. A generic plan is kept for the connection's life, so it
    // must not rest on the table's size when it was made: made on an empty table, the
    // delete would scan the whole table for good. Without sequential scans every
    // statement uses its index (the counts of stats read as fast through them). The job
    // states are constants in every statement, so the partial indexes stay usable.
    // JIT compiling pays only for long queries, never for a turn's.
    // The turns' literals (pg_batch.ts) are written for standard_conforming_strings.
    connection: {
      plan_cache_mode: "force_generic_plan",
      enable_seqscan: "off",
      jit: "off",
      standard_conforming_strings: "on",
    },
    ...(d.ssl === undefined ? {} : { ssl: d.ssl as boolean | object }),
    ...((d.url && urlHasPassword(d.url)) || process.env.PGPASSWORD ? {} : { pass: fromFile }),
  };
  const open = (more: Record<string, unknown> = {}): Driver => {
    // idle_timeout: null and onnotify are postgres.js's options its types leave out
    const o = { ...options, ...more } as postgres.Options<Record<string, never>>;
    return (d.url ? postgres(d.url, o) : postgres(o)) as unknown as Driver;
  };
  let sql: Driver = open();
  let resetAt = -Infinity;
  const retiring = new Set<Promise<void>>();
  /**
   * A fresh pool, the old one ended once what runs on it is done: after a read-only
   * answer, so that new connections look for the primary; after a lost connection,
   * because postgres.js 3.4.9 keeps a write that was pending when a connection closed
   * (its timer is cleared, not reset) and that connection then never sends its next
   * startup message: it stays unusable until its connect_timeout, again and again.
   */
  const reset = () => {
    if (performance.now() - resetAt < RESET_MS) return;
    resetAt = performance.now();
    const old = sql;
    sql = open();
    for (const k of kept.splice(0)) k.r.end();
    const ending: Promise<void> = old.end({ timeout: 5 }).catch(() => {}).then(() => {
      retiring.delete(ending);
    });
    retiring.add(ending);
  };
  const failed = (e: unknown) => {
    if (readOnly(e) || e instanceof DatabaseAway) reset();
    throw e;
  };
  const listener = new Listener(open);
  /** Connections kept for turns (pg_batch.ts), idle now; those of an older pool are let go. */
  const kept: Kept[] = [];
  let ended = false;
  // For the metrics: connections reserved by transactions, statements in flight on the
  // rest of the pool (the driver spreads them over its free connections).
  const busy = { reserved: 0, statements: 0 };
  return {
    query: (text, params) => {
      busy.statements++;
      return runner(sql).query(text, params).catch(failed).finally(() => busy.statements--);
    },
    transaction: <T>(body: (tx: Sql) => Promise<T>, signal?: AbortSignal) =>
      transaction(sql, body, busy, signal).catch(failed),
    batch: (calls, signal) => batch(() => sql, kept, calls, busy, signal).catch(failed),
    pool: () => ({ inUse: busy.reserved + Math.min(busy.statements, POOL - busy.reserved), size: POOL }),
    listen: (channel, onNotify, events) => listener.listen(channel, onNotify, events),
    close: async () => {
      if (ended) return;
      ended = true;
      for (const k of kept.splice(0)) k.r.end();
      await Promise.all([sql.end({ timeout: 5 }), listener.close(), ...retiring]);
    },
  };
}

/**
 * A transaction's reserved connection: its statements, how they fail, and whether the
 * connection was lost. Once it is, nothing more goes to it, and it is not released:
 * postgres.js would write on its closed socket (release() puts a closed connection back
 * among the open ones), and that write either throws outside any promise (a TypeError
 * that ends the process) or is never sent (the statement hangs): porsager/postgres issues
 * 1199 and 1208, open for 3.4.9. A connection that closes while no statement of ours is
 * on it reports no error: its close is heard through the connection object's onclose,
 * which postgres.js's own begin() uses too (the connection comes to a statement's
 * onexecute). The pool connects it again.
 */
class Reserved {
  readonly tx: postgres.ReservedSql<Record<string, never>>;
  /** Why the connection is lost (undefined while it is not). */
  lost: unknown;
  /** The first statement of the transaction that failed: why COMMIT answers ROLLBACK. */
  first: unknown;
  #conn: { onclose?: ((e: unknown) => void) | null } | undefined;

  constructor(tx: postgres.ReservedSql<Record<string, never>>) {
    this.tx = tx;
  }

  /** A statement's error as the engine reads it; noted as the first failure, or the connection's loss. */
  failed(e: unknown, commitSent: boolean): unknown {
    const t = translate(e, commitSent);
    if (!commitSent) this.first ??= t;
    const fatal = e instanceof postgres.PostgresError && (e.severity === "FATAL" || e.severity === "PANIC");
    if (t instanceof DatabaseAway || fatal) this.lost ??= t;
    return t;
  }

  /** For the first statement's options: hears of the connection's close from then on. */
  readonly onexecute = (c: { onclose?: ((e: unknown) => void) | null }): boolean => {
    this.#conn = c;
    c.onclose = (e) => {
      this.lost ??= new DatabaseAway(e instanceof Error ? e.message : "the connection was closed", false, e);
    };
    return true; // the statement was sent
  };

  send(text: string, params?: readonly unknown[]): Promise<Row[]> {
    if (this.lost !== undefined) return Promise.reject(this.lost);
    const q = params ? this.tx.unsafe(text, params as Params, { prepare: true }) : this.tx.unsafe(text);
    return q.then(
      (rows) => rows as unknown as Row[],
      (e) => {
        throw this.failed(e, false);
      },
    );
  }

  /** The transaction is over: back to the pool, unless the connection was lost. */
  end(): void {
    if (this.#conn) this.#conn.onclose = null;
    if (this.lost === undefined) this.tx.release();
  }
}

/**
 * BEGIN, the body's statements and COMMIT on one reserved connection, BEGIN pipelined
 * with the first statements: sql.begin() waits for BEGIN's answer first, a round trip
 * of four in a turn (BEGIN, the commands, the turn's end, COMMIT) that buys nothing.
 * A failed statement aborts the transaction: ROLLBACK, and the error goes up. Once
 * `signal` is aborted (the engine stopped waiting), COMMIT is not sent: ROLLBACK.
 */
function transaction<T>(
  sql: Driver,
  body: (tx: Sql) => Promise<T>,
  busy: { reserved: number },
  signal?: AbortSignal,
): Promise<T> {
  return reserved(sql, busy, signal, async (r) => {
    const begin = r.tx.unsafe("begin", [], { onexecute: r.onexecute } as postgres.UnsafeQueryOptions).then(
      () => [],
      (e) => Promise.reject(r.failed(e, false)),
    );
    let result: T;
    try {
      result = await body({ query: (text, params = []) => r.send(text, params) });
      await begin;
      if (signal?.aborted) throw new DatabaseAway("gave up waiting for the transaction");
    } catch (e) {
      await begin.catch(() => {});
      await r.send("rollback").catch(() => {});
      throw e;
    }
    if (r.lost !== undefined) throw r.lost;
    let done;
    try {
      done = await r.tx.unsafe("commit");
    } catch (e) {
      throw r.failed(e, true);
    }
    // COMMIT of a transaction that failed answers ROLLBACK: the cause is its first failed
    // statement (answered before COMMIT, so known by now), e.g. a read-only standby's
    // 25006 when the statements were pipelined up to COMMIT without reading their rows
    if (done.command !== "COMMIT") throw r.first ?? new Error(`COMMIT answered ${done.command}`);
    return result;
  });
}

/** A connection kept for turns: the pool it is from, how it is heard of, what is prepared on it. */
interface Kept {
  pool: Driver;
  r: Reserved;
  c: TurnConnection;
}

/**
 * A pipelined turn's statements as one implicit transaction (pg_batch.ts), on a connection
 * kept for turns (one of `kept`, else one reserved now). Once `signal` is aborted it is
 * not sent. A failure after it was sent, other than the database's ERROR (which rolled
 * it all back), is DatabaseAway with `maybeCommitted`.
 */
async function batch(
  pool: () => Driver,
  kept: Kept[],
  calls: readonly Statement[],
  busy: { reserved: number },
  signal: AbortSignal | undefined,
): Promise<Row[][]> {
  const sql = pool();
  let k = kept.pop();
  // one that closed while idle is let go
  while (k !== undefined && k.r.lost !== undefined) {
    k.r.end();
    k = kept.pop();
  }
  if (k === undefined) {
    const r = await reserve(sql);
    k = { pool: sql, r, c: new TurnConnection(r.tx) };
  }
  const { r, c } = k;
  // kept unless lost, or of a pool dropped meanwhile (reset() let the idle ones go)
  const done = () => r.lost === undefined && k.pool === pool() ? kept.push(k) : r.end();
  return busyWith(busy, signal, done, async () => {
    let sent = false;
    try {
      return await c.run(calls, (conn) => (r.onexecute(conn as never), sent = true));
    } catch (e) {
      throw r.failed(e, sent);
    }
  });
}

/** A connection reserved from the pool (a failure to get one as the engine reads it). */
async function reserve(sql: Driver): Promise<Reserved> {
  try {
    return new Reserved(await sql.reserve());
  } catch (e) {
    throw translate(e, false);
  }
}

/** `use` (counted busy meanwhile), unless `signal` was aborted while it waited for a connection; then `done`. */
async function busyWith<T>(
  busy: { reserved: number },
  signal: AbortSignal | undefined,
  done: () => unknown,
  use: () => Promise<T>,
): Promise<T> {
  busy.reserved++;
  try {
    if (signal?.aborted) throw new DatabaseAway("gave up waiting for a connection");
    return await use();
  } finally {
    busy.reserved--;
    done();
  }
}

/**
 * `use` on a connection reserved from the pool (counted busy meanwhile), unless `signal`
 * was aborted while it waited for one; then back to the pool (unless it was lost).
 */
async function reserved<T>(
  sql: Driver,
  busy: { reserved: number },
  signal: AbortSignal | undefined,
  use: (r: Reserved) => Promise<T>,
): Promise<T> {
  const r = await reserve(sql);
  return busyWith(busy, signal, () => r.end(), () => use(r));
}

/**
 * Where a URL points once the PG* variables filled in what it leaves out, as the driver
 * reads them (postgres.js 3.4.9's parseOptions): "host:port/db", "h1:p1,h2:p2/db", the
 * database defaulting to the user's name as in psql. Never the password. For messages:
 * the start line, the exit-69 line, the database going away.
 */
export function pgTarget(url: string | undefined, env: Record<string, string | undefined> = process.env): string {
  let who = "";
  let authority = "";
  let path = "";
  if (url) {
    // new URL() refuses several hosts ("h1:5432,h2:5432"): take the authority apart by hand.
    const m = /^postgres(?:ql)?:\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?/i.exec(url);
    if (!m) return "an unreadable URL";
    who = decodeURIComponent((m[1] ?? "").split(":")[0]!);
    authority = m[2] ?? "";
    path = m[3] ?? "";
  }
  const user = who || env.PGUSERNAME || env.PGUSER || osUser(env);
  const database = path.slice(1) || env.PGDATABASE || user;
  const hosts = (authority || env.PGHOST || "localhost").split(",").map((h) => {
    const v6 = /^\[[^\]]*\]/.exec(h);
    const host = v6 ? v6[0] : h.split(":")[0] || "localhost";
    const port = v6 ? h.slice(v6[0].length).replace(/^:/, "") : h.split(":")[1];
    return `${host}:${port || env.PGPORT || "5432"}`;
  });
  return `${hosts.join(",")}/${database}`;
}

/** The name of the user this process runs as (the driver's default user, and so database). */
function osUser(env: Record<string, string | undefined>): string {
  try {
    return userInfo().username;
  } catch {
    return env.USERNAME || env.USER || env.LOGNAME || "";
  }
}
