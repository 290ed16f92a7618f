// docs/tls.md's two ways for a stock client to reach the TLS port under mTLS: natively,
// where the client lets you hand it a TLS socket (pheanstalk's SocketFactoryInterface),
// and otherwise through stunnel in client mode next to the worker (that page's config,
// with this test's certificates) with the unchanged npm client fivebeans running its
// whole check script through it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { which } from "../../scripts/machine.ts";
import { freePort, type Running, startProcess, stopChild } from "../harness/targets.ts";
import { type Certs, makeCerts, OPENSSL, tlsFlags } from "../harness/tls.ts";
import { dial } from "../harness/wire.ts";

const STUNNEL = which("/usr/bin/stunnel4") ?? which("stunnel4") ?? which("stunnel");
const NODE = which("node");
const PHP = which("php");
const PHEANSTALK_AUTOLOAD = process.env.PHEANSTALK_AUTOLOAD || "/usr/share/php/Pheanstalk/autoload.php";

/** Run a client program; never rejects. */
function runClient(cmd: string, args: string[]): Promise<{ err: Error | null; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      cmd,
      args,
      { cwd: ROOT, timeout: 120_000, killSignal: "SIGKILL" },
      (err, stdout, stderr) => resolve({ err, stdout: String(stdout), stderr: String(stderr) }),
    )
  );
}
const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];

/** stunnel in client mode, as in docs/tls.md; with or without this worker's certificate. */
async function startStunnel(c: Certs, tlsPort: number, withCert: boolean) {
  const port = await freePort();
  const conf = join(c.dir, `stunnel-${port}.conf`);
  writeFileSync(
    conf,
    [
      "foreground = yes",
      "pid =",
      "[beanstalk]",
      "client = yes",
      `accept = 127.0.0.1:${port}`,
      `connect = 127.0.0.1:${tlsPort}`,
      `CAfile = ${c.ca}`,
      "verifyChain = yes",
      "checkHost = localhost",
      ...(withCert ? [`cert = ${c.clientCert}`, `key = ${c.clientKey}`] : []),
      "",
    ].join("\n"),
  );
  const child = spawn(STUNNEL!, [conf], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d));
  child.stderr!.on("data", (d: Buffer) => (log += d));
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      (await dial({ host: "127.0.0.1", port }, 1000)).close();
      break;
    } catch {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`stunnel did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { port, stop: () => stopChild(child), log: () => log };
}

describe(`stock clients over TLS (${RUNTIME})`, {
  skip: skipUnless(!!STUNNEL && !!OPENSSL && !!NODE, "stunnel4, openssl or node is not installed"),
}, () => {
  let c: Certs;
  let server: Running;
  let tlsPort: number;
  before(async () => {
    c = makeCerts();
    tlsPort = await freePort();
    server = await startProcess(SERVER, tlsFlags(c, { tlsPort, mtls: true }));
  });
  after(async () => {
    await server?.stop();
    rmSync(c.dir, { recursive: true, force: true });
  });

  it("fivebeans passes its checks through stunnel with the worker's certificate", async () => {
    const tunnel = await startStunnel(c, tlsPort, true);
    try {
      const out = await runClient(NODE!, [
        join(ROOT, "tests", "system", "clients", "fivebeans.mjs"),
        "127.0.0.1",
        `${tunnel.port}`,
      ]);
      assert.equal(out.err, null, `${out.stderr}\n${out.stdout}\n--- stunnel ---\n${tunnel.log()}`);
      assert.match(out.stdout, /^fivebeans: ok \(\d+ checks\)/m);
    } finally {
      await tunnel.stop();
    }
  });

  it("without the worker's certificate, the server turns the tunnel away", async () => {
    const tunnel = await startStunnel(c, tlsPort, false);
    try {
      const w = await dial({ host: "127.0.0.1", port: tunnel.port });
      w.send("list-tube-used\r\n");
      await w.closed(15_000);
      assert.equal(w.pending, "", "no reply through a tunnel without a client certificate");
      const plain = await dial(server.addr);
      assert.equal(await plain.cmd("list-tube-used"), "USING default\r\n", "the plain port still serves");
      plain.close();
    } finally {
      await tunnel.stop();
    }
  });

  it("pheanstalk connects natively with a TLS socket factory and its certificate", {
    skip: skipUnless(!!PHP && existsSync(PHEANSTALK_AUTOLOAD), "php or pheanstalk is not installed"),
  }, async () => {
    const script = join(ROOT, "tests", "system", "clients", "pheanstalk_tls.php");
    const out = await runClient(PHP!, [script, "127.0.0.1", `${tlsPort}`, c.ca, c.clientCert, c.clientKey]);
    assert.equal(out.err, null, `${out.stderr}\n${out.stdout}`);
    assert.equal(out.stdout, "pheanstalk-tls: ok\n");
    const without = await runClient(PHP!, [script, "127.0.0.1", `${tlsPort}`, c.ca, "-", "-"]);
    assert.notEqual(without.err, null, `without a client certificate it must fail: ${without.stdout}`);
    assert.doesNotMatch(without.stdout, /ok/);
  });
});
