// The whole wire suite against a socket-activated server under deno test: on Deno an
// inherited socket is served by node:net (adapters/node_net.ts), not by Deno.listen, so
// that path gets every protocol test too. (Bun serves an inherited socket with the same
// Bun.listen handlers as any other.)

import { DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { activatedTarget } from "../harness/activation.ts";
import { wireSuite } from "./wire_suite.ts";

if (RUNTIME === "deno") {
  wireSuite(
    activatedTarget(
      "deno run server.ts, socket-activated",
      () => Promise.resolve([...DENO_SERVER]),
    ),
  );
}
