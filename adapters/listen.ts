// Pick the listener of the runtime we are on. The adapters are loaded lazily so that
// each runtime only ever loads (and type-checks) its own.
import type { Service } from "../protocol/service.ts";
import type { ListenAddress, Listening } from "./types.ts";

export type { ListenAddress, Listening };

/**
 * Listen on addr (TCP host and port, or a UNIX socket path) with this runtime's native
 * sockets (Deno.listen or Bun.listen) and serve every connection with svc.
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
export async function listen(svc: Service, addr: ListenAddress): Promise<Listening> {
  if ("Deno" in globalThis) return (await import("./deno.ts")).listenDeno(svc, addr);
  if ("Bun" in globalThis) return (await import("./bun.ts")).listenBun(svc, addr);
  throw new Error("no listener for this runtime (tubeway runs on Deno or Bun); use serveStreams()");
}
