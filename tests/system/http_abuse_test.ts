// The HTTP side port under abuse must not stop the protocol port being served: slow
// requests that dribble their headers, requests with huge headers, and many idle
// connections, all at once, against the server of this file's runtime (deno run or
// bun run) and the compiled binary. Every loop is bounded in count and time.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { dial, type Wire } from "../harness/wire.ts";
import { getText, HTTP_KINDS, type HttpRunning, startWithHttp } from "../harness/http.ts";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { Scrape } from "../harness/prometheus.ts";

const SLOW = 150;
const HUGE = 10;
const HUGE_HEADER_BYTES = 1024 * 1024;
const IDLE = 200;
const ROUNDS = 300;
const MAX_ROUNDS = 50_000;
const SLOW_FOR_MS = 4000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Open a TCP connection; resolves once connected (or with the error). */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port }, () => resolve(s));
    s.once("error", reject);
  });
}

/** Resolves with what the server sent before it closed the socket or `ms` passed. */
function answer(s: Socket, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const done = () => {
      clearTimeout(t);
      resolve(got);
    };
    const t = setTimeout(done, ms);
    s.on("data", (d: Buffer) => (got += d.toString("latin1")));
    s.on("close", done);
    s.on("error", () => {});
  });
}

const kinds = [RUNTIME === "bun" ? HTTP_KINDS.bun : HTTP_KINDS.deno, HTTP_KINDS.binary];

for (const kind of kinds) {
  describe(`the side port under abuse (${kind.name})`, {
    skip: skipUnless(!kind.unavailable(), kind.unavailable() ?? ""),
  }, () => {
    let srv: HttpRunning;
    let w: Wire;
    const sockets: Socket[] = [];
    before(async () => {
      srv = await startWithHttp(kind);
      w = await dial(srv.addr);
    });
    after(async () => {
      for (const s of sockets) s.destroy();
      w?.close();
      await srv?.stop();
    });

    it("keeps serving the protocol port and /healthz through slow, huge and idle HTTP connections", async () => {
      // many idle connections
      for (let i = 0; i < IDLE; i++) sockets.push(await open(srv.httpPort));
      // slow requests: a header line every 100 ms, never finished
      const slow: Socket[] = [];
      for (let i = 0; i < SLOW; i++) {
        const s = await open(srv.httpPort);
        s.on("error", () => {});
        s.write("GET /metrics HTTP/1.1\r\nHost: x\r\n");
        slow.push(s);
        sockets.push(s);
      }
      let dribbling = true;
      const dribble = (async () => {
        const until = Date.now() + SLOW_FOR_MS;
        for (let n = 0; dribbling && Date.now() < until; n++) {
          for (const s of slow) if (!s.destroyed) s.write(`X-Slow-${n}: a\r\n`);
          await sleep(100);
        }
      })();
      // huge headers: the server must refuse or drop them, not buffer without end
      const huge = await Promise.all(Array.from({ length: HUGE }, async () => {
        const s = await open(srv.httpPort);
        sockets.push(s);
        const reply = answer(s, 15_000);
        s.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(HUGE_HEADER_BYTES)}\r\n\r\n`, () => {});
        return reply;
      }));
      if (process.env.TUBEWAY_ABUSE_DEBUG) console.log(huge.map((r) => r.slice(0, 40)));
      // refused with a status (Deno and Bun answer 431) or dropped, never served
      for (const r of huge) assert.match(r, /^(HTTP\/1\.1 (431|413|400) |$)/, "a 1 MiB header is refused");

      // meanwhile the queue is served, every answer right
      assert.equal(await w.cmd("use abuse"), "USING abuse\r\n");
      assert.equal(await w.cmd("watch abuse"), "WATCHING 2\r\n");
      // at least ROUNDS, and on for as long as the slow requests dribble (bounded by MAX_ROUNDS)
      const dribbleEnds = Date.now() + SLOW_FOR_MS;
      let rounds = 0;
      for (let i = 0; i < MAX_ROUNDS && (i < ROUNDS || Date.now() < dribbleEnds); i++, rounds++) {
        const id = /^INSERTED (\d+)\r\n$/.exec(await w.put(`job ${i}`))?.[1];
        assert.ok(id, "put answered INSERTED");
        assert.equal(await w.cmd("reserve-with-timeout 5"), `RESERVED ${id} ${`job ${i}`.length}\r\njob ${i}\r\n`);
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }
      const health = await getText(`${srv.http}/healthz`);
      assert.equal(health.status, 200);
      dribbling = false;
      await dribble;

      for (const s of sockets) s.destroy();
      sockets.length = 0;
      await sleep(200);
      const s = new Scrape((await getText(`${srv.http}/metrics`)).text);
      assert.equal(s.value("beanstalkd_tube_deletes_total", { tube: "abuse" }), rounds);
      assert.equal(await w.cmd("stats-tube abuse").then((y) => /\ntotal-jobs: (\d+)\n/.exec(y)?.[1]), String(rounds));
    });
  });
}
