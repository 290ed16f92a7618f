// Bun entry for the HTTP side port: Bun.serve.
import type { Handler, HttpListening } from "./types.ts";

// Just the part of Bun's API used here, so that other runtimes' type checkers need no Bun types.
declare const Bun: {
  serve(opts: {
    hostname: string;
    port: number;
    fetch: Handler;
    error: (e: Error) => Response;
    /** Seconds a connection may sit idle (slow or stalled requests are cut off). */
    idleTimeout: number;
  }): { hostname: string; port: number; stop(closeActive?: boolean): Promise<void> | void };
};

/** Idle connections (a slow or stalled client) are closed after this many seconds. */
const IDLE_TIMEOUT_S = 30;

export function serveBun(handler: Handler, addr: { host: string; port: number }): Promise<HttpListening> {
  const server = Bun.serve({
    hostname: addr.host,
    port: addr.port,
    fetch: handler,
    error: () => new Response("internal error\n", { status: 500 }),
    idleTimeout: IDLE_TIMEOUT_S,
  });
  return Promise.resolve({
    address: { host: server.hostname, port: server.port },
    close: async () => {
      await server.stop(true);
    },
  });
}
