// The wire suite's tests of reserve, reserve-with-timeout and reserve-job.
import assert from "node:assert/strict";
import { jobReply, onlyTube, putId, statsJob, timed, tubeName } from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function reserveTests({ it, session }: WireContext): void {
  it("reserve and reserve-with-timeout: RESERVED at once, TIMED_OUT at once for 0, errors", () =>
    session(async (c) => {
      const w = await c.dial();
      await onlyTube(w, "res");
      const id = await putId(w, "job body");
      assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "job body"));
      const sj = await statsJob(w, id);
      assert.equal(sj.str("state"), "reserved");
      assert.equal(sj.num("reserves"), 1);
      assert.ok(sj.num("time-left") >= 58 && sj.num("time-left") <= 60, `time-left ${sj.num("time-left")}`);
      const [r, ms] = await timed(w.cmd("reserve-with-timeout 0"));
      assert.equal(r, "TIMED_OUT\r\n");
      assert.ok(ms < 500, `reserve-with-timeout 0 took ${ms} ms`);
      const id2 = await putId(w, "second");
      assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id2, "second"));
      assert.equal(await w.cmd("reserve x"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("reserve "), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("reserve-with-timeout"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("RESERVE"), "UNKNOWN_COMMAND\r\n");
      for (const j of [id, id2]) assert.equal(await w.cmd(`delete ${j}`), "DELETED\r\n");
    }));

  it("reserve-job: ready, delayed, buried, in any tube; NOT_FOUND when reserved or unknown", () =>
    session(async (c) => {
      const p = await c.dial();
      const w = await c.dial();
      const t = tubeName("rj");
      await p.cmd(`use ${t}`);
      await p.cmd(`watch ${t}`);
      const ready = await putId(p, "ready");
      const delayed = await putId(p, "delayed", 0, 100);
      const buried = await putId(p, "buried", 5);
      assert.equal(await p.cmd(`reserve-job ${buried}`), jobReply("RESERVED", buried, "buried"));
      assert.equal(await p.cmd(`bury ${buried} 5`), "BURIED\r\n");
      // w watches only default: reserve-job ignores the watch list.
      assert.equal(await w.cmd(`reserve-job ${delayed}`), jobReply("RESERVED", delayed, "delayed"));
      assert.equal(await w.cmd(`reserve-job ${buried}`), jobReply("RESERVED", buried, "buried"));
      assert.equal(await w.cmd(`reserve-job ${ready}`), jobReply("RESERVED", ready, "ready"));
      assert.equal(await w.cmd(`reserve-job ${ready}`), "NOT_FOUND\r\n", "already reserved (by self)");
      assert.equal(await p.cmd(`reserve-job ${ready}`), "NOT_FOUND\r\n", "reserved by another");
      assert.equal(await w.cmd("reserve-job 0"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("reserve-job x"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("reserve-job"), "BAD_FORMAT\r\n");
      const sj = await statsJob(w, delayed);
      assert.equal(sj.str("state"), "reserved");
      assert.equal(sj.num("reserves"), 1);
      for (const id of [ready, delayed, buried]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    }));
}
