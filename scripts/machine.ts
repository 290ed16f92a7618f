// What this machine offers the tests and the bench alike: free ports for the servers
// they start, and programs on PATH.
import { createServer } from "node:net";
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

/**
 * Ports this process handed out already. The kernel may give the same free port to two
 * calls made close together (the first server has not bound it yet): two servers started
 * in parallel would then race for it, and the loser's test would talk to the winner
 * (the differential suite, playing six sessions at once, saw exactly that).
 */
const given = new Set<number>();

/**
 * Ports below the kernel's ephemeral range (32768-60999 by default): a port from that
 * range, once the test closes its probe, can be taken as the source port of any
 * outgoing connection (a node's connections to PostgreSQL, a client's), and a client
 * dialling a port there before the server listens can connect to itself (TCP
 * simultaneous open). Either way a test talked to something that was not its server
 * (a --pg node "reset" a connection at its first command, once in a while).
 */
const LOW = 20_000;
const HIGH = 32_000;

/** A free TCP port on 127.0.0.1, below the ephemeral range, that this process has not handed out before. */
export async function freePort(): Promise<number> {
  for (let tries = 0;; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (given.has(port)) continue;
    if (await bindable(port)) {
      given.add(port);
      return port;
    }
    if (tries > 1000) throw new Error(`no free port in ${LOW}-${HIGH}`);
  }
}

/** Whether a listener can bind 127.0.0.1:port now (it is closed again at once). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** Find an executable on PATH (or an absolute path), or undefined. */
export function which(name: string): string | undefined {
  if (name.startsWith("/")) return existsSync(name) ? name : undefined;
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}
