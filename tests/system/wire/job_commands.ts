// The wire suite's tests of what a worker does with a job (delete, release, bury, kick, kick-job, touch), pause-
// tube, quit.
import assert from "node:assert/strict";
import { jobReply, onlyTube, putId, statsJob, statsTube, tubeName } from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function jobCommandTests({ it, session }: WireContext): void {
  it("delete: ready, delayed, buried and own reserved jobs; NOT_FOUND for another's", () =>
    session(async (c) => {
      const a = await c.dial();
      const b = await c.dial();
      await onlyTube(a, "del");
      const res = await putId(a, "res");
      assert.equal(await a.cmd("reserve"), jobReply("RESERVED", res, "res"));
      const ready = await putId(a, "ready");
      const delayed = await putId(a, "delayed", 0, 100);
      assert.equal(await a.cmd("reserve"), jobReply("RESERVED", ready, "ready"));
      assert.equal(await a.cmd(`bury ${ready} 0`), "BURIED\r\n");
      const ready2 = await putId(a, "ready2");
      assert.equal(await b.cmd(`delete ${res}`), "NOT_FOUND\r\n", "reserved by another connection");
      assert.equal(await b.cmd(`delete ${delayed}`), "DELETED\r\n");
      assert.equal(await b.cmd(`delete ${ready}`), "DELETED\r\n", "buried");
      assert.equal(await b.cmd(`delete ${ready2}`), "DELETED\r\n");
      assert.equal(await a.cmd(`delete ${res}`), "DELETED\r\n");
      assert.equal(await a.cmd("delete 18446744073709551615"), "NOT_FOUND\r\n");
      assert.equal(await a.cmd("delete"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await a.cmd("delete x"), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd("delete -1"), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd("delete 1 2"), "BAD_FORMAT\r\n");
    }));

  it("release: new pri, delay makes it delayed; NOT_FOUND unless reserved by this connection", () =>
    session(async (c) => {
      const a = await c.dial();
      const b = await c.dial();
      await onlyTube(a, "rel");
      const id = await putId(a, "r", 10);
      assert.equal(await a.cmd(`release ${id} 1 0`), "NOT_FOUND\r\n", "not reserved yet");
      assert.equal(await a.cmd("reserve"), jobReply("RESERVED", id, "r"));
      assert.equal(await b.cmd(`release ${id} 1 0`), "NOT_FOUND\r\n", "reserved by another");
      assert.equal(await a.cmd(`release ${id} 1 0`), "RELEASED\r\n");
      let sj = await statsJob(a, id);
      assert.equal(sj.str("state"), "ready");
      assert.equal(sj.num("pri"), 1);
      assert.equal(sj.num("releases"), 1);
      assert.equal(await a.cmd("reserve"), jobReply("RESERVED", id, "r"));
      assert.equal(await a.cmd(`release ${id} 2 100`), "RELEASED\r\n");
      sj = await statsJob(a, id);
      assert.equal(sj.str("state"), "delayed");
      assert.equal(sj.num("delay"), 100);
      assert.equal(sj.num("releases"), 2);
      assert.equal(sj.num("reserves"), 2);
      assert.equal(await a.cmd("release 1 2"), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd("release 1 2 3 4"), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd(`release ${id} 4294967296 0`), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd("release"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
    }));

  it("bury, peek-buried (oldest-buried first), kick prefers buried over delayed, kick-job", () =>
    session(async (c) => {
      const w = await c.dial();
      await onlyTube(w, "bury");
      const x1 = await putId(w, "x1");
      const x2 = await putId(w, "x2");
      const d = await putId(w, "d", 0, 100);
      assert.equal(await w.cmd(`bury ${x1} 0`), "NOT_FOUND\r\n", "cannot bury an unreserved job");
      assert.equal(await w.cmd("reserve"), jobReply("RESERVED", x1, "x1"));
      assert.equal(await w.cmd("reserve"), jobReply("RESERVED", x2, "x2"));
      assert.equal(await w.cmd(`bury ${x2} 9`), "BURIED\r\n");
      assert.equal(await w.cmd(`bury ${x1} 8`), "BURIED\r\n");
      assert.equal(await w.cmd("peek-buried"), jobReply("FOUND", x2, "x2"), "oldest-buried, not lowest id");
      const sj = await statsJob(w, x2);
      assert.equal(sj.str("state"), "buried");
      assert.equal(sj.num("pri"), 9);
      assert.equal(sj.num("buries"), 1);
      assert.equal(await w.cmd("kick 1"), "KICKED 1\r\n");
      assert.equal((await statsJob(w, x2)).str("state"), "ready", "oldest-buried kicked first");
      assert.equal((await statsJob(w, x2)).num("kicks"), 1);
      assert.equal((await statsJob(w, x1)).str("state"), "buried");
      assert.equal(await w.cmd("kick 10"), "KICKED 1\r\n", "only the buried one, not the delayed one");
      assert.equal((await statsJob(w, d)).str("state"), "delayed");
      assert.equal(await w.cmd("kick 10"), "KICKED 1\r\n", "now the delayed one");
      assert.equal((await statsJob(w, d)).str("state"), "ready");
      assert.equal((await statsJob(w, d)).num("delay"), 100, "kick keeps the delay field");
      assert.equal(await w.cmd("kick 10"), "KICKED 0\r\n");
      assert.equal(await w.cmd("bury 1"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("bury x 1"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("bury"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("kick"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("kick x"), "BAD_FORMAT\r\n");
      // kick-job: buried or delayed only, any tube.
      const o = await c.dial();
      const kb = await putId(w, "kb");
      const kd = await putId(w, "kd", 0, 100);
      assert.equal(await o.cmd(`kick-job ${kb}`), "NOT_FOUND\r\n", "ready");
      assert.equal(await w.cmd(`reserve-job ${kb}`), jobReply("RESERVED", kb, "kb"));
      assert.equal(await o.cmd(`kick-job ${kb}`), "NOT_FOUND\r\n", "reserved");
      assert.equal(await w.cmd(`bury ${kb} 0`), "BURIED\r\n");
      assert.equal(await o.cmd(`kick-job ${kb}`), "KICKED\r\n");
      assert.equal(await o.cmd(`kick-job ${kb}`), "NOT_FOUND\r\n", "ready again");
      assert.equal(await o.cmd(`kick-job ${kd}`), "KICKED\r\n");
      assert.equal((await statsJob(o, kd)).str("state"), "ready");
      assert.equal((await statsJob(o, kd)).num("kicks"), 1);
      assert.equal(await o.cmd("kick-job 0"), "NOT_FOUND\r\n");
      assert.equal(await o.cmd("kick-job !@#"), "BAD_FORMAT\r\n");
      assert.equal(await o.cmd("kick-job"), "UNKNOWN_COMMAND\r\n", "no space: neither kick nor kick-job");
      for (const id of [x1, x2, d, kb, kd]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    }));

  it("touch: own reserved job only, restarts the TTR", () =>
    session(async (c) => {
      const a = await c.dial();
      const b = await c.dial();
      await onlyTube(a, "touch");
      const id = await putId(a, "t", 0, 0, 100);
      assert.equal(await a.cmd(`touch ${id}`), "NOT_FOUND\r\n", "not reserved");
      assert.equal(await a.cmd("reserve"), jobReply("RESERVED", id, "t"));
      assert.equal(await b.cmd(`touch ${id}`), "NOT_FOUND\r\n", "reserved by another");
      assert.equal(await a.cmd(`touch ${id}`), "TOUCHED\r\n");
      const left = (await statsJob(a, id)).num("time-left");
      assert.ok(left >= 98 && left <= 100, `time-left after touch ${left}`);
      assert.equal(await a.cmd("touch 0"), "NOT_FOUND\r\n");
      assert.equal(await a.cmd("touch a111"), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd("touch 111a"), "BAD_FORMAT\r\n");
      assert.equal(await a.cmd("touch"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
    }));

  it("pause-tube: PAUSED/NOT_FOUND, reserve skips a paused tube, peek and reserve-job do not", () =>
    session(async (c) => {
      const w = await c.dial();
      const t = await onlyTube(w, "pause");
      const id = await putId(w, "p");
      assert.equal(await w.cmd(`pause-tube ${t} 100`), "PAUSED\r\n");
      const st = await statsTube(w, t);
      assert.equal(st.num("pause"), 100);
      assert.ok(st.num("pause-time-left") >= 99 && st.num("pause-time-left") <= 100);
      assert.equal(st.num("cmd-pause-tube"), 1);
      assert.equal(await w.cmd("reserve-with-timeout 0"), "TIMED_OUT\r\n", "paused tube skipped");
      assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", id, "p"));
      assert.equal(await w.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
      assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "p"), "unpaused");
      assert.equal((await statsTube(w, t)).num("pause"), 0);
      assert.equal(await w.cmd(`pause-tube ${tubeName("nope")} 1`), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("pause-tube"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd(`pause-tube ${t}`), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd(`pause-tube ${t} x`), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd(`pause-tube ${t} 4294967296`), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd(`pause-tube -${t} 1`), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    }));

  it("quit closes the connection with no reply", () =>
    session(async (c) => {
      const w = await c.dial();
      w.send("quit\r\n");
      await w.closed();
      assert.equal(w.pending, "");
    }));
}
