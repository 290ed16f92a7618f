// The wire suite's tests of drain mode, on a server of its own (draining is permanent).
import assert from "node:assert/strict";
import { Conns, eventually, jobReply, putId, stats } from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function drainTests({ it, v112, target }: WireContext): void {
  it("drain mode: put answers DRAINING, reserve and delete still work", async () => {
    const r = await target.start([]);
    const c = new Conns(r.addr);
    try {
      assert.ok(r.drain, "the target can drain");
      const w = await c.dial();
      const before = await putId(w, "before drain");
      r.drain();
      await eventually("stats shows draining", async () => (await stats(w)).str("draining"), (d) => d === "true");
      assert.equal(await w.put("after drain"), "DRAINING\r\n");
      w.send("put 0 0 60 3\r\nabcde\r\n");
      assert.equal(await w.reply(), "EXPECTED_CRLF\r\n", "the CRLF check comes first");
      assert.equal(await w.reply(), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", before, "before drain"));
      assert.equal(await w.cmd(`release ${before} 0 0`), "RELEASED\r\n");
      assert.equal(await w.cmd("use other"), "USING other\r\n");
      assert.equal(await w.cmd("reserve"), jobReply("RESERVED", before, "before drain"));
      assert.equal(await w.cmd(`delete ${before}`), "DELETED\r\n");
      const s = await stats(w);
      assert.equal(s.num("current-jobs-ready"), 0);
      assert.equal(s.num("total-jobs"), 1);
      assert.equal(s.num("cmd-put"), 3);
      // 1.12 logs every refused put as "server error: DRAINING"; tubeway does not: it is
      // the expected answer in drain mode, not a fault.
      if (v112) assert.match(r.output(), /server error: DRAINING/);
      else assert.doesNotMatch(r.output(), /server error/);
    } finally {
      c.closeAll();
      await r.stop();
    }
  });
}
