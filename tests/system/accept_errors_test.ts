// Accept errors belong to one connection or to a passing shortage, never to the
// server: a client reset before the server took it (RST with SO_LINGER 0), or running
// out of file descriptors, must leave the server listening, and a fresh client is
// served as soon as the shortage is over. (Issue 7, item 1: Deno's accept loop used
// to end on the first such error and the process exited with status 0.)
//
// Targets: the server under this file's runtime (deno run / bun run server.ts), as a
// process, since the fd limit has to be its own. TUBEWAY_ACCEPT_REFERENCE=1 runs the
// same cases against beanstalkd 1.12.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { readdirSync, rmSync } from "node:fs";

import { BUN_SERVER, DENO_SERVER, RUNTIME, skipUnless } from "../harness/paths.ts";
import { BEANSTALKD, type Running, startProcess } from "../harness/targets.ts";
import { dial, openSocket, type Wire } from "../harness/wire.ts";
import { dialTls, makeCerts, OPENSSL, tlsFlags } from "../harness/tls.ts";

const REFERENCE = process.env.TUBEWAY_ACCEPT_REFERENCE === "1";

/** argv of the server under test. */
function serverArgv(): string[] | undefined {
  if (REFERENCE) return BEANSTALKD ? [BEANSTALKD] : undefined;
  return RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
}

/** The same server with its open-file limit lowered to `fds` (via the shell's ulimit). */
function limited(argv: string[], fds: number): string[] {
  return ["sh", "-c", `ulimit -n ${fds} && exec "$0" "$@"`, ...argv];
}

/** The server answers a fresh client; returns how long the round trip took (ms). */
async function served(r: Running, open: (addr: { host: string; port: number }) => Promise<Wire>): Promise<number> {
  const t0 = Date.now();
  const w = await open(r.addr);
  try {
    assert.equal(await w.cmd("list-tube-used", 5000), "USING default\r\n", `server output:\n${r.output()}`);
    return Date.now() - t0;
  } finally {
    w.close();
  }
}

function alive(r: Running): void {
  assert.equal(r.child?.exitCode, null, `server exited (${r.child?.exitCode}):\n${r.output()}`);
  assert.equal(r.child?.signalCode, null, `server died of ${r.child?.signalCode}:\n${r.output()}`);
}

const argv = serverArgv();

describe(
  `accept errors: ${RUNTIME} server`,
  { skip: skipUnless(argv !== undefined, "beanstalkd not installed") },
  () => {
    it("clients that reset before being accepted (200 of them) do not stop the server", async () => {
      const r = await startProcess(argv!);
      try {
        const keeper = await dial(r.addr); // an older client, which must stay served too
        const ROUNDS = 200;
        for (let i = 0; i < ROUNDS; i++) {
          const s = await openSocket(r.addr);
          s.on("error", () => {});
          s.resetAndDestroy(); // SO_LINGER 0: RST, usually before the server's accept
        }
        await new Promise((res) => setTimeout(res, 200));
        alive(r);
        await served(r, (addr) => dial(addr, 5000));
        assert.equal(await keeper.cmd("list-tube-used"), "USING default\r\n");
        keeper.close();
      } finally {
        await r.stop();
      }
    });

    /** The out-of-fds case on a server started with `flags`, its clients opened by `open`. */
    async function outOfFds(flags: string[], open: (addr: { host: string; port: number }) => Promise<Wire>) {
      // 64 fds: enough for the runtime to start, far fewer than the clients below.
      const r = await startProcess(limited(argv!, 64), flags);
      const held: Socket[] = [];
      try {
        const keeper = await open(r.addr);
        // Connects succeed at the kernel (the backlog) even when the server cannot accept.
        for (let i = 0; i < 120; i++) {
          const s = await openSocket(r.addr);
          s.on("error", () => {});
          held.push(s);
        }
        await new Promise((res) => setTimeout(res, 500));
        alive(r);
        // The shortage is real: the server holds (nearly) all the fds it may have.
        const fds = readdirSync(`/proc/${r.child!.pid}/fd`).length;
        assert.ok(fds >= 60, `server holds only ${fds} fds: the limit was never reached`);
        // The keeper was accepted before the shortage and is still served during it.
        assert.equal(await keeper.cmd("list-tube-used"), "USING default\r\n");
        for (const s of held.splice(0)) s.destroy();
        await new Promise((res) => setTimeout(res, 300));
        alive(r);
        const ms = await served(r, open);
        // "At once": well under the client's timeout; the back-off is tens of ms.
        assert.ok(ms < 3000, `fresh client took ${ms} ms after fds were freed`);
        assert.equal(await keeper.cmd("list-tube-used"), "USING default\r\n");
        keeper.close();
      } finally {
        for (const s of held) s.destroy();
        await r.stop();
      }
    }

    it("out of file descriptors: keeps listening, and a fresh client is served once fds are free", async () => {
      await outOfFds([], (addr) => dial(addr));
    });

    // On Deno the TLS listener used to be node:tls's own, which in Deno 2.9.6 stops
    // accepting for good at its first EMFILE; deno.ts now hands it connections from its
    // own accept loop. Bun's is Bun.listen's.
    it("the same on a TLS port", {
      skip: REFERENCE ? "beanstalkd has no TLS" : skipUnless(OPENSSL !== undefined, "openssl is not installed"),
    }, async () => {
      const c = makeCerts();
      try {
        await outOfFds(tlsFlags(c), (addr) => dialTls(addr, { ca: c.ca }));
      } finally {
        rmSync(c.dir, { recursive: true, force: true });
      }
    });
  },
);
