// The SQL client the PostgreSQL engine is written against: a few calls that any
// PostgreSQL driver provides. core/pg/ names no driver and no runtime; the binding to
// one (the npm package `postgres`) is adapters/pg_client.ts, so that another client
// (a runtime's built-in SQL client, or the npm package pg) can be put behind the same calls.

/** A result row, column name -> value as the driver decodes it (int8 may come as a string). */
export type Row = Record<string, unknown>;

/** A statement to run: its text with $1.. parameters (casts in the text say their types), and their values. */
export interface Statement {
  text: string;
  params: readonly unknown[];
}

/** Something statements run on: the pool, or one transaction. */
export interface Sql {
  /**
   * Run one statement with $1.. parameters (casts in the text say their types). Calls
   * made without awaiting the previous one are pipelined on the same connection.
   */
  query(text: string, params?: readonly unknown[]): Promise<Row[]>;
}

/** The database: a pool of connections, transactions, and LISTEN. */
export interface SqlClient extends Sql {
  /**
   * Run `body` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when
   * it throws. Once `signal` is aborted nothing more is sent: a transaction that has not
   * sent its COMMIT yet rolls back and throws.
   */
  transaction<T>(body: (tx: Sql) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /**
   * Run the statements as one transaction of their own, sent together: each one's rows
   * once it committed. Once `signal` is aborted nothing is sent. A failure after they
   * were sent, other than the database's ERROR (which rolled them all back), is
   * DatabaseAway with `maybeCommitted`. (Optional: without it, the engine runs every turn
   * as a transaction.)
   */
  batch?(calls: readonly Statement[], signal?: AbortSignal): Promise<Row[][]>;
  /**
   * Call `onNotify` with the payload of every NOTIFY on `channel`, on a connection of its
   * own that is established again whenever it is lost. Resolves when LISTEN first holds.
   */
  listen(channel: string, onNotify: (payload: string) => void, events?: ListenEvents): Promise<void>;
  /** Close every connection (after the statements under way). */
  close(): Promise<void>;
  /** Connections busy now and the pool's size, for the metrics port (when the driver can tell). */
  pool?(): { inUse: number; size: number };
}

/** What happens to the LISTEN connection after it first held. */
export interface ListenEvents {
  /** It was lost (the database went away, most likely): NOTIFYs are missed from now on. */
  lost?(e: unknown): void;
  /** LISTEN holds again after it was lost (NOTIFYs sent meanwhile were missed). */
  again?(): void;
}

/** The SQLSTATE of a failed statement when the driver reports one (e.g. "40P01" for a deadlock). */
export function sqlState(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Errors after which the same transaction may simply be run again. */
export function retryable(e: unknown): boolean {
  const s = sqlState(e);
  return s === "40P01" || s === "40001";
}

/**
 * The database could not be reached, or the connection was lost (thrown by the binding
 * for its driver's connection errors). `maybeCommitted`: the connection was lost after
 * COMMIT was sent, so the transaction may have committed or not.
 */
export class DatabaseAway extends Error {
  readonly maybeCommitted: boolean;
  constructor(message: string, maybeCommitted = false, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "DatabaseAway";
    this.maybeCommitted = maybeCommitted;
  }
}

/**
 * SQLSTATEs of a database that cannot serve writes now (besides class 08, connection
 * exceptions): a server shutting down, crashed or starting up (57P01-57P03), a read-only
 * standby (25006), too many connections while every client comes back at once (53300).
 */
const AWAY_STATES = new Set(["57P01", "57P02", "57P03", "25006", "53300"]);

/** Errors of a database that is away (down, restarting, unreachable, a standby): wait and run the same turn again. */
export function away(e: unknown): boolean {
  if (e instanceof DatabaseAway) return true;
  const s = sqlState(e);
  return s !== undefined && (s.startsWith("08") || AWAY_STATES.has(s));
}

/** The transaction may have committed (COMMIT sent, its answer lost): it must not be run again, nor acknowledged. */
export function maybeCommitted(e: unknown): boolean {
  return e instanceof DatabaseAway && e.maybeCommitted;
}

/** A read-only standby answered: the binding should drop its connections and find the primary again. */
export function readOnly(e: unknown): boolean {
  return sqlState(e) === "25006";
}
