// Deno entry: Deno.listen, each connection served with conn.read()/conn.write().
//
// Not conn.readable/conn.writable: Deno's readable closes the whole socket when it
// reads EOF, and beanstalkd must still answer a client that half-closed (a waiting
// reserve gets TIMED_OUT, earlier pipelined commands get their replies).
//
// TLS is served by node:tls (node_tls.ts), not Deno.listenTls, which in Deno 2.9 can
// neither ask clients for certificates (denoland/deno#26825) nor drop a client that
// stalls mid-handshake: closing such a TlsConn leaves its TCP socket open for as long as
// the client likes (checked on 2.9.6), so anyone could pile up sockets. Deno's node:tls
// does both; on TCP it gets its connections from the accept loop here (tlsHandOver).
import type { Service } from "../protocol/service.ts";
import process from "node:process";
import { Buffer } from "node:buffer";
import { Socket } from "node:net";
import type { Server } from "node:tls";
import { listenNodeTls, tlsServer } from "./node_tls.ts";
import { HANDSHAKE_TIMEOUT_MS, type ListenAddress, type Listening, type ListenOptions, peerAddress } from "./types.ts";
import { AcceptErrorLog, acceptVerdict, BACK_OFF_MS } from "./accept_errors.ts";

/**
 * Read size of an idle connection (a pending read holds its buffer, so 10,000 idle
 * clients hold 10,000 of these), and the most one read asks for.
 */
const MIN_READ = 256;
const MAX_READ = 64 * 1024;

/**
 * Serve one connection with conn.read()/conn.write() directly: no web streams, whose
 * readers, writers, controllers and promises cost kilobytes per idle connection. The
 * read buffer is small while the client is idle, grows fourfold after reads that fill
 * it, and shrinks again after a small read. The connection keeps only what it has not
 * consumed when push() returns, so the buffer is reused.
 */
async function serveConn(svc: Service, conn: Deno.Conn, listen?: ListenAddress): Promise<void> {
  let closed = false;
  const remote = conn.remoteAddr as Deno.NetAddr | Deno.UnixAddr;
  const addr = remote.transport === "tcp" ? peerAddress(remote.hostname, remote.port) : peerAddress("", 0, listen);
  const c = svc.connect(
    {
      // The socket's own promise, resolving to the bytes taken (the connection writes
      // any rest): no async wrapper and its promise per reply.
      write: (piece) => conn.write(piece),
      close() {
        if (closed) return;
        closed = true;
        try {
          conn.close();
        } catch { /* already closed */ }
      },
    },
    undefined,
    addr,
  );
  let resume: (() => void) | undefined;
  c.onResume = () => {
    const r = resume;
    resume = undefined;
    r?.();
  };
  let buf = new Uint8Array(MIN_READ);
  try {
    for (;;) {
      if (!c.wantsInput) {
        // Stalled (replies not read, a reserve waiting): hold no big read buffer meanwhile;
        // but keep it through the millisecond pauses of a discard, or it would crawl.
        if (buf.length > MIN_READ && !c.discarding) buf = new Uint8Array(MIN_READ);
        while (!c.wantsInput) {
          if (c.closed) return;
          // onResume comes when input is wanted again, or the connection closed. Not a race
          // with c.done: each race would leave a reaction on that promise for the
          // connection's life (312 bytes per stall on Deno 2.9.6).
          await new Promise<void>((r) => (resume = r));
        }
      }
      const n = await conn.read(buf);
      if (n === null) break;
      c.push(buf.subarray(0, n));
      if (n === buf.length) {
        if (buf.length < MAX_READ) buf = new Uint8Array(buf.length * 4);
        // More is queued: let other connections run first, so a flood cannot starve them.
        else await svc.afterIO();
      } else if (n <= MIN_READ && buf.length > MIN_READ) {
        buf = new Uint8Array(MIN_READ); // the burst is over: idle small again
      }
    }
    c.eof();
    await c.done;
  } catch {
    c.abort(); // reset, or closed under a pending read
  }
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* closed already */ }
}

/** Read size for a TLS client's first bytes (its ClientHello; the rest stays in the kernel). */
const HELLO_READ = 1024;

/**
 * How node:tls gets connections from our accept loop (Deno.listen's: node:tls's own
 * listener stops accepting for good at its first EMFILE on Deno 2.9.6). Each one is
 * wrapped in a node:net Socket the way Deno's own node layer wraps a connection
 * (TCP.openFromRid) and handed to the server. Undefined when this Deno lacks those
 * internals: the caller then falls back to node:tls's listener.
 *
 * The client's first bytes are read here and put back in front of the socket: a client
 * that hangs up before saying anything is closed at once (handed over, a half-open
 * socket would see that end only at the handshake timeout, and a socket made without
 * half-open would lose the half-close a client may do after the handshake).
 */
function tlsHandOver(
  svc: Service,
  server: Server,
  handshakeMs: number,
): ((conn: Deno.Conn) => Promise<void>) | undefined {
  type Handle = { openFromRid(rid: number): unknown };
  let TCP: (new (type: number) => Handle) | undefined;
  let SOCKET: number | undefined;
  try {
    const b = (process as unknown as { binding(n: string): { TCP?: typeof TCP; constants?: { SOCKET?: number } } })
      .binding("tcp_wrap");
    TCP = b.TCP;
    SOCKET = b.constants?.SOCKET;
  } catch {
    return undefined;
  }
  if (typeof TCP !== "function" || typeof TCP.prototype.openFromRid !== "function" || SOCKET === undefined) {
    return undefined;
  }
  const Tcp = TCP;
  const type = SOCKET;
  return async (conn) => {
    const timer = setTimeout(() => closeQuietly(conn), handshakeMs); // said nothing in time
    let first: Uint8Array;
    try {
      const buf = new Uint8Array(HELLO_READ);
      const n = await conn.read(buf);
      if (n === null) throw new Error("hung up");
      first = buf.subarray(0, n);
    } catch {
      clearTimeout(timer);
      closeQuietly(conn);
      return;
    }
    clearTimeout(timer);
    try {
      const key = Object.getOwnPropertySymbols(conn).find((k) => k.description === "Deno.internal.rid");
      const rid = key && (conn as unknown as Record<symbol, unknown>)[key];
      if (typeof rid !== "number") throw new Error("this Deno.Conn has no resource id");
      const handle = new Tcp(type);
      handle.openFromRid(rid);
      const sock = new Socket({ handle, allowHalfOpen: true } as unknown as ConstructorParameters<typeof Socket>[0]);
      // The handle borrows the resource: closing the socket must close the connection.
      sock.once("close", () => closeQuietly(conn));
      sock.unshift(Buffer.from(first.buffer, first.byteOffset, first.byteLength));
      server.emit("connection", sock);
    } catch (e) {
      svc.error(`TLS: cannot serve a connection: ${e}`);
      closeQuietly(conn);
    }
  };
}

/** Listen on a TCP address or a UNIX path (an inherited fd goes to node_net.ts), plain or TLS. */
export async function listenDeno(
  svc: Service,
  addr: Exclude<ListenAddress, { fd: number }>,
  opts: ListenOptions = {},
): Promise<Listening> {
  let serve = (conn: Deno.Conn) => void serveConn(svc, conn, addr);
  if (opts.tls && !("path" in addr)) {
    const handshakeMs = opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    const handOver = tlsHandOver(svc, tlsServer(svc, opts.tls, handshakeMs), handshakeMs);
    if (!handOver) return await listenNodeTls(svc, addr, opts.tls, handshakeMs);
    serve = (conn) => void handOver(conn);
  }
  const listener = "path" in addr
    ? Deno.listen({ transport: "unix", path: addr.path })
    : Deno.listen({ transport: "tcp", hostname: addr.host, port: addr.port });
  const local = listener.addr as Deno.NetAddr | Deno.UnixAddr;
  let stopped = false;
  const errors = new AcceptErrorLog(svc.error);
  // Accept one at a time, not `for await`: an accept error must not end the loop.
  const failed = (async (): Promise<Error> => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (e) {
        if (stopped) return new Error("closed");
        const verdict = acceptVerdict(e);
        if (verdict === "fatal") return e instanceof Error ? e : new Error(String(e));
        errors.note(e, Date.now());
        if (verdict === "back-off") await new Promise((r) => setTimeout(r, BACK_OFF_MS));
        continue;
      }
      if ("setNoDelay" in conn) {
        try {
          (conn as Deno.TcpConn).setNoDelay(true);
          (conn as Deno.TcpConn).setKeepAlive(true);
        } catch { /* not TCP, or already reset */ }
      }
      serve(conn);
      // Deno completes an accept at once while connections are queued: without a yield,
      // a thousand clients arriving together would each get their first batch served
      // before anyone else's socket is polled (see sliced_turns.ts): one accept per yield
      // keeps another client's wait beside a thousand flooders short, a few per yield do
      // not (docs/benchmark.md, Measurements behind the code).
      await svc.afterIO();
    }
  })();
  return {
    address: "path" in local ? { path: local.path } : { host: local.hostname, port: local.port },
    failed: failed.then((e) => (stopped ? new Promise<Error>(() => {}) : e)),
    close: () => {
      stopped = true;
      try {
        listener.close();
      } catch { /* closed */ }
    },
  };
}
