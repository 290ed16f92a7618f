// Which job id a put uses, when the put is not a simple one. 1.12 creates the job, and
// so takes the next id, when it reads the put line; the body comes later. So a put
// abandoned mid-body still uses its id, and a put whose body arrives after another
// client's whole put keeps the lower id. (Issue 7, item 6.) The same expectations run
// against beanstalkd 1.12 when it is installed, so they are checked against the reference.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { beanstalkd, bunServer, denoServer, inProcess, type Target } from "../harness/targets.ts";
import { dial, type Wire } from "../harness/wire.ts";

/** Poll `stats` on w until current-producers reaches n: the server has read the put line. */
async function producers(w: Wire, n: number): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const m = /current-producers: (\d+)/.exec(await w.cmd("stats"));
    if (Number(m?.[1]) >= n) return;
    assert.ok(Date.now() < deadline, "the server never read the put line");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A fresh server; client `a` sends a put line and part of its body, and `then` runs
 * once the server has read the line (as seen by client `b`).
 */
async function halfPut(target: Target, then: (a: Wire, b: Wire) => Promise<void>): Promise<void> {
  const r = await target.start([]);
  try {
    const a = await dial(r.addr);
    const b = await dial(r.addr);
    a.send("put 0 0 10 5\r\nab");
    await producers(b, 1);
    await then(a, b);
    a.close();
    b.close();
  } finally {
    await r.stop();
  }
}

function suite(target: Target): void {
  const missing = target.unavailable();
  describe(`put ids: ${target.name}`, { skip: skipUnless(missing === undefined, missing ?? "") }, () => {
    it("a put abandoned mid-body uses up its id", async () => {
      await halfPut(target, async (a, b) => {
        a.close();
        await new Promise((res) => setTimeout(res, 100));
        assert.equal(await b.put("next"), "INSERTED 2\r\n");
      });
    });

    it("a body that arrives after another client's put keeps the id of its line", async () => {
      await halfPut(target, async (a, b) => {
        assert.equal(await b.put("second"), "INSERTED 2\r\n");
        a.send("cde\r\n");
        assert.equal(await a.reply(), "INSERTED 1\r\n");
        // Same priority: the lower id is served first.
        assert.equal(await b.cmd("reserve-with-timeout 0"), "RESERVED 1 5\r\nabcde\r\n");
      });
    });
  });
}

suite(beanstalkd);
suite(inProcess);
suite(RUNTIME === "bun" ? bunServer : denoServer);
