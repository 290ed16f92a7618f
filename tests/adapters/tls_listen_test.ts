// The TLS listeners of this runtime (Deno: node:tls, see adapters/deno.ts; Bun:
// Bun.listen's tls option), in-process: a TLS client is served like a plain one; a
// client that fails or stalls its handshake is dropped, is never counted as a
// connection, and disturbs nobody.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { listen, type Listening } from "../../adapters/listen.ts";
import { Service } from "../../protocol/service.ts";
import { memoryEngine } from "../../core/memory/queue.ts";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import {
  type Certs,
  dialTls,
  HALF_CLIENT_HELLO,
  makeCerts,
  OPENSSL,
  refused,
  roundTrip,
  stat,
} from "../harness/tls.ts";
import { dial } from "../harness/wire.ts";

const HANDSHAKE_MS = 300;

/** Bigger than any TLS record (16 KiB) and any single socket write: exercises partial writes and back-pressure. */
const BIG_BODY_BYTES = 3_000_000;

async function serve(certs: Certs, mtls: boolean) {
  const logs: string[] = [];
  const svc = new Service(memoryEngine({ maxJobSize: BIG_BODY_BYTES }), {
    verbose: 1,
    log: (l) => logs.push(l),
    error: (l) => logs.push(l),
  });
  const tls = {
    cert: readFileSync(certs.serverCert, "utf8"),
    key: readFileSync(certs.serverKey, "utf8"),
    ...(mtls ? { ca: readFileSync(certs.ca, "utf8") } : {}),
  };
  const l: Listening = await listen(svc, { host: "127.0.0.1", port: 0 }, { tls, handshakeTimeoutMs: HANDSHAKE_MS });
  const addr = { host: "127.0.0.1", port: (l.address as { port: number }).port };
  return {
    svc,
    addr,
    logs,
    stop: () => {
      l.close();
      svc.close();
    },
  };
}

describe(`TLS listener in-process (${RUNTIME})`, { skip: skipUnless(!!OPENSSL, "openssl is not installed") }, () => {
  let certs: Certs;
  before(() => (certs = makeCerts()));
  after(() => rmSync(certs.dir, { recursive: true, force: true }));

  it("serves put/reserve/delete over TLS; garbage and stalled handshakes are dropped uncounted", async () => {
    const s = await serve(certs, false);
    try {
      const keeper = await dialTls(s.addr, { ca: certs.ca });
      await roundTrip(keeper, "over tls");

      // A stalled handshake holds a socket but is not a beanstalkd connection.
      const stalled = await dial(s.addr);
      stalled.send(HALF_CLIENT_HELLO);
      const yaml = await keeper.cmd("stats");
      assert.equal(stat(yaml, "current-connections"), 1, "only the finished handshake counts");
      await roundTrip(keeper, "while one stalls");
      await stalled.closed(HANDSHAKE_MS + 5000);

      for (const garbage of ["put 0 0 60 2\r\nhi\r\n", new Uint8Array(300).map((_, i) => (i * 7919) % 256)]) {
        const g = await dial(s.addr);
        g.send(garbage);
        await g.closed(5000);
        // At most a TLS alert record (content type 21), never a beanstalkd reply.
        assert.ok(g.pending === "" || g.pending.charCodeAt(0) === 0x15, "a non-TLS client gets no beanstalkd reply");
        assert.doesNotMatch(g.pending, /INSERTED|\r\n/);
        await roundTrip(keeper, "after garbage");
      }
      const late = await dialTls(s.addr, { ca: certs.ca });
      await roundTrip(late, "a new client");
      const after = await late.cmd("stats");
      assert.equal(stat(after, "total-connections"), 2, "garbage and stalled sockets never became connections");
      keeper.close();
      late.close();
    } finally {
      s.stop();
    }
  });

  it("carries big bodies and pipelined commands both ways, and answers a client that half-closed", async () => {
    const s = await serve(certs, false);
    try {
      const w = await dialTls(s.addr, { ca: certs.ca });
      const body = Buffer.alloc(BIG_BODY_BYTES, "abcdefghij").toString("latin1");
      assert.equal(await w.put(body), "INSERTED 1\r\n");
      w.send("reserve-with-timeout 0\r\n");
      assert.equal(await w.line(20_000), `RESERVED 1 ${BIG_BODY_BYTES}`);
      assert.ok((await w.bytes(BIG_BODY_BYTES + 2, 20_000)).toString("latin1") === body + "\r\n", "body intact");
      const n = 2000;
      w.send(Array.from({ length: n }, (_, i) => `put 0 0 60 ${String(i).length}\r\n${i}\r\n`).join(""));
      for (let i = 0; i < n; i++) assert.equal(await w.reply(20_000), `INSERTED ${i + 2}\r\n`);
      // A waiting reserve, then the client closes its sending side: 1.12 answers TIMED_OUT.
      assert.equal(await w.cmd("delete 1"), "DELETED\r\n");
      const waiter = await dialTls(s.addr, { ca: certs.ca });
      assert.equal(await waiter.cmd("watch empty"), "WATCHING 2\r\n");
      assert.equal(await waiter.cmd("ignore default"), "WATCHING 1\r\n");
      waiter.send("reserve-with-timeout 1\r\n");
      waiter.end();
      assert.equal(await waiter.reply(10_000), "TIMED_OUT\r\n");
      await waiter.closed();
      w.close();
    } finally {
      s.stop();
    }
  });

  it("with a CA: refuses clients without a certificate or with one from another CA, serves CA-signed ones", async () => {
    const s = await serve(certs, true);
    try {
      const good = { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey };
      const keeper = await dialTls(s.addr, good);
      await roundTrip(keeper, "signed client");
      assert.ok(await refused(s.addr, { ca: certs.ca }), "no client certificate");
      await roundTrip(keeper, "after a refusal");
      assert.ok(await refused(s.addr, { ca: certs.ca, cert: certs.strangerCert, key: certs.strangerKey }), "wrong CA");
      const stalled = await dial(s.addr);
      stalled.send(HALF_CLIENT_HELLO);
      await roundTrip(keeper, "while one stalls");
      await stalled.closed(HANDSHAKE_MS + 5000);
      const second = await dialTls(s.addr, good);
      await roundTrip(second, "another signed client");
      assert.equal(stat(await second.cmd("stats"), "total-connections"), 2, "refused clients never became connections");
      assert.deepEqual(s.logs.filter((l) => l.startsWith("accept")), [
        "accept 1 client=CN=worker-1",
        "accept 2 client=CN=worker-1",
      ]);
      keeper.close();
      second.close();
    } finally {
      s.stop();
    }
  });
});
