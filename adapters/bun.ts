// Bun entry: Bun.listen with socket callbacks. Bytes are pushed into the connection's
// parser; reading pauses while the connection cannot take more (back-pressure), and
// writes that the kernel does not take whole wait for the drain callback.
//
// Bun hands over all that the kernel has queued, up to 512 KB per read, so pausing alone
// does not bound what a client makes us hold (issue 21: clients that wrote and never
// read took Bun to 1.9 GB). A chunk is pushed PIECE bytes at a time while the connection
// wants input; what it does not want yet is held here (views of Bun's chunks), and fed
// to it when it asks again; the socket stays paused until all of it went. So a client
// makes us hold at most what Bun read before the pause took effect: one read, all that
// the kernel had queued (the TCP receive window, 90-128 KB for a client that never read
// here; up to 512 KB). A client that reads none of its replies for STUCK_MS while more
// than HOLD_MAX of its input is held is dropped: beanstalkd's bound is its fixed buffers
// (it reads no command while a reply waits), and a client that reads nothing has nothing
// more to get. That bounds one client, not a thousand at once: 1,000 such clients held
// ~100 MB of first reads within half a second (issue 21). So the input held by all
// connections has a budget, HELD_BUDGET: past it, connections that hold more than
// HOLD_MAX and none of whose held input has gone in (nor refused replies been taken) for
// STALL_MS are dropped at once, the longest stalled first. A client with at most
// HOLD_MAX of commands written ahead of its replies is never dropped. One that writes
// more ahead and reads slowly lets its held input in only as its replies go, and for its
// first second or so looks like one that never reads (the kernel takes ~2 MB of replies
// even from that one, so neither is refused a write): under a flood past the budget it
// may be dropped. The chunks a dropped client held are freed at once (detached), not
// left to the garbage collector, which in a server that allocates little ran seldom
// enough to keep 100 MB of them for seconds.
// Drops are logged at most once a second (the others counted into the next line).
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
/** The input held by all connections of this process (see the top of this file). */
const HELD_BUDGET = 32 * 1024 * 1024;
/**
 * Over HELD_BUDGET, a connection none of whose held input went in for this long may be
 * dropped. Not at once: a connection that has just read is waiting for its turn.
 */
const STALL_MS = 50;
/**
 * Bun runs the data callbacks of every socket its poll found ready in one go. A read of
 * more than PIECE (a pipeline: one command per read is far less) that comes once this
 * batch has run for BATCH_MS is held and fed at a turn (svc.turns) instead: see data().
 */
const BATCH_MS = 2;
/** At most one drop line per this long; the drops between are counted into the next. */
const DROP_LOG_MS = 1000;

/** Bytes held by all connections (State.heldBytes summed). */
let heldTotal = 0;
/** Connections that hold input, the longest stalled (none of it went in since) first. */
const holding = new Set<State>();
let shedQueued = false;
let shedTimer: ReturnType<typeof setTimeout> | undefined;
/** When the batch of data callbacks now running began (-1: none measured). */
let batchStart = -1;
const endBatch = (): void => {
  batchStart = -1;
};
let lastDropLog = -Infinity;
let unloggedDrops = 0;
let dropLogTimer: ReturnType<typeof setTimeout> | undefined;

interface State {
  readonly sock: Sock;
  readonly svc: Service;
  /** Set once the socket is a beanstalkd connection (after the handshake, for TLS). */
  conn: Connection | undefined;
  /** Drops a TLS socket whose handshake has not finished in time. */
  handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  /** When held input last went in (or began to be held): see STALL_MS. */
  fedAt: number;
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
   * tests/system/flood_unread_test.ts; one that is not is copied, see own()), which is
   * detached once used or dropped.
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
  return !conn.closed && !conn.yielded && (conn.discarding || conn.wantsInput);
}

/** A chunk that is a whole buffer of its own (Bun's are), so that free() may detach it; else a copy. */
function own(chunk: Uint8Array): Uint8Array {
  return chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength ? chunk : chunk.slice();
}

/** Give back the memory of a held chunk (a view of own()'s buffer) now, not at the next garbage collection. */
function free(view: Uint8Array): void {
  (view.buffer as ArrayBuffer).transfer(0);
}

/** How long the batch of data callbacks now running has run (measured from the first big read in it). */
function batchMs(): number {
  const now = performance.now();
  if (batchStart < 0) {
    batchStart = now;
    setImmediate(endBatch); // after the batch: Bun runs immediates once its poll's callbacks are done
  }
  return now - batchStart;
}

/** Hold (a view of) a chunk the connection does not want yet (or a read put off to a turn). */
function hold(st: State, view: Uint8Array): void {
  if (st.held.length === 0) {
    st.fedAt = performance.now();
    holding.add(st);
  }
  st.held.push(view);
  st.heldBytes += view.length;
  heldTotal += view.length;
  if (heldTotal > HELD_BUDGET) queueShed();
}

/** Some held input went in, or the client read some replies: to the back of the line of stalled connections. */
function moved(st: State): void {
  st.fedAt = performance.now();
  holding.delete(st);
  holding.add(st);
}

/** Let go of all the input held (the connection is closed or dropped). */
function release(st: State): void {
  if (st.held.length === 0) return;
  holding.delete(st);
  heldTotal -= st.heldBytes;
  st.heldBytes = 0;
  for (const c of st.held) free(c);
  st.held = [];
  st.heldOff = 0;
}

/**
 * Over HELD_BUDGET: drop connections that hold more than HOLD_MAX and have stalled for
 * STALL_MS, the longest stalled first, until under it; look again once the next one has
 * stalled that long, if still over. In a microtask: never inside a push (the connection
 * pushing may be the one dropped, its parser reading a held chunk).
 */
function queueShed(): void {
  if (shedQueued) return;
  shedQueued = true;
  queueMicrotask(shed);
}

function shed(): void {
  shedQueued = false;
  const now = performance.now();
  for (const st of holding) {
    if (heldTotal <= HELD_BUDGET) return;
    const stalled = now - st.fedAt;
    if (stalled < STALL_MS) {
      // The rest stalled for less: look again when this one has stalled long enough.
      shedTimer ??= setTimeout(() => {
        shedTimer = undefined;
        shed();
      }, STALL_MS - stalled);
      return;
    }
    if (st.heldBytes > HOLD_MAX) {
      drop(
        st,
        `none of the ${st.heldBytes} bytes of its input held went in for ${Math.round(stalled)} ms, and the ` +
          `input held by all connections passed ${HELD_BUDGET} bytes`,
      );
    }
  }
}

function drop(st: State, why: string): void {
  const conn = st.conn;
  if (!conn || conn.closed) return;
  logDrop(st.svc, `dropping connection ${conn.id}: ${why}`);
  conn.abort();
  st.sock.terminate();
  release(st);
}

/** One drop line a second at most; the drops between are counted, into a line of their own. */
function logDrop(svc: Service, line: string): void {
  const now = performance.now();
  if (now - lastDropLog >= DROP_LOG_MS) {
    lastDropLog = now;
    svc.error(line);
    return;
  }
  unloggedDrops++;
  dropLogTimer ??= setTimeout(() => {
    dropLogTimer = undefined;
    lastDropLog = performance.now();
    svc.error(`dropped ${unloggedDrops} more connection(s) that held input and read no replies (one line a second)`);
    unloggedDrops = 0;
  }, DROP_LOG_MS - (now - lastDropLog));
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
  if (off < chunk.length && !conn.closed) hold(st, own(chunk).subarray(off));
}

/** Feed held input while the connection takes it; whether all of it went (the half-close too). */
function feedHeld(st: State, conn: Connection): boolean {
  const before = st.heldBytes;
  while (st.held.length > 0 && takes(conn)) {
    const c = st.held[0]!;
    const end = Math.min(c.length, st.heldOff + PIECE);
    conn.push(c.subarray(st.heldOff, end));
    st.heldBytes -= end - st.heldOff;
    heldTotal -= end - st.heldOff;
    st.heldOff = end;
    if (end === c.length) {
      st.held.shift();
      st.heldOff = 0;
      free(c);
    }
  }
  if (st.held.length > 0) {
    if (st.heldBytes < before) moved(st);
    return false;
  }
  holding.delete(st);
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
    // The kernel took replies it had refused: the client reads.
    if (n > 0 && st.held.length > 0) moved(st);
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
      drop(
        st,
        `it has read none of its replies for ${STUCK_MS / 1000} s while ${st.heldBytes} bytes of its input ` +
          `wait (limit ${HOLD_MAX})`,
      );
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
        sock,
        svc,
        conn: undefined,
        handshakeTimer: undefined,
        fedAt: 0,
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
      // Bun read on after pause(): keep it in order behind what is held already.
      if (st.held.length > 0) hold(st, own(chunk));
      else if (chunk.length > PIECE && batchMs() >= BATCH_MS) {
        // A pipeline in a long batch (1,000 flooders connecting at once): its turn comes
        // with the others', so that the batch ends and the sockets are polled again.
        hold(st, own(chunk));
        svc.turns.afterIO(() => conn.onResume?.());
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
      const st = sock.data;
      if (!st) return;
      clearTimeout(st.handshakeTimer);
      clearTimeout(st.stuckTimer);
      st.conn?.abort();
      release(st);
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
