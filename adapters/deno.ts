// Deno entry: Deno.listen, each connection served over web streams by serveStreams().
//
// The streams are our own thin byte streams over conn.read()/conn.write(), not
// conn.readable/conn.writable: Deno's readable closes the whole socket when it reads
// EOF, and beanstalkd must still answer a client that half-closed (a waiting reserve
// gets TIMED_OUT, earlier pipelined commands get their replies).
import type { Service } from "../protocol/service.ts";
import { serveStreams } from "../protocol/streams.ts";
import type { ListenAddress, Listening } from "./types.ts";

function streamsOf(conn: Deno.Conn) {
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  const readable = new ReadableStream({
    type: "bytes",
    async pull(controller: ReadableByteStreamController) {
      const req = controller.byobRequest!;
      const view = req.view as Uint8Array;
      let n: number | null = null;
      try {
        n = closed ? null : await conn.read(view);
      } catch {
        n = null;
      }
      if (n === null) {
        controller.close();
        req.respond(0);
      } else req.respond(n);
    },
    cancel: close,
  });
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      let off = 0;
      while (off < chunk.length) off += await conn.write(off === 0 ? chunk : chunk.subarray(off));
    },
  });
  return { readable: readable as ReadableStream<Uint8Array>, writable, close };
}

export function listenDeno(svc: Service, addr: ListenAddress): Listening {
  const listener = "path" in addr
    ? Deno.listen({ transport: "unix", path: addr.path })
    : Deno.listen({ transport: "tcp", hostname: addr.host, port: addr.port });
  const local = listener.addr as Deno.NetAddr | Deno.UnixAddr;
  let stopped = false;
  (async () => {
    try {
      for await (const conn of listener) {
        if ("setNoDelay" in conn) {
          try {
            (conn as Deno.TcpConn).setNoDelay(true);
            (conn as Deno.TcpConn).setKeepAlive(true);
          } catch { /* not TCP */ }
        }
        serveStreams(svc, streamsOf(conn));
      }
    } catch (e) {
      if (!stopped) svc.error(`accept failed: ${e}`);
    }
  })();
  return {
    address: "path" in local ? { path: local.path } : { host: local.hostname, port: local.port },
    close: () => {
      stopped = true;
      try {
        listener.close();
      } catch { /* closed */ }
    },
  };
}
