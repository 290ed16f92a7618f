// The input of Bun's connections that they do not want yet: held, fed back in pieces,
// and bounded (adapters/bun.ts hands every read over here).
//
// Bun hands over all that the kernel has queued, up to 512 KB per read, so pausing alone
// does not bound what a client makes us hold (clients that wrote and never read grew Bun
// without bound). A chunk is pushed PIECE bytes at a time while the connection wants
// input; what it does not want yet is held here (views of Bun's chunks), and fed to it
// when it asks again; the socket stays paused until all of it went. So a client makes us
// hold at most what Bun read before the pause took effect: one read, all that the kernel
// had queued (the TCP receive window). A client that reads none of its replies for
// STUCK_MS while more than HOLD_MAX of its input is held is dropped: beanstalkd's bound
// is its fixed buffers (it reads no command while a reply waits), and a client that reads
// nothing has nothing more to get. That bounds one client, not a thousand at once. So the
// input held by all connections has a budget, HELD_BUDGET: past it, connections that hold
// more than HOLD_MAX and none of whose held input has gone in (nor refused replies been
// taken) for STALL_MS are dropped at once, the longest stalled first. A client with at
// most HOLD_MAX of commands written ahead of its replies is never dropped. One that
// writes more ahead and reads slowly lets its held input in only as its replies go, and
// for its first second or so looks like one that never reads (the kernel takes megabytes
// of replies even from that one, so neither is refused a write): under a flood past the
// budget it may be dropped. The chunks a dropped client held are freed at once
// (detached), not left to the garbage collector, which in a server that allocates little
// runs seldom enough to keep them for seconds. Drops are logged at most once a second
// (the others counted into the next line). The figures: docs/reliability.md (Input).
import type { Service } from "../protocol/service.ts";
import type { Connection } from "../protocol/connection.ts";

/**
 * The most input pushed into a connection at once: it reads at most 4 KiB ahead of the
 * commands it has run (READ_AHEAD_MAX in connection.ts), so a push may leave it holding
 * up to about twice this.
 */
export const PIECE = 4 * 1024;
/**
 * A connection whose replies wait unread (the kernel takes none of them) for STUCK_MS
 * while more than HOLD_MAX of its input is held is dropped. Not as soon as the kernel
 * takes no more: that also happens to a client that reads, only slower than a
 * pipeline of big replies is written.
 */
export const HOLD_MAX = 64 * 1024;
export const STUCK_MS = 2000;
/** The input held by all connections sharing one InputBudget (see the top of this file). */
const HELD_BUDGET = 32 * 1024 * 1024;
/**
 * Over HELD_BUDGET, a connection none of whose held input went in for this long may be
 * dropped. Not at once: a connection that has just read is waiting for its turn.
 */
const STALL_MS = 50;
/** At most one drop line per this long; the drops between are counted into the next. */
const DROP_LOG_MS = 1000;

/** What a Bun socket keeps between its callbacks. */
export interface State {
  readonly sock: { terminate(): void };
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
  /**
   * The held chunk a piece of which the connection is taking now (feedHeld): its parser
   * reads the piece until push() returns, so a release() meanwhile (the socket closed
   * from inside the connection's work) leaves it to feedHeld to free.
   */
  feeding: Uint8Array | undefined;
  /** The client half-closed while input was held: eof() once that is fed. */
  eofHeld: boolean;
}

/** A socket's state when it opens: nothing held, no connection yet. */
export function newState(sock: State["sock"], svc: Service): State {
  return {
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
    feeding: undefined,
  };
}

/**
 * Whether the connection takes input now: it wants it, or it throws input away (an
 * over-long line, a body over -z), which costs nothing to push; the pace of that is one
 * chunk of Bun's per DISCARD_PAUSE_MS (connection.ts), as before pieces.
 */
export function takes(conn: Connection): boolean {
  return !conn.closed && !conn.yielded && (conn.discarding || conn.wantsInput);
}

/** A chunk that is a whole buffer of its own (Bun's are), so that free() may detach it; else a copy. */
export function own(chunk: Uint8Array): Uint8Array {
  return chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength ? chunk : chunk.slice();
}

/** Give back the memory of a held chunk (a view of own()'s buffer) now, not at the next garbage collection. */
function free(view: Uint8Array): void {
  (view.buffer as ArrayBuffer).transfer(0);
}

/**
 * The input held by the connections of the listeners that share it (a process's: see
 * adapters/listen.ts, Listeners), its budget, and the drops that keep to it. Also the
 * clock of Bun's batch of data callbacks, which those connections share too.
 */
export class InputBudget {
  /** Bytes held by all connections (State.heldBytes summed). */
  #total = 0;
  /** Connections that hold input, the longest stalled (none of it went in since) first. */
  readonly #holding = new Set<State>();
  #shedQueued = false;
  #shedTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the batch of data callbacks now running began (-1: none measured). */
  #batchStart = -1;
  readonly #endBatch = (): void => {
    this.#batchStart = -1;
  };
  #lastDropLog = -Infinity;
  #unloggedDrops = 0;
  #dropLogTimer: ReturnType<typeof setTimeout> | undefined;

  /** How long the batch of data callbacks now running has run (measured from the first big read in it). */
  batchMs(): number {
    const now = performance.now();
    if (this.#batchStart < 0) {
      this.#batchStart = now;
      setImmediate(this.#endBatch); // after the batch: Bun runs immediates once its poll's callbacks are done
    }
    return now - this.#batchStart;
  }

  /** Hold (a view of) a chunk the connection does not want yet (or a read put off to a turn). */
  hold(st: State, view: Uint8Array): void {
    if (st.held.length === 0) {
      st.fedAt = performance.now();
      this.#holding.add(st);
    }
    st.held.push(view);
    st.heldBytes += view.length;
    this.#total += view.length;
    if (this.#total > HELD_BUDGET) this.#queueShed();
  }

  /** Some held input went in, or the client read some replies: to the back of the line of stalled connections. */
  moved(st: State): void {
    st.fedAt = performance.now();
    this.#holding.delete(st);
    this.#holding.add(st);
  }

  /** Let go of all the input held (the connection is closed or dropped). */
  release(st: State): void {
    if (st.held.length === 0) return;
    this.#holding.delete(st);
    this.#total -= st.heldBytes;
    st.heldBytes = 0;
    for (const c of st.held) if (c !== st.feeding) free(c);
    st.held = [];
    st.heldOff = 0;
  }

  /** Push a chunk in pieces while the connection takes it; hold the rest. */
  feed(st: State, conn: Connection, chunk: Uint8Array): void {
    let off = 0;
    while (off < chunk.length && takes(conn)) {
      const end = Math.min(chunk.length, off + PIECE);
      // The usual read is one piece: pushed whole, no view of it (Bun's chunk is a Buffer,
      // whose subarray() goes through its species constructor, which showed in profiles).
      conn.push(off === 0 && end === chunk.length ? chunk : chunk.subarray(off, end));
      off = end;
    }
    if (off < chunk.length && !conn.closed) this.hold(st, own(chunk).subarray(off));
  }

  /** Feed held input while the connection takes it; whether all of it went (the half-close too). */
  feedHeld(st: State, conn: Connection): boolean {
    const before = st.heldBytes;
    while (st.held.length > 0 && takes(conn)) {
      const c = st.held[0]!;
      const start = st.heldOff;
      const end = Math.min(c.length, start + PIECE);
      // counted out before it goes in: a release() while the connection takes it lets go of the rest only
      st.heldBytes -= end - start;
      this.#total -= end - start;
      st.heldOff = end;
      if (end === c.length) {
        st.held.shift();
        st.heldOff = 0;
      }
      st.feeding = c;
      try {
        conn.push(c.subarray(start, end));
      } finally {
        st.feeding = undefined;
      }
      // used up, or let go of meanwhile (release() left it, as the parser was reading it)
      if (end === c.length || st.held[0] !== c) free(c);
    }
    if (st.held.length > 0) {
      if (st.heldBytes < before) this.moved(st);
      return false;
    }
    this.#holding.delete(st);
    if (st.eofHeld) {
      st.eofHeld = false;
      conn.eof();
    }
    return true;
  }

  /** Drop the connection now (logged, at most a line a second) and free what it held. */
  drop(st: State, why: string): void {
    const conn = st.conn;
    if (!conn || conn.closed) return;
    this.#logDrop(st.svc, `dropping connection ${conn.id}: ${why}`);
    conn.abort();
    st.sock.terminate();
    this.release(st);
  }

  /**
   * Over HELD_BUDGET: drop connections that hold more than HOLD_MAX and have stalled for
   * STALL_MS, the longest stalled first, until under it; look again once the next one has
   * stalled that long, if still over. In a microtask: never inside a push (the connection
   * pushing may be the one dropped, its parser reading a held chunk).
   */
  #queueShed(): void {
    if (this.#shedQueued) return;
    this.#shedQueued = true;
    queueMicrotask(this.#shed);
  }

  readonly #shed = (): void => {
    this.#shedQueued = false;
    const now = performance.now();
    for (const st of this.#holding) {
      if (this.#total <= HELD_BUDGET) return;
      const stalled = now - st.fedAt;
      if (stalled < STALL_MS) {
        // The rest stalled for less: look again when this one has stalled long enough.
        this.#shedTimer ??= setTimeout(() => {
          this.#shedTimer = undefined;
          this.#shed();
        }, STALL_MS - stalled);
        return;
      }
      if (st.heldBytes > HOLD_MAX) {
        this.drop(
          st,
          `none of the ${st.heldBytes} bytes of its input held went in for ${Math.round(stalled)} ms, and the ` +
            `input held by all connections passed ${HELD_BUDGET} bytes`,
        );
      }
    }
  };

  /** One drop line a second at most; the drops between are counted, into a line of their own. */
  #logDrop(svc: Service, line: string): void {
    const now = performance.now();
    if (now - this.#lastDropLog >= DROP_LOG_MS) {
      this.#lastDropLog = now;
      svc.error(line);
      return;
    }
    this.#unloggedDrops++;
    this.#dropLogTimer ??= setTimeout(() => {
      this.#dropLogTimer = undefined;
      this.#lastDropLog = performance.now();
      svc.error(
        `dropped ${this.#unloggedDrops} more connection(s) that held input and read no replies (one line a second)`,
      );
      this.#unloggedDrops = 0;
    }, DROP_LOG_MS - (now - this.#lastDropLog));
  }
}
