// Free ports for the servers tests start.
import { createServer } from "node:net";

/**
 * Ports this process handed out already. The kernel may give the same free port to two
 * calls made close together (the first server has not bound it yet): two servers started
 * in parallel would then race for it, and the loser's test would talk to the winner
 * (the differential suite, playing six sessions at once, saw exactly that).
 */
const given = new Set<number>();

/** Ask the kernel for a free TCP port on 127.0.0.1 that this process has not handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await kernelPort();
    if (!given.has(port)) {
      given.add(port);
      return port;
    }
  }
}

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      const port = typeof a === "object" && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
