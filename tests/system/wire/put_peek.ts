// The wire suite's tests of put, peek and delete: the happy path, the errors of put, and peek in every state.
import assert from "node:assert/strict";
import { jobReply, putId, statsJob, tubeName } from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function putPeekTests({ it, session, q }: WireContext): void {
  it("put, peek and delete: happy path", () =>
    session(async (c) => {
      const w = await c.dial();
      const t = tubeName("put");
      assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`);
      const id = await putId(w, "hello");
      assert.equal(await w.cmd(`peek ${id}`), jobReply("FOUND", id, "hello"));
      assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", id, "hello"));
      const sj = await statsJob(w, id);
      assert.equal(sj.str("tube"), q(t));
      assert.equal(sj.str("state"), "ready");
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      assert.equal(await w.cmd(`delete ${id}`), "NOT_FOUND\r\n");
      assert.equal(await w.cmd(`peek ${id}`), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek-ready"), "NOT_FOUND\r\n");
      // Zero-length body, extreme pri, ttr 0 raised to 1.
      const z = await putId(w, "", 4294967295, 0, 0);
      assert.equal(await w.cmd(`peek ${z}`), jobReply("FOUND", z, ""));
      const zs = await statsJob(w, z);
      assert.equal(zs.num("pri"), 4294967295);
      assert.equal(zs.num("ttr"), 1);
      assert.equal(await w.cmd(`delete ${z}`), "DELETED\r\n");
      // Several spaces between arguments are fine.
      w.send("put  1   0  5    1\r\nx\r\n");
      const m = /^INSERTED (\d+)\r\n$/.exec(await w.reply());
      assert.ok(m);
      assert.equal(await w.cmd(`delete ${m[1]}`), "DELETED\r\n");
    }));

  it("put errors: bad lines, EXPECTED_CRLF uses an id, JOB_TOO_BIG, the 65535 limit", () =>
    session(async (c) => {
      const w = await c.dial();
      const t = tubeName("puterr");
      await w.cmd(`use ${t}`);
      assert.equal(await w.cmd("put"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("put 0 0 60"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("put -1 0 60 1"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("put 4294967296 0 60 1"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("put 0 x 60 1"), "BAD_FORMAT\r\n");
      // BAD_FORMAT consumes no body: the body line is read as a command.
      w.send("put 0 0 60 1 junk\r\nx\r\n");
      assert.equal(await w.reply(), "BAD_FORMAT\r\n");
      assert.equal(await w.reply(), "UNKNOWN_COMMAND\r\n");
      const a = await putId(w, "a");
      w.send("put 0 0 60 3\r\nabcde\r\n");
      assert.equal(await w.reply(), "EXPECTED_CRLF\r\n");
      assert.equal(await w.reply(), "UNKNOWN_COMMAND\r\n", "the bytes after the body are the next command");
      const b = await putId(w, "b");
      assert.equal(b, a + 2, "EXPECTED_CRLF uses up a job id");
      const max = "m".repeat(65535);
      const big = await putId(w, max);
      assert.equal(await w.cmd(`peek ${big}`), jobReply("FOUND", big, max));
      w.send(`put 0 0 60 65536\r\n${"m".repeat(65536)}\r\n`);
      assert.equal(await w.reply(), "JOB_TOO_BIG\r\n");
      const after = await putId(w, "c");
      assert.equal(after, big + 1, "JOB_TOO_BIG uses up no id");
      for (const id of [a, b, big, after]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    }));

  it("peek: any tube, any state; peek-ready/-delayed/-buried look at the used tube", () =>
    session(async (c) => {
      const w = await c.dial();
      const t = tubeName("peek");
      await w.cmd(`use ${t}`);
      assert.equal(await w.cmd("peek-ready"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek-delayed"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek-buried"), "NOT_FOUND\r\n");
      const late = await putId(w, "late", 0, 99);
      const soon = await putId(w, "soon", 0, 50);
      const r2 = await putId(w, "r2", 7);
      const r1 = await putId(w, "r1", 3);
      assert.equal(await w.cmd("peek-delayed"), jobReply("FOUND", soon, "soon"), "earliest deadline first");
      assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", r1, "r1"), "lowest pri first");
      // From another connection using another tube: peek <id> still finds it; peek-ready does not.
      const o = await c.dial();
      assert.equal(await o.cmd(`peek ${late}`), jobReply("FOUND", late, "late"));
      assert.equal(await o.cmd("peek-ready"), "NOT_FOUND\r\n", "default tube has nothing ready from this test");
      assert.equal(await w.cmd("peek 0"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek 18446744073709551615"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek 18446744073709551616"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("peek 111foo"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("peek"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("peek-ready "), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd(`peek 000${r2}`), jobReply("FOUND", r2, "r2"), "leading zeros");
      for (const id of [late, soon, r2, r1]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    }));
}
