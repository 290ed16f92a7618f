// Bun entry: Bun.listen with socket callbacks. Bytes are pushed into the connection's
// parser; reading pauses while the connection cannot take more (back-pressure), and
// writes that the kernel does not take whole wait for the drain callback.
//
// Bun hands over all that the kernel has queued, up to 512 KB per read, so pausing alone
// does not bound what a client makes us hold (issue 21: clients that wrote and never
// read took Bun to 1.9 GB). A chunk is pushed PIECE bytes at a time while the connection
// wants input; what it does not want yet is held here (views of Bun's chunks), and fed
// to it when it asks again; the socket stays paused until all of it went. So a client
// makes us hold at most what Bun read before the pause took effect. One that reads none
// of its replies for STUCK_MS while more than HOLD_MAX of its input is held is dropped,
// with one log line: beanstalkd's bound is its fixed buffers (it reads no command while
// a reply waits), and a client that reads nothing has nothing more to get.
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

/**
 * The most input pushed into a connection at once: it reads at most 4 KiB ahead of the
 * commands it has run (READ_AHEAD_MAX in connection.ts), so a push may leave it holding
 * up to about twice this.
 */
const PIECE = 4 * 1024;
/**
 * A connection whose replies wait unread (the kernel takes none of them) for STUCK_MS
 * while more than HOLD_MAX of its input is held is dropped. Not as soon as the kernel
 * takes no more: that also happens to a client that reads, only slower than a
 * pipeline of big replies is written.
 */
const HOLD_MAX = 64 * 1024;
const STUCK_MS = 2000;

interface State {
  /** Set once the socket is a beanstalkd connection (after the handshake, for TLS). */
  conn: Connection | undefined;
  /** Drops a TLS socket whose handshake has not finished in time. */
  handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Unwritten rest of a piece, and who waits for it. */
  rest: Uint8Array | null;
  done: (() => void) | null;
  /** Bytes of such rests written (the client read some): progress, for the STUCK_MS check. */
  flushed: number;
  /** Checks, after STUCK_MS, whether a connection that holds too much read anything meanwhile. */
  stuckTimer: ReturnType<typeof setTimeout> | undefined;
  paused: boolean;
  /**
   * Input the connection did not want yet, oldest first; held[0] from heldOff on. Views of
   * Bun's chunks, not copies: Bun hands over each read in a buffer of its own (checked in
   * tests/system/flood_unread_test.ts).
   */
  held: Uint8Array[];
  heldOff: number;
  heldBytes: number;
  /** The client half-closed while input was held: eof() once that is fed. */
  eofHeld: boolean;
}

/**
 * Whether the connection takes input now: it wants it, or it throws input away (an
 * over-long line, a body over -z), which costs nothing to push; the pace of that is one
 * chunk of Bun's per DISCARD_PAUSE_MS (connection.ts), as before pieces.
 */
function takes(conn: Connection): boolean {
  return !conn.closed && (conn.discarding || conn.wantsInput);
}

/** Push a chunk in pieces while the connection takes it; hold the rest. */
function feed(st: State, conn: Connection, chunk: Uint8Array): void {
  let off = 0;
  while (off < chunk.length && takes(conn)) {
    const end = Math.min(chunk.length, off + PIECE);
    // The usual read is one piece: pushed whole, no view of it (Bun's chunk is a Buffer,
    // whose subarray() goes through its species constructor: 9% of the CPU at one put per read).
    conn.push(off === 0 && end === chunk.length ? chunk : chunk.subarray(off, end));
    off = end;
  }
  if (off < chunk.length && !conn.closed) {
    st.held.push(chunk.subarray(off));
    st.heldBytes += chunk.length - off;
  }
}

/** Feed held input while the connection takes it; whether all of it went (the half-close too). */
function feedHeld(st: State, conn: Connection): boolean {
  while (st.held.length > 0 && takes(conn)) {
    const c = st.held[0]!;
    const end = Math.min(c.length, st.heldOff + PIECE);
    conn.push(c.subarray(st.heldOff, end));
    st.heldBytes -= end - st.heldOff;
    st.heldOff = end;
    if (end === c.length) {
      st.held.shift();
      st.heldOff = 0;
    }
  }
  if (st.held.length > 0) return false;
  if (st.eofHeld) {
    st.eofHeld = false;
    conn.eof();
  }
  return true;
}

function flushRest(sock: Sock, st: State): void {
  while (st.rest) {
    const n = sock.write(st.rest);
    if (n < 0) return st.conn?.abort();
    st.flushed += n;
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
  /**
   * While a write waits and more than HOLD_MAX of input is held: drop the connection if
   * none of its replies has been read STUCK_MS from now.
   */
  const watchStuck = (sock: Sock, st: State): void => {
    if (st.stuckTimer || st.heldBytes <= HOLD_MAX || !st.rest || !st.conn || st.conn.closed) return;
    const mark = st.flushed;
    st.stuckTimer = setTimeout(() => {
      st.stuckTimer = undefined;
      const conn = st.conn;
      if (st.flushed !== mark) return watchStuck(sock, st); // it reads: look again later
      if (st.heldBytes <= HOLD_MAX || !st.rest || !conn || conn.closed) return;
      svc.error(
        `dropping connection ${conn.id}: it has read none of its replies for ${STUCK_MS / 1000} s ` +
          `while ${st.heldBytes} bytes of its input wait (limit ${HOLD_MAX})`,
      );
      conn.abort();
      sock.terminate();
    }, STUCK_MS);
  };
  /** Make the socket a beanstalkd connection. */
  const attach = (sock: Sock, st: State, peer?: string): void => {
    const conn = svc.connect(
      {
        write(piece) {
          const n = sock.write(piece);
          if (n === piece.length) return;
          if (n < 0) throw new Error("socket closed");
          st.rest = piece.subarray(n);
          watchStuck(sock, st);
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
      if (feedHeld(st, conn) && st.paused && conn.wantsInput) {
        st.paused = false;
        sock.resume();
      }
    };
  };
  const handlers: SocketHandler = {
    open(sock) {
      const st: State = {
        conn: undefined,
        handshakeTimer: undefined,
        rest: null,
        done: null,
        flushed: 0,
        stuckTimer: undefined,
        paused: false,
        held: [],
        heldOff: 0,
        heldBytes: 0,
        eofHeld: false,
      };
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
      const st = sock.data;
      const conn = st.conn;
      if (!conn || conn.closed) return; // nothing to serve it with (before the handshake, or closed)
      if (st.held.length > 0) {
        // Bun read on after pause(): keep it in order behind what is held already.
        st.held.push(chunk);
        st.heldBytes += chunk.length;
      } else feed(st, conn, chunk);
      if ((st.held.length > 0 || !conn.wantsInput) && !st.paused && !conn.closed) {
        st.paused = true;
        sock.pause();
      }
      watchStuck(sock, st);
    },
    drain(sock) {
      flushRest(sock, sock.data);
    },
    end(sock) {
      const st = sock.data;
      if (!st.conn) sock.terminate(); // gave up mid-handshake
      else if (st.held.length > 0) st.eofHeld = true; // after the input held
      else st.conn.eof();
    },
    close(sock) {
      clearTimeout(sock.data?.handshakeTimer);
      clearTimeout(sock.data?.stuckTimer);
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
