// Serve the HTTP side port (protocol/http/handler.ts) with this runtime's own server:
// Deno.serve or Bun.serve. Loaded lazily, like listen.ts, so that each runtime only
// ever loads its own adapter. The types they share live in types.ts, so that neither
// imports this file back (a cycle scripts/check_imports.mjs refuses).

import type { Handler, HttpListening } from "./types.ts";

export async function serveHttp(handler: Handler, addr: { host: string; port: number }): Promise<HttpListening> {
  if ("Deno" in globalThis) return (await import("./http_deno.ts")).serveDeno(handler, addr);
  if ("Bun" in globalThis) return (await import("./http_bun.ts")).serveBun(handler, addr);
  throw new Error("no HTTP server for this runtime (tubeway runs on Deno or Bun)");
}
