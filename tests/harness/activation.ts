// Servers started the way systemd starts a socket-activated service: Debian's
// systemd-socket-activate listens, and on the first connection runs the server with the
// listening socket as fd 3 (LISTEN_FDS/LISTEN_PID). 127.0.0.1 and free ports only.
import { type ChildProcess, spawn } from "node:child_process";
import { ROOT } from "./paths.ts";
import { which } from "../../scripts/machine.ts";
import { freePort, type Running, stopChild, type Target } from "./targets.ts";
import { type Address, dial, type Wire } from "./wire.ts";

export const ACTIVATE = which("systemd-socket-activate") ?? which("/usr/bin/systemd-socket-activate");
export const NO_ACTIVATE = "systemd-socket-activate is not installed (apt-get install systemd)";

export interface Activated {
  child: ChildProcess;
  /** Everything printed so far, systemd-socket-activate's lines included. */
  output(): string;
}

/** Run argv behind systemd-socket-activate listening on `listen` (host:port or a path). */
export function activate(listen: string, argv: string[], options: string[] = []): Activated {
  const child = spawn(ACTIVATE!, [...options, "-l", listen, ...argv], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d));
  child.stderr!.on("data", (d: Buffer) => (log += d));
  return { child, output: () => log };
}

/** Retry `connect` until it succeeds (bounded): systemd-socket-activate listens a moment after its start. */
export async function soon<T>(connect: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await connect();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Dial until connected. The connection that starts the server waits in the socket's
 * backlog until the server accepts it, so replies may take a server start to come.
 */
export function dialActivated(addr: Address): Promise<Wire> {
  return soon(() => dial(addr, 20_000));
}

/** A Target whose server is socket-activated on 127.0.0.1 and a free port. */
export function activatedTarget(name: string, argv: () => Promise<string[]>): Target {
  return {
    name,
    unavailable: () => (ACTIVATE ? undefined : NO_ACTIVATE),
    async start(flags = []): Promise<Running> {
      const port = await freePort();
      const addr = { host: "127.0.0.1", port };
      const s = activate(`127.0.0.1:${port}`, [...await argv(), ...flags]);
      // One exchange, so that the server has replaced systemd-socket-activate (same pid)
      // before anyone signals it.
      const w = await dialActivated(addr);
      await w.cmd("list-tube-used", 20_000);
      w.close();
      return {
        addr,
        child: s.child,
        drain: () => process.kill(s.child.pid!, "SIGUSR1"),
        output: s.output,
        stop: () => stopChild(s.child),
      };
    },
  };
}
