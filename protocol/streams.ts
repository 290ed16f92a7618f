// Serve one connection over web streams (what a Deno connection exposes, and what any
// in-memory pair of streams can provide). A byte stream is read with a BYOB reader
// into one reused scratch buffer (no allocation per read); replies go to the writer.
//
// The scratch buffer is the loop's own, not the parser's: a pending BYOB read detaches
// the buffer it was given, and the connection may have to process commands it already
// holds while a read is pending (a reserve answered by another client's put).
import type { Service } from "./service.ts";
import type { Connection } from "./connection.ts";

/** First read size per connection (small: idle connections should cost little). */
const MIN_READ = 1024;
const MAX_READ = 64 * 1024;

/** One connection as web streams: bytes from the client, and where replies go. */
export interface StreamPair {
  /** Bytes from the client; the connection ends when this ends. */
  readable: ReadableStream<Uint8Array>;
  /** Where replies are written. */
  writable: WritableStream<Uint8Array>;
  /** Close the underlying socket (both directions). Defaults to closing the writer. */
  close?: () => void;
  /** Who the client is, when known (a TLS client certificate), for the -V accept line. */
  peer?: string;
  /** Where the client is, when known (host:port), for stats-conn and list-connections. */
  addr?: string;
}

/**
 * Serve one connection until it closes; resolves when it has. A byte stream is read
 * with a BYOB reader into a reused buffer; a default stream works too.
 *
 * @example
 * ```ts
 * import { memoryEngine, serveStreams, Service } from "../mod.ts";
 *
 * const svc = new Service(memoryEngine());
 * const chunks: Uint8Array[] = [];
 * await serveStreams(svc, {
 *   readable: new Blob(["use jobs\r\n"]).stream(),
 *   writable: new WritableStream({ write: (c) => void chunks.push(c) }),
 * });
 * console.log(new TextDecoder().decode(chunks[0])); // "USING jobs\r\n"
 * svc.close();
 * ```
 */
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
  const conn: Connection = svc.connect(
    {
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
    },
    io.peer,
    io.addr,
  );
  let scratch = new Uint8Array(MIN_READ);
  let resume: (() => void) | undefined;
  conn.onResume = () => {
    const r = resume;
    resume = undefined;
    r?.();
  };
  let full = false;
  try {
    for (;;) {
      while (!conn.wantsInput) {
        if (conn.closed) return;
        await new Promise<void>((r) => (resume = r)); // onResume: input wanted again, or closed
      }
      if (byob) {
        const { value, done } = await byob.read(scratch);
        if (done || !value) break;
        conn.push(value);
        full = value.length === value.buffer.byteLength && value.length >= MAX_READ;
        // The read transferred scratch's memory into value; take it back, and offer
        // more next time if this read filled it (up to MAX_READ).
        scratch = value.length === value.buffer.byteLength && value.length < MAX_READ
          ? new Uint8Array(value.length * 2)
          : new Uint8Array(value.buffer);
      } else {
        const { value, done } = await plain!.read();
        if (done || !value) break;
        conn.push(value);
        full = value.length >= MAX_READ;
      }
      // A read that filled the whole buffer means more is queued: let other
      // connections run before taking the next one, so a flood cannot starve them.
      if (full) await svc.afterIO();
    }
    conn.eof();
    await conn.done;
  } catch {
    conn.abort();
  }
}
