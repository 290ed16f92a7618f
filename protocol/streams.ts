// Serve one connection over web streams (what Deno.Conn exposes, and what any
// in-memory pair of streams can provide). Reads go straight into the parser's buffer
// with a BYOB reader when the stream is a byte stream; replies go to the writer.
import type { Service } from "./service.ts";
import type { Connection } from "./connection.ts";

export interface StreamPair {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  /** Close the underlying socket (both directions). Defaults to closing the writer. */
  close?: () => void;
}

/** Serve a connection until it closes. Resolves when it has. */
export async function serveStreams(svc: Service, io: StreamPair): Promise<void> {
  const writer = io.writable.getWriter();
  let shut = false;
  let byob: ReadableStreamBYOBReader | undefined;
  let plain: ReadableStreamDefaultReader<Uint8Array> | undefined;
  try {
    byob = io.readable.getReader({ mode: "byob" });
  } catch {
    plain = io.readable.getReader();
  }
  const conn: Connection = svc.connect({
    write: (piece) => writer.write(piece),
    close: () => {
      if (shut) return;
      shut = true;
      if (io.close) {
        try {
          io.close();
        } catch { /* already closed */ }
      } else writer.close().catch(() => {});
      (byob ?? plain)!.cancel().catch(() => {});
    },
  });
  let resume: (() => void) | undefined;
  conn.onResume = () => {
    const r = resume;
    resume = undefined;
    r?.();
  };
  try {
    for (;;) {
      while (!conn.wantsInput) {
        if (conn.closed) return;
        await Promise.race([new Promise<void>((r) => (resume = r)), conn.done]);
      }
      if (byob) {
        const { value, done } = await byob.read(conn.parser.space());
        if (done || !value) break;
        conn.parser.commit(value);
      } else {
        const { value, done } = await plain!.read();
        if (done || !value) break;
        conn.parser.push(value);
      }
      conn.received();
    }
    conn.eof();
    await conn.done;
  } catch {
    conn.abort();
  }
}
