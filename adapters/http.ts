// Serve the HTTP side port (protocol/http/handler.ts) with this runtime's own server:
// Deno.serve or Bun.serve. Loaded lazily, like listen.ts, so that each runtime only
// ever loads its own adapter.

/** A request handler over web-standard Request/Response. */
export type Handler = (req: Request) => Promise<Response>;

/** A running HTTP server. */
export interface HttpListening {
  /** The bound address (the real port when 0 was asked for). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

export async function serveHttp(handler: Handler, addr: { host: string; port: number }): Promise<HttpListening> {
  if ("Deno" in globalThis) return (await import("./http_deno.ts")).serveDeno(handler, addr);
  if ("Bun" in globalThis) return (await import("./http_bun.ts")).serveBun(handler, addr);
  throw new Error("no HTTP server for this runtime (tubeway runs on Deno or Bun)");
}
