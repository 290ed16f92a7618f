// Pick the listener of the runtime we are on. The adapters are loaded lazily so that
// each runtime only ever loads (and type-checks) its own.
import type { Service } from "../protocol/service.ts";
import type { ListenAddress, Listening, ListenOptions, TlsMaterial } from "./types.ts";

export type { ListenAddress, Listening, ListenOptions, TlsMaterial };

/**
 * Listen on addr (TCP host and port, or a UNIX socket path) with this runtime's native
 * sockets (Deno.listen or Bun.listen) and serve every connection with svc; over TLS when
 * opts.tls is given (TCP addresses only).
 *
 * @example
 * ```ts
 * import { listen, Service } from "../mod.ts";
 *
 * const svc = new Service();
 * const server = await listen(svc, { host: "127.0.0.1", port: 0 }); // 0: any free port
 * console.log(server.address); // { host: "127.0.0.1", port: ... }
 * server.close();
 * svc.close();
 * ```
 */
export async function listen(svc: Service, addr: ListenAddress, opts: ListenOptions = {}): Promise<Listening> {
  if (opts.tls && "path" in addr) throw new Error("TLS is served on TCP addresses only");
  if ("Deno" in globalThis) return (await import("./deno.ts")).listenDeno(svc, addr, opts);
  if ("Bun" in globalThis) return (await import("./bun.ts")).listenBun(svc, addr, opts);
  throw new Error("no listener for this runtime (tubeway runs on Deno or Bun); use serveStreams()");
}

/** Which runtime serves, for the startup log line: "deno-2.9.6", "bun-1.4.5". */
export function runtimeLabel(): string {
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (g.Deno) return `deno-${g.Deno.version.deno}`;
  if (g.Bun) return `bun-${g.Bun.version}`;
  return "unknown";
}
