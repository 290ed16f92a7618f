// How a pipelined turn (every statement issued before the first await: turn.ts's Plan)
// is sent: its statements are recorded first, then sent together as one transaction of
// their own (SqlClient.batch: no BEGIN and COMMIT to send, one message each way), in the
// order recorded. A client without batch() runs every turn as a transaction.
import type { Row, Sql, SqlClient, Statement } from "./sql.ts";

/** A statement as issued, and where its rows go. */
interface Recorded extends Statement {
  resolve(rows: Row[]): void;
  reject(e: unknown): void;
}

/** Records the statements issued on it, until they are sent. */
class Recorder implements Sql {
  readonly calls: Recorded[] = [];
  #sealed = false;

  query(text: string, params: readonly unknown[] = []): Promise<Row[]> {
    // a pipelined turn issues every statement before its first await: one that came after
    // the turn was sent would never run (the turn fails, it does not hang)
    if (this.#sealed) return Promise.reject(new Error(`a statement issued after the turn was sent: ${text}`));
    return new Promise((resolve, reject) => this.calls.push({ text, params, resolve, reject }));
  }

  /** The recorded statements were sent as they are: no more may come. */
  seal(): void {
    this.#sealed = true;
  }
}

/** Run `body`'s statements (issued before its first await) as one batch, or one transaction. */
export function sendPipelined(sql: SqlClient, body: (tx: Sql) => Promise<void>, signal: AbortSignal): Promise<unknown> {
  if (!sql.batch) return sql.transaction(body, signal);
  const rec = new Recorder();
  body(rec);
  rec.seal();
  const calls = rec.calls;
  return sql.batch(calls, signal).then((rows) => {
    for (let i = 0; i < calls.length; i++) calls[i]!.resolve(rows[i]!);
  }, (e) => {
    for (const c of calls) c.reject(e);
    throw e;
  });
}
