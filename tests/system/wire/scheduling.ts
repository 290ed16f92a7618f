// The wire suite's tests of which waiting worker gets which job, and when: priorities across tubes, wake-ups, order
// of waiters, a holder that goes.
import assert from "node:assert/strict";
import type { Wire } from "../../harness/wire.ts";
import {
  eventually,
  jobReply,
  onlyTube,
  putId,
  statsJob,
  tubeName,
  waitersOn,
  watchOnly,
} from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function schedulingTests({ it, session, v112 }: WireContext): void {
  it("a worker watching several tubes gets the best (pri, id) job among them", () =>
    session(async (c) => {
      const p = await c.dial();
      const w = await c.dial();
      const [ta, tb, tc] = [tubeName("sa"), tubeName("sb"), tubeName("sc")];
      await p.cmd(`use ${ta}`);
      const A = await putId(p, "A", 5);
      const B = await putId(p, "B", 3);
      await p.cmd(`use ${tb}`);
      const C = await putId(p, "C", 3);
      await p.cmd(`use ${tc}`);
      const D = await putId(p, "D", 1);
      const E = await putId(p, "E", 3);
      for (const t of [tc, tb, ta]) await w.cmd(`watch ${t}`);
      await w.cmd("ignore default");
      const got: string[] = [];
      for (let i = 0; i < 5; i++) got.push(await w.cmd("reserve-with-timeout 0"));
      assert.deepEqual(got, [
        jobReply("RESERVED", D, "D"),
        jobReply("RESERVED", B, "B"),
        jobReply("RESERVED", C, "C"),
        jobReply("RESERVED", E, "E"),
        jobReply("RESERVED", A, "A"),
      ]);
      for (const id of [A, B, C, D, E]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    }));

  it("a blocked reserve is woken by put, release, kick and pause-tube 0", () =>
    session(async (c) => {
      const h = await c.dial();
      const w = await c.dial();
      const t = await onlyTube(h, "wake");
      await watchOnly(w, t);
      // put
      w.send("reserve\r\n");
      await waitersOn(h, t, 1);
      const j1 = await putId(h, "by put");
      assert.equal(await w.reply(), jobReply("RESERVED", j1, "by put"));
      assert.equal(await w.cmd(`delete ${j1}`), "DELETED\r\n");
      // release
      const j2 = await putId(h, "by release");
      assert.equal(await h.cmd("reserve"), jobReply("RESERVED", j2, "by release"));
      w.send("reserve\r\n");
      await waitersOn(h, t, 1);
      assert.equal(await h.cmd(`release ${j2} 0 0`), "RELEASED\r\n");
      assert.equal(await w.reply(), jobReply("RESERVED", j2, "by release"));
      assert.equal(await w.cmd(`delete ${j2}`), "DELETED\r\n");
      // kick (of a buried job)
      const j3 = await putId(h, "by kick");
      assert.equal(await h.cmd("reserve"), jobReply("RESERVED", j3, "by kick"));
      assert.equal(await h.cmd(`bury ${j3} 0`), "BURIED\r\n");
      w.send("reserve\r\n");
      await waitersOn(h, t, 1);
      assert.equal(await h.cmd("kick 1"), "KICKED 1\r\n");
      assert.equal(await w.reply(), jobReply("RESERVED", j3, "by kick"));
      assert.equal(await w.cmd(`delete ${j3}`), "DELETED\r\n");
      // kick-job (of a delayed job)
      const j4 = await putId(h, "by kick-job", 0, 100);
      w.send("reserve\r\n");
      await waitersOn(h, t, 1);
      assert.equal(await h.cmd(`kick-job ${j4}`), "KICKED\r\n");
      assert.equal(await w.reply(), jobReply("RESERVED", j4, "by kick-job"));
      assert.equal(await w.cmd(`delete ${j4}`), "DELETED\r\n");
      // pause-tube 0
      assert.equal(await h.cmd(`pause-tube ${t} 86400`), "PAUSED\r\n");
      const j5 = await putId(h, "by unpause");
      w.send("reserve\r\n");
      await waitersOn(h, t, 1);
      assert.ok(await w.silentFor(100), "paused: no job yet");
      assert.equal(await h.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
      assert.equal(await w.reply(), jobReply("RESERVED", j5, "by unpause"));
      assert.equal(await w.cmd(`delete ${j5}`), "DELETED\r\n");
    }));

  it(
    v112
      ? "waiting workers A,B,C,D are served A,B,D,C (1.12's rotating cursor)"
      : "waiting workers are served first come, first served (A,B,C,D)",
    () =>
      session(async (c) => {
        const p = await c.dial();
        const t = tubeName("fifo");
        await p.cmd(`use ${t}`);
        const workers: Wire[] = [];
        for (let i = 0; i < 4; i++) {
          const w = await c.dial();
          await watchOnly(w, t);
          w.send("reserve\r\n");
          await waitersOn(p, t, i + 1);
          workers.push(w);
        }
        const ids: number[] = [];
        for (let i = 0; i < 4; i++) ids.push(await putId(p, `j${i}`));
        const got = await Promise.all(workers.map((w) => w.reply()));
        const order = v112 ? [0, 1, 3, 2] : [0, 1, 2, 3];
        assert.deepEqual(got, order.map((j) => jobReply("RESERVED", ids[j]!, `j${j}`)));
        for (const [i, w] of workers.entries()) {
          assert.equal(await w.cmd(`delete ${ids[order[i]!]}`), "DELETED\r\n");
        }
      }),
  );

  it("a reserved job goes back to ready when its holder disconnects, and when it quits", () =>
    session(async (c) => {
      const p = await c.dial();
      const t = tubeName("gone");
      await p.cmd(`use ${t}`);
      const id = await putId(p, "survivor");
      for (const how of ["close", "quit"]) {
        const holder = await c.dial();
        await watchOnly(holder, t);
        assert.equal(await holder.cmd("reserve"), jobReply("RESERVED", id, "survivor"));
        const w = await c.dial();
        await watchOnly(w, t);
        w.send("reserve\r\n");
        await waitersOn(p, t, 1);
        if (how === "close") holder.close();
        else {
          holder.send("quit\r\n");
          await holder.closed();
        }
        assert.equal(await w.reply(), jobReply("RESERVED", id, "survivor"), how);
        const sj = await statsJob(p, id);
        assert.equal(sj.num("releases"), 0, "a disconnect is not a release");
        assert.equal(sj.num("timeouts"), 0, "nor a timeout");
        w.close();
        await eventually(
          `job back after ${how}`,
          async () => (await statsJob(p, id)).str("state"),
          (s) => s === "ready",
        );
      }
      assert.equal(await p.cmd(`delete ${id}`), "DELETED\r\n");
    }));
}
