// Deno entry for the HTTP side port: Deno.serve, resolved once it listens.
import type { Handler, HttpListening } from "./types.ts";

export function serveDeno(handler: Handler, addr: { host: string; port: number }): Promise<HttpListening> {
  return new Promise((resolve, reject) => {
    try {
      const server = Deno.serve({
        hostname: addr.host,
        port: addr.port,
        onListen: (local) => {
          resolve({ address: { host: local.hostname, port: local.port }, close: () => server.shutdown() });
        },
        onError: () => new Response("internal error\n", { status: 500 }),
      }, handler);
    } catch (e) {
      reject(e);
    }
  });
}
