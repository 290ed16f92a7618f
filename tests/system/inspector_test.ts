// SIGUSR1 is beanstalkd's drain signal. Deno (2.9.2 and later) also starts its V8
// inspector on 127.0.0.1:9229 on SIGUSR1; tubeway must drain and not leave a debugger
// port open. Usually the runtime's inspector cannot start at all (tubeway holds the port
// first); when the runtime wins that race (seen under load) it is closed within
// milliseconds, so the check is: no debugger answers later than CLOSED_WITHIN_MS after
// the signal, and the port is closed at the end. Checked with the serve task's
// permissions (deno run as README documents it) under deno test, and with bun run and the
// compiled binary under bun test (Bun 1.4.5 has no such activation; newer Bun may, on
// 6499 or 9229, so both ports are watched).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";

import { BUN_SERVER, RUNTIME, serveTaskArgv } from "../harness/paths.ts";
import { buildBinary, startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";

const PORTS = [9229, 6499];
/** Deno installs its SIGUSR1 inspector listener 500 ms after start; signal well after. */
const SETTLE_MS = 1500;
const WATCH_MS = 3000;
/** Generous for a loaded machine; the runtime's debugger stays open forever without tubeway's guard. */
const CLOSED_WITHIN_MS = 1000;

/** What is at 127.0.0.1:port: nothing, a socket that says nothing, or an HTTP server (a debugger). */
function probe(port: number): Promise<"closed" | "silent" | "http"> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    let got = "";
    const done = (r: "closed" | "silent" | "http") => {
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done("silent"), 300);
    s.once("connect", () => s.write("GET /json/version HTTP/1.0\r\n\r\n"));
    s.on("data", (d: Buffer) => {
      got += d;
      if (got.startsWith("HTTP/")) done("http");
    });
    s.once("error", () => done("closed"));
    s.once("close", () => done(got.startsWith("HTTP/") ? "http" : "closed"));
  });
}

const servers: [string, () => Promise<string[]>][] = RUNTIME === "bun"
  ? [["bun run server.ts", () => Promise.resolve([...BUN_SERVER])], [
    "compiled binary",
    async () => [await buildBinary()],
  ]]
  : [[
    "deno run as the serve task runs it",
    () => Promise.resolve(serveTaskArgv()),
  ]];

describe(`SIGUSR1 drains and opens no debugger port (${RUNTIME})`, () => {
  for (const [name, argv] of servers) {
    it(name, { timeout: 120_000 }, async () => {
      for (const port of PORTS) {
        assert.equal(await probe(port), "closed", `127.0.0.1:${port} is in use by another program: cannot check`);
      }
      const s = await startProcess(await argv());
      try {
        const w = await dial(s.addr);
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        const signalled = Date.now();
        process.kill(s.child!.pid!, "SIGUSR1");
        while (Date.now() < signalled + WATCH_MS) {
          for (const port of PORTS) {
            if (await probe(port) !== "http") continue;
            const afterMs = Date.now() - signalled;
            assert.ok(afterMs < CLOSED_WITHIN_MS, `a debugger still answers on ${port} ${afterMs} ms after SIGUSR1`);
          }
          await new Promise((r) => setTimeout(r, 10));
        }
        for (const port of PORTS) assert.equal(await probe(port), "closed", `${port} is closed at the end`);
        assert.equal(await w.put("x"), "DRAINING\r\n");
        assert.equal(await w.cmd("list-tube-used"), "USING default\r\n");
        w.close();
      } finally {
        await s.stop();
      }
    });
  }
});
