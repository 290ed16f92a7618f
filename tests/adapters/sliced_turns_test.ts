// afterIO() in slices (adapters/sliced_turns.ts): connections that keep yielding and
// continuing (a pipelined flood) must not keep the event loop from polling other sockets.
// With setImmediate alone, ten such chains doing 0.2 ms of work per step delayed a socket
// round trip to ~0.3 s on Deno 2.9.6.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createConnection, createServer, type Socket } from "node:net";

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* work */ }
};

describe("afterIO in slices: busy chains leave room for sockets", () => {
  it("a round trip through a local echo server stays under 50 ms while ten chains yield and continue", async () => {
    const { SlicedTurns } = await import("../../adapters/sliced_turns.ts");
    const { afterIO } = new SlicedTurns();
    const server = createServer((s) => s.on("data", (d) => s.write(d)));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    const client: Socket = await new Promise((r) => {
      const c = createConnection(port, "127.0.0.1", () => r(c));
    });
    let running = true;
    let steps = 0;
    const chain = () => {
      busy(0.2);
      steps++;
      if (running) afterIO(chain);
    };
    for (let i = 0; i < 10; i++) afterIO(chain);
    let worst = 0;
    try {
      // At least 30 round trips, and on until the chains have run 100 steps (on Bun the
      // first round trips can all complete before the first timer turn), within 5 s.
      const until = performance.now() + 5000;
      for (let i = 0; i < 30 || (steps <= 100 && performance.now() < until); i++) {
        const t0 = performance.now();
        await new Promise<void>((r) => {
          client.once("data", () => r());
          client.write("x");
        });
        worst = Math.max(worst, performance.now() - t0);
      }
    } finally {
      running = false;
      client.destroy();
      server.close();
    }
    assert.ok(steps > 100, `the chains ran only ${steps} steps`);
    assert.ok(worst < 50, `a round trip took ${worst.toFixed(1)} ms`);
  });
});
