// How a pipelined turn (every statement issued before the first await: turn.ts's Plan)
// is sent: its statements are recorded first, then one statement alone goes as a
// transaction of its own (SqlClient.single: no BEGIN and COMMIT to send, parse and
// answer; a turn of puts alone on one node), more go in one transaction, in the order
// recorded. A client without single() runs every turn as a transaction.
import type { Row, Sql, SqlClient } from "./sql.ts";

/** A statement as issued, and where its rows go. */
interface Recorded {
  text: string;
  params: readonly unknown[];
  resolve(rows: Row[]): void;
  reject(e: unknown): void;
}

/** Records the statements issued on it; once `forward` has a transaction, issues them, and any later, on it. */
class Recorder implements Sql {
  readonly calls: Recorded[] = [];
  #tx: Sql | undefined;
  #sealed = false;

  query(text: string, params: readonly unknown[] = []): Promise<Row[]> {
    if (this.#tx) return this.#tx.query(text, params);
    // a pipelined turn issues every statement before its first await: one that came after
    // its single statement was sent would never run (the turn fails, it does not hang)
    if (this.#sealed) return Promise.reject(new Error(`a statement issued after the turn was sent: ${text}`));
    return new Promise((resolve, reject) => this.calls.push({ text, params, resolve, reject }));
  }

  /** The recorded statements were sent as they are: no more may come. */
  seal(): void {
    this.#sealed = true;
  }

  forward(tx: Sql): void {
    this.#tx = tx;
    for (const c of this.calls) tx.query(c.text, c.params).then(c.resolve, c.reject);
  }

  /** The transaction failed before `forward`: so did every statement recorded. */
  fail(e: unknown): void {
    if (!this.#tx) { for (const c of this.calls) c.reject(e); }
  }
}

/** Run `body`'s statements (issued before its first await) as one statement alone or one transaction. */
export function sendPipelined(sql: SqlClient, body: (tx: Sql) => Promise<void>, signal: AbortSignal): Promise<unknown> {
  if (!sql.single) return sql.transaction(body, signal);
  const rec = new Recorder();
  body(rec);
  const [one, ...more] = rec.calls;
  if (one && more.length === 0) {
    rec.seal();
    return sql.single(one.text, one.params, signal).then(one.resolve, (e) => {
      one.reject(e);
      throw e;
    });
  }
  return sql.transaction((tx) => Promise.resolve(rec.forward(tx)), signal).catch((e) => {
    rec.fail(e); // those not forwarded yet
    throw e;
  });
}
