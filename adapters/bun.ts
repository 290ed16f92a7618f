// Bun entry: Bun.listen with socket callbacks. Bytes are pushed into the connection's
// parser; reading pauses while the connection cannot take more (back-pressure), and
// writes that the kernel does not take whole wait for the drain callback.
//
// TLS (and mTLS) is Bun.listen's own `tls` option. Bun opens a TLS socket before its
// handshake; it becomes a beanstalkd connection (counted in stats, served) only once the
// handshake succeeds, and is dropped if it fails or stalls.
import type { Service } from "../protocol/service.ts";
import type { Connection } from "../protocol/connection.ts";
import {
  HANDSHAKE_TIMEOUT_MS,
  type ListenAddress,
  type Listening,
  type ListenOptions,
  peerAddress,
  peerName,
} from "./types.ts";

// Just the part of Bun's socket API used here, so that other runtimes' type checkers
// (deno test checks every file it loads) need no Bun type definitions.
interface Sock {
  data: State;
  /** The peer (stats-conn); empty for a UNIX client. */
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  write(data: Uint8Array): number;
  end(): void;
  pause(): void;
  resume(): void;
  /** Close at once, without flushing (a failed or stalled handshake). */
  terminate(): void;
  /** TLS: whether the client's certificate verified against the CA. */
  readonly authorized: boolean;
  /** TLS: the client's certificate (subject as name -> value), when it sent one. */
  getPeerCertificate(): { subject?: Record<string, unknown> } | undefined;
}
interface SocketHandler {
  open(sock: Sock): void;
  data(sock: Sock, chunk: Uint8Array): void;
  drain(sock: Sock): void;
  end(sock: Sock): void;
  close(sock: Sock): void;
  error(sock: Sock, err: Error): void;
  /** TLS only: the handshake finished; success is false when it failed (e.g. no client certificate). */
  handshake?(sock: Sock, success: boolean, authorizationError: Error | null): void;
}
declare const Bun: {
  listen(opts: {
    hostname?: string;
    port?: number;
    unix?: string;
    fd?: number;
    socket: SocketHandler;
    allowHalfOpen?: boolean;
    tls?: { cert: string; key: string; ca?: string; requestCert?: boolean; rejectUnauthorized?: boolean };
  }): { hostname: string; port: number; stop(closeActive?: boolean): void };
};

interface State {
  /** Set once the socket is a beanstalkd connection (after the handshake, for TLS). */
  conn: Connection | undefined;
  /** Drops a TLS socket whose handshake has not finished in time. */
  handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Unwritten rest of a piece, and who waits for it. */
  rest: Uint8Array | null;
  done: (() => void) | null;
  paused: boolean;
}

function flushRest(sock: Sock, st: State): void {
  while (st.rest) {
    const n = sock.write(st.rest);
    if (n < 0) return st.conn?.abort();
    if (n < st.rest.length) {
      st.rest = st.rest.subarray(n);
      return;
    }
    st.rest = null;
    const d = st.done;
    st.done = null;
    d?.();
  }
}

export function listenBun(svc: Service, addr: ListenAddress, opts: ListenOptions = {}): Listening {
  const tls = opts.tls;
  const handshakeMs = opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
  /** Make the socket a beanstalkd connection. */
  const attach = (sock: Sock, st: State, peer?: string): void => {
    const conn = svc.connect(
      {
        write(piece) {
          const n = sock.write(piece);
          if (n === piece.length) return;
          if (n < 0) throw new Error("socket closed");
          st.rest = piece.subarray(n);
          return new Promise<void>((resolve) => (st.done = resolve));
        },
        close() {
          sock.end();
        },
      },
      peer,
      peerAddress(sock.remoteAddress, sock.remotePort, addr),
    );
    st.conn = conn;
    conn.onResume = () => {
      if (st.paused) {
        st.paused = false;
        sock.resume();
      }
    };
  };
  const handlers: SocketHandler = {
    open(sock) {
      const st: State = { conn: undefined, handshakeTimer: undefined, rest: null, done: null, paused: false };
      sock.data = st;
      if (!tls) return attach(sock, st);
      st.handshakeTimer = setTimeout(() => sock.terminate(), handshakeMs);
    },
    handshake(sock, success, authorizationError) {
      const st = sock.data;
      clearTimeout(st.handshakeTimer);
      st.handshakeTimer = undefined;
      // Under --tls-ca, Bun 1.4 fails the handshake of a client with no certificate, but
      // reports one signed by another CA as a success with an authorizationError (and
      // closes it a moment later): check both, or that client would be served meanwhile.
      if (!success || (tls?.ca !== undefined && (authorizationError || !sock.authorized))) return sock.terminate();
      attach(sock, st, tls?.ca !== undefined ? peerName(sock.getPeerCertificate()?.subject) : undefined);
    },
    data(sock, chunk) {
      const conn = sock.data.conn;
      if (!conn) return; // not possible before the handshake; nothing to serve it with anyway
      conn.push(chunk);
      if (!conn.wantsInput && !sock.data.paused && !conn.closed) {
        sock.data.paused = true;
        sock.pause();
      }
    },
    drain(sock) {
      flushRest(sock, sock.data);
    },
    end(sock) {
      const st = sock.data;
      if (st.conn) st.conn.eof();
      else sock.terminate(); // gave up mid-handshake
    },
    close(sock) {
      clearTimeout(sock.data?.handshakeTimer);
      sock.data?.conn?.abort();
    },
    error(sock) {
      sock.data?.conn?.abort();
    },
  };
  const tlsOptions = tls && {
    cert: tls.cert,
    key: tls.key,
    ...(tls.ca !== undefined ? { ca: tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
  };
  const tlsOption = tlsOptions ? { tls: tlsOptions } : {};
  const server = "fd" in addr
    ? Bun.listen({ fd: addr.fd, socket: handlers, allowHalfOpen: true, ...tlsOption })
    : "path" in addr
    ? Bun.listen({ unix: addr.path, socket: handlers, allowHalfOpen: true })
    : Bun.listen({ hostname: addr.host, port: addr.port, socket: handlers, allowHalfOpen: true, ...tlsOption });
  return {
    // Bun does not tell which address an inherited socket is bound to.
    address: "path" in addr || "fd" in addr ? addr : { host: server.hostname, port: server.port },
    // Bun's listener keeps accepting through per-connection errors and fd shortages
    // (tests/system/accept_errors_test.ts), and reports no death of its own.
    failed: new Promise<Error>(() => {}),
    close: () => server.stop(true),
  };
}
