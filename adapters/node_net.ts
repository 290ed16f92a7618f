// Serve an inherited listening socket (systemd socket activation) on Deno: Deno.listen
// cannot adopt a file descriptor, but Deno's node:net (and node:tls) server.listen({ fd })
// can. Each connection is served like the TLS ones, over web streams made from the node
// socket (node_tls.ts).
import { createServer } from "node:net";
import type { Service } from "../protocol/service.ts";
import { serveStreams } from "../protocol/streams.ts";
import { listenNodeTls, nodeAddress, socketStreams } from "./node_tls.ts";
import type { Listening, ListenOptions } from "./types.ts";

/** Serve connections on the listening socket inherited as `fd`, over TLS when opts.tls is given. */
export function listenFd(svc: Service, fd: number, opts: ListenOptions = {}): Promise<Listening> {
  if (opts.tls) return listenNodeTls(svc, { fd }, opts.tls, opts.handshakeTimeoutMs);
  // allowHalfOpen: a client that shuts down its side still gets its replies (as in 1.12).
  const server = createServer({ allowHalfOpen: true }, (sock) => {
    try {
      sock.setNoDelay(true);
      sock.setKeepAlive(true);
    } catch { /* a UNIX socket */ }
    void serveStreams(svc, socketStreams(sock));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ fd }, () => {
      server.off("error", reject);
      server.on("error", (e) => svc.error(`accept failed: ${e}`));
      // node's server keeps accepting through per-connection errors and reports no death.
      resolve({
        address: nodeAddress(server.address(), { fd }),
        failed: new Promise<Error>(() => {}),
        close: () => server.close(),
      });
    });
  });
}
