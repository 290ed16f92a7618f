// TLS on Deno through node:tls (see deno.ts for why not Deno.listenTls): client
// certificates via requestCert + ca (rustls underneath), and a handshake timeout.
// Connections are served by the same serveStreams() as every other one, over web
// streams made from the node socket.
import type { Socket } from "node:net";
import { createServer, type Server, type TLSSocket } from "node:tls";
import type { Service } from "../protocol/service.ts";
import { serveStreams, type StreamPair } from "../protocol/streams.ts";
import {
  HANDSHAKE_TIMEOUT_MS,
  type ListenAddress,
  type Listening,
  peerAddress,
  peerName,
  type TlsMaterial,
} from "./types.ts";

/** A stream handle's reads, as node's (and Deno's node layer's) TCP handles have them. */
interface Reads {
  readStart(): unknown;
  readStop(): unknown;
}

/**
 * The reads of the TCP socket under a TLS socket. Deno 2.9's node:tls goes on reading
 * that socket while the TLS socket is paused, and keeps what it decrypts: 50 clients
 * that kept writing and never read grew a Deno server by gigabytes in seconds. So
 * the reads underneath are stopped and started with the TLS socket's. Undefined for a
 * plain socket (its pause() stops its reads) or where there is no such handle.
 */
function readsUnder(sock: Socket): Reads | undefined {
  const handle = (sock as unknown as { _parent?: { _handle?: Partial<Reads> } })._parent?._handle;
  return typeof handle?.readStart === "function" && typeof handle.readStop === "function" ? handle as Reads : undefined;
}

/** Web streams over a node socket (TLS or plain), with back-pressure both ways and half-close kept. */
export function socketStreams(sock: Socket): StreamPair {
  const under = readsUnder(sock);
  let reading = true;
  const pause = () => {
    sock.pause();
    if (under && reading) {
      reading = false;
      under.readStop();
    }
  };
  pause();
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      sock.on("data", (d: Uint8Array) => {
        controller.enqueue(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
        pause(); // resumed by the next pull: read only when the connection asks
      });
      const end = () => {
        try {
          controller.close();
        } catch { /* closed or errored already */ }
      };
      sock.once("end", end);
      sock.once("close", end);
      sock.once("error", (e) => {
        try {
          controller.error(e);
        } catch { /* closed already */ }
      });
    },
    pull() {
      if (under && !reading && !sock.destroyed) {
        reading = true;
        under.readStart();
      }
      sock.resume();
    },
    cancel() {
      sock.destroy();
    },
  }, { highWaterMark: 0 });
  const writable = new WritableStream<Uint8Array>({
    // Settles once node has taken the bytes (the callback), so the piece may be reused.
    write: (chunk) =>
      new Promise<void>((resolve, reject) => {
        if (sock.destroyed) return reject(new Error("socket closed"));
        sock.write(chunk, (e) => (e ? reject(e) : resolve()));
      }),
  });
  // end() sends what is queued, then close_notify and FIN; destroy once that is done, so
  // a client that never closes its side does not keep the socket.
  const close = () => sock.end(() => sock.destroy());
  const addr = peerAddress(sock.remoteAddress, sock.remotePort);
  return addr ? { readable, writable, close, addr } : { readable, writable, close };
}

/**
 * A node:tls server that serves every connection that completes its handshake as a
 * beanstalkd connection; with tls.ca, only CA-signed clients get in. It takes sockets
 * from its own listen() (listenNodeTls) or handed to it with
 * `server.emit("connection", socket)` (deno.ts).
 */
export function tlsServer(svc: Service, tls: TlsMaterial, handshakeTimeoutMs = HANDSHAKE_TIMEOUT_MS): Server {
  const mtls = tls.ca !== undefined;
  const server = createServer({
    cert: tls.cert,
    key: tls.key,
    ...(mtls ? { ca: tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
    allowHalfOpen: true,
    handshakeTimeout: handshakeTimeoutMs,
  });
  server.on("secureConnection", (sock: TLSSocket) => {
    // rejectUnauthorized already refused the handshake of an unverified client; this is
    // the second lock on the door, should a runtime ever let one through.
    if (mtls && !sock.authorized) return void sock.destroy();
    sock.setNoDelay(true);
    const peer = mtls ? peerName(sock.getPeerCertificate()?.subject as Record<string, unknown> | undefined) : undefined;
    void serveStreams(svc, { ...socketStreams(sock), ...(peer ? { peer } : {}) });
  });
  // A failed handshake (no certificate, wrong CA, not TLS at all, too slow). Destroy the
  // socket ourselves: Deno 2.9 reports handshakeTimeout here but leaves the socket open.
  server.on("tlsClientError", (_e: Error, sock: TLSSocket) => sock.destroy());
  return server;
}

/**
 * Listen for TLS on host:port, or on an inherited listening fd, with node:tls's own
 * listener: on Deno for an inherited fd (Deno.listen cannot adopt one), and for
 * host:port where deno.ts cannot hand connections to node:tls itself. On Deno 2.9.6
 * this listener stops accepting for good, silently, the first time accept() fails with
 * EMFILE (README, Reliability).
 */
export function listenNodeTls(
  svc: Service,
  addr: { host: string; port: number } | { fd: number },
  tls: TlsMaterial,
  handshakeTimeoutMs = HANDSHAKE_TIMEOUT_MS,
): Promise<Listening> {
  const server = tlsServer(svc, tls, handshakeTimeoutMs);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    const listening = () => {
      server.off("error", reject);
      server.on("error", (e) => svc.error(`TLS listener: ${e}`));
      // node's server keeps accepting through per-connection errors and reports no death.
      resolve({
        address: nodeAddress(server.address(), addr),
        failed: new Promise<Error>(() => {}),
        close: () => server.close(),
      });
    };
    if ("fd" in addr) server.listen({ fd: addr.fd }, listening);
    else server.listen(addr.port, addr.host, listening);
  });
}

/** What a node server says it is bound to; an inherited fd may be either kind. */
export function nodeAddress(
  a: string | { address: string; port: number } | null,
  asked: ListenAddress,
): ListenAddress {
  if (typeof a === "string") return { path: a };
  return a ? { host: a.address, port: a.port } : asked;
}
