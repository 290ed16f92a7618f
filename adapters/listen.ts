// Pick the listener of the runtime we are on. The adapters are loaded lazily so that
// each runtime only ever loads (and type-checks) its own.
import { readlinkSync } from "node:fs";
import { lookup } from "node:dns/promises";
import { getSystemErrorMessage } from "node:util";
import type { Service } from "../protocol/service.ts";
import type { ListenAddress, Listening, ListenOptions, TlsMaterial } from "./types.ts";
import type { InputBudget } from "./bun_input.ts";

export type { ListenAddress, Listening, ListenOptions, TlsMaterial };

/**
 * An inherited fd must be a socket: say what it is instead when it is not (1.12 exits
 * 111 with "inherited fd is not a TCP or UNIX listening socket"). Linux only, and not
 * under Deno's permissions short of --allow-all; elsewhere the runtime's error has to do.
 */
function checkInherited(fd: number): void {
  let what: string;
  try {
    what = readlinkSync(`/proc/self/fd/${fd}`);
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") throw new Error(`inherited fd ${fd} is not open`);
    return;
  }
  if (!what.startsWith("socket:")) {
    throw new Error(`inherited fd ${fd} is not a TCP or UNIX listening socket (it is ${what})`);
  }
}

/** An address as people write it: host:port ([v6]:port), a socket path, or the inherited fd. */
export function formatAddress(a: ListenAddress): string {
  if ("path" in a) return a.path;
  if ("fd" in a) return `inherited fd ${a.fd}`;
  return `${a.host.includes(":") ? `[${a.host}]` : a.host}:${a.port}`;
}

/**
 * Why listening failed, in the C library's words on every runtime: Deno says "Address
 * already in use (os error 98)", Bun only "Failed to listen at HOST" with the errno
 * beside it.
 */
function reason(e: unknown): string {
  const err = e as { errno?: unknown; message?: unknown };
  // Bun's errno is positive, node:net's (on Deno) negative.
  if (typeof err.errno === "number" && err.errno !== 0) {
    const text = getSystemErrorMessage(-Math.abs(err.errno));
    return text.charAt(0).toUpperCase() + text.slice(1);
  }
  return String(err.message ?? e).replace(/ \(os error \d+\)$/, "");
}

/**
 * The listeners of one process: on Bun they share one bound on the input held for
 * clients that read no replies (adapters/bun_input.ts). listen() makes a group of one.
 */
export class Listeners {
  /** Made at the first Bun listener. */
  #budget: InputBudget | undefined;

  /** As listen(), in this group. */
  async listen(svc: Service, addr: ListenAddress, opts: ListenOptions = {}): Promise<Listening> {
    if (opts.tls && "path" in addr) throw new Error("TLS is served on TCP addresses only");
    try {
      return await this.#listenHere(svc, addr, opts);
    } catch (e) {
      throw new Error(await listenFailure(addr, e));
    }
  }

  async #listenHere(svc: Service, addr: ListenAddress, opts: ListenOptions): Promise<Listening> {
    if ("fd" in addr) checkInherited(addr.fd);
    if ("Deno" in globalThis) {
      if ("fd" in addr) return await (await import("./node_net.ts")).listenFd(svc, addr.fd, opts);
      return await (await import("./deno.ts")).listenDeno(svc, addr, opts);
    }
    if ("Bun" in globalThis) {
      this.#budget ??= new (await import("./bun_input.ts")).InputBudget();
      return (await import("./bun.ts")).listenBun(svc, addr, opts, this.#budget);
    }
    throw new Error("no listener for this runtime (tubeway runs on Deno or Bun); use serveStreams()");
  }
}

/**
 * Listen on addr (TCP host and port, a UNIX socket path, or an inherited listening fd)
 * with this runtime's native sockets (Deno.listen or Bun.listen; node:net for an
 * inherited fd on Deno) and serve every connection with svc; over TLS when opts.tls is
 * given (not on UNIX paths). A failure is an Error whose message is the address and the
 * reason ("127.0.0.1:11300: Address already in use").
 *
 * @example
 * ```ts
 * import { listen, memoryEngine, runtimeTurns, Service } from "../mod.ts";
 *
 * const svc = new Service(memoryEngine(), { turns: runtimeTurns() });
 * const server = await listen(svc, { host: "127.0.0.1", port: 0 }); // 0: any free port
 * console.log(server.address); // { host: "127.0.0.1", port: ... }
 * server.close();
 * svc.close();
 * ```
 */
export function listen(svc: Service, addr: ListenAddress, opts: ListenOptions = {}): Promise<Listening> {
  return new Listeners().listen(svc, addr, opts);
}

/**
 * "ADDRESS: reason" for an error from listening on addr (with any runtime's listener,
 * the HTTP one too). Bun gives no errno when the host name does not resolve, so a
 * lookup finds out whether that was it.
 */
export async function listenFailure(addr: ListenAddress, e: unknown): Promise<string> {
  if ("host" in addr && typeof (e as { errno?: unknown }).errno !== "number") {
    const found = await lookup(addr.host).then(() => true, () => false);
    if (!found) return `${formatAddress(addr)}: host name not found`;
  }
  return `${formatAddress(addr)}: ${reason(e)}`;
}

/** Which runtime serves, for the startup log line: "deno-2.9.6", "bun-1.4.5". */
export function runtimeLabel(): string {
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (g.Deno) return `deno-${g.Deno.version.deno}`;
  if (g.Bun) return `bun-${g.Bun.version}`;
  return "unknown";
}
