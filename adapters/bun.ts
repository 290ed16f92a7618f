// Bun entry: Bun.listen with socket callbacks. Bytes are pushed into the connection's
// parser; reading pauses while the connection cannot take more (back-pressure), and
// writes that the kernel does not take whole wait for the drain callback. What a
// connection does not want yet of a read is held, and bounded, by adapters/bun_input.ts.
//
// TLS (and mTLS) is Bun.listen's own `tls` option. Bun opens a TLS socket before its
// handshake; it becomes a beanstalkd connection (counted in stats, served) only once the
// handshake succeeds, and is dropped if it fails or stalls.
import type { Service } from "../protocol/service.ts";
import {
  HANDSHAKE_TIMEOUT_MS,
  type ListenAddress,
  type Listening,
  type ListenOptions,
  peerAddress,
  peerName,
  type TlsMaterial,
} from "./types.ts";
import { HOLD_MAX, InputBudget, newState, own, PIECE, type State, STUCK_MS } from "./bun_input.ts";

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
 * Bun runs the data callbacks of every socket its poll found ready in one go. A read of
 * more than PIECE (a pipeline: one command per read is far less) that comes once this
 * batch has run for BATCH_MS is held and fed at a turn (svc.turns) instead: see data().
 */
const BATCH_MS = 2;

/** What the callbacks of one listener share. */
interface Listener {
  readonly svc: Service;
  readonly addr: ListenAddress;
  readonly tls: TlsMaterial | undefined;
  readonly handshakeMs: number;
  readonly budget: InputBudget;
}

function flushRest(l: Listener, sock: Sock, st: State): void {
  while (st.rest) {
    const n = sock.write(st.rest);
    if (n < 0) return st.conn?.abort();
    st.flushed += n;
    // The kernel took replies it had refused: the client reads.
    if (n > 0 && st.held.length > 0) l.budget.moved(st);
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

/**
 * While a write waits and more than HOLD_MAX of input is held: drop the connection if
 * none of its replies has been read STUCK_MS from now.
 */
function watchStuck(l: Listener, st: State): void {
  if (st.stuckTimer || st.heldBytes <= HOLD_MAX || !st.rest || !st.conn || st.conn.closed) return;
  const mark = st.flushed;
  st.stuckTimer = setTimeout(() => {
    st.stuckTimer = undefined;
    const conn = st.conn;
    if (st.flushed !== mark) return watchStuck(l, st); // it reads: look again later
    if (st.heldBytes <= HOLD_MAX || !st.rest || !conn || conn.closed) return;
    l.budget.drop(
      st,
      `it has read none of its replies for ${STUCK_MS / 1000} s while ${st.heldBytes} bytes of its input ` +
        `wait (limit ${HOLD_MAX})`,
    );
  }, STUCK_MS);
}

/** Make the socket a beanstalkd connection. */
function attach(l: Listener, sock: Sock, st: State, peer?: string): void {
  const conn = l.svc.connect(
    {
      write(piece) {
        const n = sock.write(piece);
        if (n === piece.length) return;
        if (n < 0) throw new Error("socket closed");
        st.rest = piece.subarray(n);
        watchStuck(l, st);
        return new Promise<void>((resolve) => (st.done = resolve));
      },
      close() {
        sock.end();
      },
    },
    peer,
    peerAddress(sock.remoteAddress, sock.remotePort, l.addr),
  );
  st.conn = conn;
  conn.onResume = () => {
    if (l.budget.feedHeld(st, conn) && st.paused && conn.wantsInput) {
      st.paused = false;
      sock.resume();
    }
  };
}

/** A read: pushed into the connection or held; the socket paused while input is held or not wanted. */
function onData(l: Listener, sock: Sock, chunk: Uint8Array): void {
  const st = sock.data;
  const conn = st.conn;
  if (!conn || conn.closed) return; // nothing to serve it with (before the handshake, or closed)
  // Bun read on after pause(): keep it in order behind what is held already.
  if (st.held.length > 0) l.budget.hold(st, own(chunk));
  else if (chunk.length > PIECE && l.budget.batchMs() >= BATCH_MS) {
    // A pipeline in a long batch (1,000 flooders connecting at once): its turn comes
    // with the others', so that the batch ends and the sockets are polled again.
    l.budget.hold(st, own(chunk));
    l.svc.turns.afterIO(() => conn.onResume?.());
  } else l.budget.feed(st, conn, chunk);
  if ((st.held.length > 0 || !conn.wantsInput) && !st.paused && !conn.closed) {
    st.paused = true;
    sock.pause();
  }
  watchStuck(l, st);
}

function socketHandler(l: Listener): SocketHandler {
  const tls = l.tls;
  return {
    open(sock) {
      const st = newState(sock, l.svc);
      sock.data = st;
      if (!tls) return attach(l, sock, st);
      st.handshakeTimer = setTimeout(() => sock.terminate(), l.handshakeMs);
    },
    handshake(sock, success, authorizationError) {
      const st = sock.data;
      clearTimeout(st.handshakeTimer);
      st.handshakeTimer = undefined;
      // Under --tls-ca, Bun 1.4 fails the handshake of a client with no certificate, but
      // reports one signed by another CA as a success with an authorizationError (and
      // closes it a moment later): check both, or that client would be served meanwhile.
      if (!success || (tls?.ca !== undefined && (authorizationError || !sock.authorized))) return sock.terminate();
      attach(l, sock, st, tls?.ca !== undefined ? peerName(sock.getPeerCertificate()?.subject) : undefined);
    },
    data(sock, chunk) {
      onData(l, sock, chunk);
    },
    drain(sock) {
      flushRest(l, sock, sock.data);
    },
    end(sock) {
      const st = sock.data;
      if (!st.conn) sock.terminate(); // gave up mid-handshake
      else if (st.held.length > 0) st.eofHeld = true; // after the input held
      else st.conn.eof();
    },
    close(sock) {
      const st = sock.data;
      if (!st) return;
      clearTimeout(st.handshakeTimer);
      clearTimeout(st.stuckTimer);
      st.conn?.abort();
      l.budget.release(st);
    },
    error(sock) {
      sock.data?.conn?.abort();
    },
  };
}

/**
 * Listen with Bun.listen. Listeners given the same `budget` share its bound on the input
 * held for connections that read no replies (adapters/listen.ts's Listeners gives one per
 * process).
 */
export function listenBun(
  svc: Service,
  addr: ListenAddress,
  opts: ListenOptions = {},
  budget: InputBudget = new InputBudget(),
): Listening {
  const tls = opts.tls;
  const socket = socketHandler({
    svc,
    addr,
    tls,
    handshakeMs: opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS,
    budget,
  });
  const tlsOptions = tls && {
    cert: tls.cert,
    key: tls.key,
    ...(tls.ca !== undefined ? { ca: tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
  };
  const tlsOption = tlsOptions ? { tls: tlsOptions } : {};
  const server = "fd" in addr
    ? Bun.listen({ fd: addr.fd, socket, allowHalfOpen: true, ...tlsOption })
    : "path" in addr
    ? Bun.listen({ unix: addr.path, socket, allowHalfOpen: true })
    : Bun.listen({ hostname: addr.host, port: addr.port, socket, allowHalfOpen: true, ...tlsOption });
  return {
    // Bun does not tell which address an inherited socket is bound to.
    address: "path" in addr || "fd" in addr ? addr : { host: server.hostname, port: server.port },
    // Bun's listener keeps accepting through per-connection errors and fd shortages
    // (tests/system/accept_errors_test.ts), and reports no death of its own.
    failed: new Promise<Error>(() => {}),
    close: () => server.stop(true),
  };
}
