// The SQL client the PostgreSQL engine is written against: a few calls that any
// PostgreSQL driver provides. core/pg/ names no driver and no runtime; the binding to
// one (the npm package `postgres`) is adapters/pg_client.ts, so that another client
// (a runtime's built-in SQL client, or the npm package pg) can be put behind the same calls.

/** A result row, column name -> value as the driver decodes it (int8 may come as a string). */
export type Row = Record<string, unknown>;

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
  /** Run `body` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
  transaction<T>(body: (tx: Sql) => Promise<T>): Promise<T>;
  /** Call `onNotify` with the payload of every NOTIFY on `channel` (on a connection of its own). */
  listen(channel: string, onNotify: (payload: string) => void): Promise<void>;
  /** Close every connection (after the statements under way). */
  close(): Promise<void>;
  /** Connections busy now and the pool's size, for the metrics port (when the driver can tell). */
  pool?(): { inUse: number; size: number };
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
