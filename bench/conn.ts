// Client sockets for the load generator. Two transports behind one interface:
//  - "bun": Bun.connect (native, no stream machinery; the fastest we measured)
//  - "node": node:net, which works on Deno and Bun alike (the fallback)
// A Conn hands every chunk it receives to onData and writes whole buffers; on Bun's
// native sockets a short write is queued and finished on "drain".
import { connect as netConnect } from "node:net";

export interface ConnHandlers {
  onData(chunk: Uint8Array): void;
  onClose(err?: Error): void;
}

export interface Conn {
  write(buf: Uint8Array): void;
  close(): void;
  /** Route further events to other handlers. */
  setHandlers(h: ConnHandlers): void;
}

export type Transport = "bun" | "node";

// deno-lint-ignore no-explicit-any
const BunNS: any = (globalThis as any).Bun;

export function defaultTransport(): Transport {
  return BunNS && typeof BunNS.connect === "function" ? "bun" : "node";
}

export function connect(host: string, port: number, h: ConnHandlers, transport: Transport): Promise<Conn> {
  return transport === "bun" ? connectBun(host, port, h) : connectNode(host, port, h);
}

// ---------------------------------------------------------------- Bun native

class BunConn implements Conn {
  // deno-lint-ignore no-explicit-any
  sock: any = null;
  pending: Uint8Array[] = [];
  closed = false;
  constructor(public h: ConnHandlers) {}

  write(buf: Uint8Array): void {
    if (this.closed) return;
    if (this.pending.length) {
      this.pending.push(buf);
      return;
    }
    const n: number = this.sock.write(buf);
    if (n < buf.length) this.pending.push(n > 0 ? buf.subarray(n) : buf);
  }

  drain(): void {
    while (this.pending.length) {
      const b = this.pending[0]!;
      const n: number = this.sock.write(b);
      if (n < b.length) {
        this.pending[0] = n > 0 ? b.subarray(n) : b;
        return;
      }
      this.pending.shift();
    }
  }

  setHandlers(h: ConnHandlers): void {
    this.h = h;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.sock.end();
    } catch { /* already gone */ }
  }
}

const bunHandlers = {
  // deno-lint-ignore no-explicit-any
  data(s: any, d: Uint8Array) {
    (s.data as BunConn).h.onData(d);
  },
  // deno-lint-ignore no-explicit-any
  drain(s: any) {
    (s.data as BunConn).drain();
  },
  // deno-lint-ignore no-explicit-any
  close(s: any) {
    const c = s.data as BunConn;
    const was = c.closed;
    c.closed = true;
    c.h.onClose(was ? undefined : new Error("connection closed by server"));
  },
  // deno-lint-ignore no-explicit-any
  error(s: any, e: Error) {
    const c = s.data as BunConn;
    c.closed = true;
    c.h.onClose(e);
  },
};

async function connectBun(host: string, port: number, h: ConnHandlers): Promise<Conn> {
  const c = new BunConn(h);
  c.sock = await BunNS.connect({ hostname: host, port, data: c, socket: bunHandlers });
  if (typeof c.sock.setNoDelay === "function") c.sock.setNoDelay(true);
  return c;
}

// ---------------------------------------------------------------- node:net

function connectNode(host: string, port: number, h: ConnHandlers): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const sock = netConnect({ host, port, noDelay: true });
    let open = false;
    let closing = false;
    let hh = h;
    sock.once("connect", () => {
      open = true;
      sock.setNoDelay(true);
      resolve({
        write: (b) => void sock.write(b),
        close: () => {
          closing = true;
          sock.destroy();
        },
        setHandlers: (n) => (hh = n),
      });
    });
    sock.on("data", (d: Uint8Array) => hh.onData(d));
    sock.on("error", (e: Error) => {
      if (!open) reject(e);
      else if (!closing) hh.onClose(e);
    });
    sock.on("close", () => {
      if (open && !closing) {
        closing = true;
        hh.onClose(new Error("connection closed by server"));
      }
    });
  });
}
