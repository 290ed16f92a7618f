// Bun entry: Bun.listen with socket callbacks. Bytes are pushed into the connection's
// parser; reading pauses while the connection cannot take more (back-pressure), and
// writes that the kernel does not take whole wait for the drain callback.
import type { Service } from "../protocol/service.ts";
import type { Connection } from "../protocol/connection.ts";
import type { ListenAddress, Listening } from "./types.ts";

// Just the part of Bun's socket API used here, so that other runtimes' type checkers
// (deno test checks every file it loads) need no Bun type definitions.
interface Sock {
  data: State;
  write(data: Uint8Array): number;
  end(): void;
  pause(): void;
  resume(): void;
}
interface SocketHandler {
  open(sock: Sock): void;
  data(sock: Sock, chunk: Uint8Array): void;
  drain(sock: Sock): void;
  end(sock: Sock): void;
  close(sock: Sock): void;
  error(sock: Sock, err: Error): void;
}
declare const Bun: {
  listen(opts: {
    hostname?: string;
    port?: number;
    unix?: string;
    socket: SocketHandler;
    allowHalfOpen?: boolean;
  }): { hostname: string; port: number; stop(closeActive?: boolean): void };
};

interface State {
  conn: Connection;
  /** Unwritten rest of a piece, and who waits for it. */
  rest: Uint8Array | null;
  done: (() => void) | null;
  paused: boolean;
}

function flushRest(sock: Sock, st: State): void {
  while (st.rest) {
    const n = sock.write(st.rest);
    if (n < 0) return st.conn.abort();
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

export function listenBun(svc: Service, addr: ListenAddress): Listening {
  const handlers: SocketHandler = {
    open(sock) {
      const st: State = { conn: undefined as unknown as Connection, rest: null, done: null, paused: false };
      sock.data = st;
      st.conn = svc.connect({
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
      });
      st.conn.onResume = () => {
        if (st.paused) {
          st.paused = false;
          sock.resume();
        }
      };
    },
    data(sock, chunk) {
      const st = sock.data;
      st.conn.push(chunk);
      if (!st.conn.wantsInput && !st.paused && !st.conn.closed) {
        st.paused = true;
        sock.pause();
      }
    },
    drain(sock) {
      flushRest(sock, sock.data);
    },
    end(sock) {
      sock.data.conn.eof();
    },
    close(sock) {
      sock.data?.conn.abort();
    },
    error(sock) {
      sock.data?.conn.abort();
    },
  };
  const server = "path" in addr
    ? Bun.listen({ unix: addr.path, socket: handlers, allowHalfOpen: true })
    : Bun.listen({ hostname: addr.host, port: addr.port, socket: handlers, allowHalfOpen: true });
  return {
    address: "path" in addr ? { path: addr.path } : { host: server.hostname, port: server.port },
    close: () => server.stop(true),
  };
}
