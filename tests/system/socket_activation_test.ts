// systemd socket activation, as Debian's beanstalkd.socket uses it: the listening socket
// arrives as fd 3 with LISTEN_FDS/LISTEN_PID, and the server serves it instead of
// binding -l/-p (warning about them, as 1.12 does). Run through systemd-socket-activate
// (Debian's systemd package) against this runtime's server, the compiled binary (under
// bun test) and the real beanstalkd 1.12, on 127.0.0.1 and a free port, and on a UNIX path.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO, DENO_SERVER, ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { ACTIVATE, activate, dialActivated, NO_ACTIVATE, soon } from "../harness/activation.ts";
import { BEANSTALKD, buildBinary, freePort, startProcess, stopChild } from "../harness/targets.ts";
import { type Address, dial } from "../harness/wire.ts";
import { dialTls, makeCerts, OPENSSL, refused, tlsFlags } from "../harness/tls.ts";

const skip = skipUnless(ACTIVATE !== undefined, NO_ACTIVATE);

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];

const dir = mkdtempSync(join(tmpdir(), "tubeway-activate-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The same conversation with every server: one put, its stats, a second client. */
async function converse(addr: Address): Promise<string[]> {
  const a = await dialActivated(addr);
  const replies = [await a.put("activated"), await a.cmd("list-tube-used")];
  const b = await dial(addr);
  replies.push(await b.cmd("peek-ready"));
  a.close();
  b.close();
  return replies;
}

const EXPECTED = ["INSERTED 1\r\n", "USING default\r\n", "FOUND 1 9\r\nactivated\r\n"];

/** The servers to activate: this runtime's, the compiled binary (once, under bun test), beanstalkd. */
const servers: [string, () => Promise<string[]>][] = [
  [`${RUNTIME} server.ts`, () => Promise.resolve(SERVER)],
  ...(RUNTIME === "bun"
    ? [["compiled binary", async () => [await buildBinary()]] as [string, () => Promise<string[]>]]
    : []),
];

describe(`socket activation (${RUNTIME})`, { skip }, () => {
  for (const [name, argv] of servers) {
    it(`${name} serves the inherited TCP socket and ignores -l/-p as 1.12 does`, { timeout: 120_000 }, async () => {
      const port = await freePort();
      const s = activate(`127.0.0.1:${port}`, [...await argv(), "-V", "-l", "127.0.0.1", "-p", "1"]);
      try {
        assert.deepEqual(await converse({ host: "127.0.0.1", port }), EXPECTED);
        assert.match(s.output(), /WARN +inherited listen fd; ignoring option: -l 127\.0\.0\.1$/m);
        assert.match(s.output(), /WARN +inherited listen fd; ignoring option: -p 1$/m);
      } finally {
        await stopChild(s.child);
      }
    });

    it(`${name} speaks TLS (mTLS here) on the inherited socket with --tls-cert`, {
      skip: skipUnless(OPENSSL !== undefined, "openssl is not installed"),
      timeout: 120_000,
    }, async () => {
      const c = makeCerts();
      const port = await freePort();
      const addr = { host: "127.0.0.1", port };
      const s = activate(`127.0.0.1:${port}`, [...await argv(), ...tlsFlags(c, { mtls: true })]);
      try {
        const w = await soon(() =>
          dialTls(addr, { ca: c.ca, cert: c.clientCert, key: c.clientKey, timeoutMs: 20_000 })
        );
        assert.equal(await w.put("over tls"), "INSERTED 1\r\n");
        w.close();
        assert.ok(await refused(addr, { ca: c.ca }), "a client without a certificate is refused");
      } finally {
        await stopChild(s.child);
        rmSync(c.dir, { recursive: true, force: true });
      }
    });

    it(`${name} serves an inherited UNIX socket`, { timeout: 120_000 }, async () => {
      const path = join(dir, `${name.replace(/\W/g, "_")}.sock`);
      const s = activate(path, await argv());
      try {
        assert.deepEqual(await converse({ path }), EXPECTED);
      } finally {
        await stopChild(s.child);
      }
    });
  }

  it("beanstalkd 1.12 answers the same and warns the same way", {
    skip: skipUnless(BEANSTALKD !== undefined, "beanstalkd is not installed"),
    timeout: 60_000,
  }, async () => {
    const port = await freePort();
    const s = activate(`127.0.0.1:${port}`, [BEANSTALKD!, "-l", "127.0.0.1", "-p", "1"]);
    try {
      assert.deepEqual(await converse({ host: "127.0.0.1", port }), EXPECTED);
      assert.match(s.output(), /: inherited listen fd; ignoring option: -l 127\.0\.0\.1$/m);
    } finally {
      await stopChild(s.child);
    }
  });

  if (RUNTIME === "deno") {
    it(
      "deno run without --allow-env cannot see LISTEN_FDS and still starts on -l/-p",
      { timeout: 60_000 },
      async () => {
        const s = await startProcess([
          DENO,
          "run",
          "--no-prompt",
          "--allow-net",
          "--allow-read",
          "--allow-write",
          "--allow-sys",
          join(ROOT, "server.ts"),
        ]);
        try {
          const w = await dial(s.addr);
          assert.equal(await w.cmd("list-tube-used"), "USING default\r\n");
          w.close();
        } finally {
          await s.stop();
        }
      },
    );
  }

  it("a connected socket (Accept=yes) is refused with exit 111, as 1.12 refuses it", { timeout: 60_000 }, async () => {
    for (const argv of [SERVER, ...(BEANSTALKD ? [[BEANSTALKD]] : [])]) {
      const port = await freePort();
      const s = activate(`127.0.0.1:${port}`, argv, ["--accept"]);
      try {
        const w = await dialActivated({ host: "127.0.0.1", port });
        await w.closed();
        const deadline = Date.now() + 20_000;
        while (!/died with code/.test(s.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        assert.match(s.output(), /died with code 111/, s.output());
        if (argv === SERVER) {
          assert.match(s.output(), /ERROR cannot listen on inherited fd 3: Invalid argument exit=111$/m);
        }
      } finally {
        await stopChild(s.child);
      }
    }
  });

  it(`an inherited fd that is not a socket: exit 111 with the reason, as 1.12 exits 111`, {
    timeout: 60_000,
  }, async () => {
    // -l/-p too, so that a server that wrongly ignored the variables would bind loopback only.
    const flags = ["-l", "127.0.0.1", "-p", String(await freePort())];
    for (const argv of [SERVER, ...(BEANSTALKD ? [[BEANSTALKD]] : [])]) {
      // LISTEN_PID must be the server's own pid: set it in the shell that execs the server.
      const child = spawn("sh", ["-c", 'LISTEN_FDS=1 LISTEN_PID=$$ exec "$@" 3</dev/null', "sh", ...argv, ...flags], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let err = "";
      child.stderr!.on("data", (d: Buffer) => (err += d));
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      assert.equal(code, 111, `${argv[0]}: ${err}`);
      assert.match(err, /inherited fd (3 )?is not a TCP or UNIX listening socket/);
    }
  });
});
