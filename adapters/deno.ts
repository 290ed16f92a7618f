// Deno entry: Deno.listen, each connection served over its web streams.
import type { Service } from "../protocol/service.ts";
import { serveStreams } from "../protocol/streams.ts";
import type { Listening, ListenAddress } from "./types.ts";

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
        serveStreams(svc, { readable: conn.readable, writable: conn.writable, close: () => conn.close() });
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
