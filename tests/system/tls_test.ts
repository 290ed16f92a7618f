// TLS and mTLS on the protocol port, through the real executable: `deno run server.ts`
// under deno test; `bun run server.ts` and the compiled binary under bun test.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, RUNTIME, skipUnless } from "../harness/paths.ts";
import { buildBinary, freePort, startProcess } from "../harness/targets.ts";
import {
  type Certs,
  dialTls,
  HALF_CLIENT_HELLO,
  makeCerts,
  OPENSSL,
  refused,
  roundTrip,
  type TlsDialOptions,
  tlsFlags,
} from "../harness/tls.ts";
import { dial, type Wire } from "../harness/wire.ts";

const executables: { name: string; argv: () => Promise<string[]> }[] = RUNTIME === "deno"
  ? [{ name: "deno run server.ts", argv: () => Promise.resolve([...DENO_SERVER]) }]
  : [
    { name: "bun run server.ts", argv: () => Promise.resolve([...BUN_SERVER]) },
    { name: "compiled binary", argv: async () => [await buildBinary()] },
  ];

/** The TLS listener opens just after the plain one: retry the first dial for a while. */
async function dialTlsSoon(addr: { host: string; port: number }, opts: TlsDialOptions): Promise<Wire> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await dialTls(addr, opts);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

for (const exe of executables) {
  describe(
    `TLS on the protocol port (${exe.name})`,
    { skip: skipUnless(!!OPENSSL, "openssl is not installed") },
    () => {
      let c: Certs;
      before(() => (c = makeCerts()));
      after(() => rmSync(c.dir, { recursive: true, force: true }));

      it("--tls-cert/--tls-key: the -l/-p port speaks TLS; garbage handshakes leave other clients served", async () => {
        const s = await startProcess(await exe.argv(), ["-V", ...tlsFlags(c)]);
        try {
          const w = await dialTls(s.addr, { ca: c.ca });
          await roundTrip(w, "hello over TLS");
          const raw = [
            "put 0 0 60 2\r\nhi\r\n", // a stock client pointed at the TLS port by mistake
            new Uint8Array(512).map((_, i) => (i * 131 + 7) % 256),
          ];
          for (const bytes of raw) {
            const g = await dial(s.addr);
            g.send(bytes);
            await g.closed(10_000);
            assert.doesNotMatch(g.pending, /INSERTED|\r\n/, "no beanstalkd reply over plain TCP");
            await roundTrip(w, "after garbage");
          }
          const stalled = await dial(s.addr);
          stalled.send(HALF_CLIENT_HELLO);
          const second = await dialTls(s.addr, { ca: c.ca });
          await roundTrip(second, "while a handshake stalls");
          await roundTrip(w, "the first client too");
          stalled.close();
          w.close();
          second.close();
          assert.match(s.output(), new RegExp(`listening plain=off tls=127\\.0\\.0\\.1:${s.addr.port} `));
        } finally {
          await s.stop();
        }
      });

      it("--tls HOST:PORT beside the plain port, with --tls-ca: one queue, CA-signed clients only on TLS", async () => {
        const tlsPort = await freePort();
        const s = await startProcess(await exe.argv(), ["-V", ...tlsFlags(c, { tlsPort, mtls: true })]);
        try {
          const tlsAddr = { host: "127.0.0.1", port: tlsPort };
          const signed = { ca: c.ca, cert: c.clientCert, key: c.clientKey };
          const secure = await dialTlsSoon(tlsAddr, signed);
          const plain = await dial(s.addr);
          assert.equal(await plain.put("from the plain port"), "INSERTED 1\r\n");
          assert.equal(await secure.cmd("reserve-with-timeout 0"), "RESERVED 1 19\r\nfrom the plain port\r\n");
          assert.equal(await secure.cmd("delete 1"), "DELETED\r\n");

          assert.ok(await refused(tlsAddr, { ca: c.ca }), "a client without a certificate is refused");
          assert.ok(await refused(tlsAddr, { ca: c.ca, cert: c.strangerCert, key: c.strangerKey }), "another CA's");
          const g = await dial(tlsAddr);
          g.send("stats\r\n");
          await g.closed(10_000);
          await roundTrip(plain, "plain still served");
          await roundTrip(secure, "TLS still served");
          const yaml = await plain.cmd("stats");
          // startProcess's readiness probe, plain and secure; none of the refused ones.
          assert.match(yaml, /\ntotal-connections: 3\n/, "refused clients are not connections");
          assert.match(s.output(), /INFO {2}accept \d+ client=CN=worker-1$/m, "-V names the client certificate");
          plain.close();
          secure.close();
          assert.match(
            s.output(),
            new RegExp(
              `listening plain=127\\.0\\.0\\.1:${s.addr.port} tls=127\\.0\\.0\\.1:${tlsPort} client-certs=required `,
            ),
          );
        } finally {
          await s.stop();
        }
      });

      it("unusable TLS files stop startup with exit 78 and the cause; incomplete flags exit 5", async () => {
        const argv = await exe.argv();
        const run = (...flags: string[]) => {
          const r = spawnSync(argv[0]!, [...argv.slice(1), "-l", "127.0.0.1", "-p", "0", ...flags], {
            encoding: "utf8",
            timeout: 60_000,
          });
          return { code: r.status, err: r.stderr };
        };
        const missing = join(c.dir, "missing.pem");
        const notPem = join(c.dir, "not.pem");
        writeFileSync(notPem, "not a certificate\n");
        const cases: [string[], RegExp][] = [
          [
            ["--tls-cert", missing, "--tls-key", c.serverKey],
            /ERROR --tls-cert \S+missing\.pem: cannot read it: no such file exit=78$/m,
          ],
          [["--tls-cert", c.serverCert, "--tls-key", notPem], /--tls-key \S+not\.pem: not a usable PEM private key/],
          [["--tls-cert", c.serverCert, "--tls-key", c.clientKey], /is not the key of the certificate in --tls-cert/],
          [
            ["--tls-cert", c.serverCert, "--tls-key", c.serverKey, "--tls-ca", notPem],
            /--tls-ca \S+: no PEM certificate/,
          ],
        ];
        for (const [flags, message] of cases) {
          const r = run(...flags);
          assert.equal(r.code, 78, `${flags.join(" ")}: ${r.err}`);
          assert.match(r.err, message);
        }
        const half = run("--tls-cert", c.serverCert);
        assert.equal(half.code, 5, half.err);
        assert.equal(half.err, "tubeway: --tls-cert needs both --tls-cert FILE and --tls-key FILE\n");
      });
    },
  );
}
