// Scheduling on a manual clock: no sleeping, every deadline driven by tick().
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Queue } from "../../../core/memory/queue.ts";
import { jobRecord } from "../../harness/job_record.ts";
import type { Client, Job } from "../../../core/memory/model.ts";
import type { JobOut, WaitEnd } from "../../../core/engine.ts";

const body = (s: string) => new TextEncoder().encode(s + "\r\n");

function setup() {
  const clock = new ManualClock();
  const q = new Queue({ clock });
  const woke = new Map<Client, Array<JobOut | WaitEnd>>();
  const conn = () => {
    const events: Array<JobOut | WaitEnd> = [];
    const c = q.connect((r) => events.push(r));
    woke.set(c, events);
    return c;
  };
  const put = (c: Client, pri = 0, delay = 0, ttr = 60, s = "x") => {
    const j = q.put(c, { id: q.takeId(), pri, delaySec: delay, ttrSec: ttr, body: body(s) });
    assert.equal(typeof j, "object");
    return j as Job;
  };
  return { clock, q, conn, put, woke: (c: Client) => woke.get(c)! };
}

describe("ready order", () => {
  it("takes the best (pri, id) across every watched tube; watch order does not matter", () => {
    const { q, conn, put } = setup();
    const p = conn();
    const ids: Record<string, number> = {};
    for (const [tube, pri] of [["A", 5], ["B", 3], ["C", 3], ["D", 1]] as const) {
      q.use(p, tube);
      ids[tube] = put(p, pri).id;
    }
    const w = conn();
    for (const t of ["C", "A", "D", "B"]) q.watch(w, t);
    const order = [];
    for (let i = 0; i < 4; i++) order.push((q.reserve(w, 0) as Job).tube.name);
    assert.deepEqual(order, ["D", "B", "C", "A"]);
    assert.equal(q.reserve(w, 0), "TIMED_OUT");
  });
});

describe("delays and deadlines", () => {
  it("promotes a delayed job at its deadline and tick() says when the next thing is due", () => {
    const { clock, q, conn, put } = setup();
    const c = conn();
    const j = put(c, 0, 5);
    assert.equal(j.state, "delayed");
    assert.equal(q.nextDue(), clock.now() + 5000);
    clock.advance(4999);
    q.tick();
    assert.equal(j.state, "delayed");
    assert.equal(q.statsJob(j.id)!.timeLeft, 0);
    clock.advance(1);
    assert.equal(q.tick(), Infinity);
    assert.equal(j.state, "ready");
    assert.equal(q.statsJob(j.id)!.delay, 5);
  });

  it("releases a reservation exactly when its TTR ends, counting a timeout", () => {
    const { clock, q, conn, put } = setup();
    const c = conn();
    const j = put(c, 0, 0, 3);
    assert.equal(q.reserve(c, 0), j);
    assert.equal(q.statsJob(j.id)!.timeLeft, 3);
    clock.advance(3000);
    q.tick();
    assert.equal(j.state, "ready");
    assert.equal(j.timeouts, 1);
    assert.equal(q.stats().jobTimeouts, 1);
    assert.equal(j.reserves, 1);
  });

  it("keeps a job's times in whole ms, rounded down: time-left never reads more than the exact value", () => {
    const clock = new ManualClock(1000.6);
    const q = new Queue({ clock });
    const c = q.connect(() => {});
    const j = q.put(c, { id: q.takeId(), pri: 0, delaySec: 0, ttrSec: 2, body: body("x") }) as Job;
    const d = q.put(c, { id: q.takeId(), pri: 0, delaySec: 1, ttrSec: 60, body: body("d") }) as Job;
    assert.equal(q.reserve(c, 0), j);
    for (const t of [j.createdAt, j.deadline, j.reservedAt, d.createdAt, d.deadline]) {
      assert.ok(Number.isInteger(t), `${t}`);
    }
    clock.advance(0.2); // 0.2 ms after the reserve: 1.12 says 1 s left (1.9998 truncated); rounding up read 2
    assert.equal(q.statsJob(j.id)!.timeLeft, 1);
    clock.advance(1999.2); // 3000.0: the TTR's whole ms (3000.6 rounded down)
    q.tick();
    assert.equal(d.state, "ready", "the delay of 1 s has passed");
    assert.equal(j.state, "ready", "released within a millisecond of its exact TTR");
  });

  it("raises ttr 0 to 1 second", () => {
    const { q, conn, put } = setup();
    assert.equal(q.statsJob(put(conn(), 0, 0, 0).id)!.ttr, 1);
  });

  it("answers DEADLINE_SOON at once inside the 1 s margin when nothing is ready", () => {
    const { clock, q, conn, put } = setup();
    const c = conn();
    put(c, 0, 0, 2);
    q.reserve(c, 0);
    assert.equal(q.reserve(c, 10_000), null, "outside the margin it waits");
    q.cancelWait(c);
    clock.advance(1000);
    assert.equal(q.reserve(c, 10_000), "DEADLINE_SOON");
  });

  it("still reserves inside the margin when a watched tube has a ready job (1.12 #646)", () => {
    const { q, conn, put } = setup();
    const c = conn();
    put(c, 0, 0, 1);
    const second = put(c);
    q.reserve(c, 0);
    assert.equal(q.reserve(c, 0), second);
  });

  it("wakes a waiting reserve with DEADLINE_SOON one second before its job's TTR ends", () => {
    const { clock, q, conn, put, woke } = setup();
    const c = conn();
    put(c, 0, 0, 5);
    q.reserve(c, 0);
    assert.equal(q.reserve(c, 60_000), null);
    assert.equal(q.nextDue(), clock.now() + 4000);
    clock.advance(4000);
    q.tick();
    assert.deepEqual(woke(c), ["DEADLINE_SOON"]);
  });

  it("times out reserve-with-timeout, and 0 answers at once", () => {
    const { clock, q, conn, woke } = setup();
    const c = conn();
    assert.equal(q.reserve(c, 0), "TIMED_OUT");
    assert.equal(q.reserve(c, 2000), null);
    assert.equal(q.stats().waiting, 1);
    clock.advance(1999);
    q.tick();
    assert.deepEqual(woke(c), []);
    clock.advance(1);
    q.tick();
    assert.deepEqual(woke(c), ["TIMED_OUT"]);
    assert.equal(q.stats().waiting, 0);
  });

  it("touch gives a fresh full TTR", () => {
    const { clock, q, conn, put } = setup();
    const c = conn();
    const j = put(c, 0, 0, 10);
    q.reserve(c, 0);
    clock.advance(8000);
    assert.equal(q.touch(c, j.id), true);
    clock.advance(8000);
    q.tick();
    assert.equal(j.state, "reserved");
    assert.equal(q.touch(conn(), j.id), false, "only the holder may touch");
  });
});

describe("waiting clients", () => {
  it("are served first come, first served (1.12 would serve A, B, D, C)", () => {
    const { q, conn, put, woke } = setup();
    const ws = ["A", "B", "C", "D"].map(() => conn());
    for (const w of ws) assert.equal(q.reserve(w, Infinity), null);
    const p = conn();
    const jobs = [put(p), put(p), put(p), put(p)];
    assert.deepEqual(ws.map((w) => woke(w)[0]), jobs);
  });

  it("are woken by release, kick, kick-job and unpause", () => {
    const { clock, q, conn, put, woke } = setup();
    const holder = conn();
    const w = conn();
    const j = put(holder);
    q.reserve(holder, 0);
    q.reserve(w, Infinity);
    q.release(holder, j.id, 0, 0);
    assert.deepEqual(woke(w), [j]);

    q.bury(w, j.id, 0);
    q.reserve(holder, Infinity);
    assert.equal(q.kick(w, 1), 1);
    assert.deepEqual(woke(holder), [j]);

    q.bury(holder, j.id, 0);
    q.reserve(w, Infinity);
    assert.equal(q.kickJob(j.id), "KICKED");
    assert.equal(woke(w)[1], j);

    q.release(w, j.id, 0, 0);
    q.pauseTube("default", 100);
    q.reserve(holder, Infinity);
    assert.equal(woke(holder).length, 1, "paused tube serves nobody");
    clock.advance(50_000);
    q.tick();
    assert.equal(woke(holder).length, 1);
    q.pauseTube("default", 0);
    assert.equal(woke(holder)[1], j, "pause-tube 0 unpauses at once");
  });

  it("get a job released when its holder disconnects", () => {
    const { q, conn, put, woke } = setup();
    const a = conn();
    const b = conn();
    const j = put(a);
    q.reserve(a, 0);
    q.reserve(b, Infinity);
    q.disconnect(a);
    assert.deepEqual(woke(b), [j]);
    assert.equal(j.releases, 0, "a disconnect is not a release");
  });
});

describe("kick, bury, delete", () => {
  it("kick takes buried jobs first (oldest buried first) and never delayed ones in the same call", () => {
    const { q, conn, put } = setup();
    const c = conn();
    const d = put(c, 0, 100);
    const b1 = put(c);
    const b2 = put(c);
    q.reserveJob(c, b2.id);
    q.bury(c, b2.id, 0);
    q.reserveJob(c, b1.id);
    q.bury(c, b1.id, 0);
    assert.equal(q.peekBuried(c), b2);
    assert.equal(q.kick(c, 10), 2);
    assert.equal(d.state, "delayed");
    assert.equal(q.kick(c, 10), 1);
    assert.equal(d.state, "ready");
    assert.equal(d.kicks, 1);
  });

  it("delete works on ready, delayed and buried jobs and on one's own reservation only", () => {
    const { q, conn, put } = setup();
    const a = conn();
    const b = conn();
    const delayed = put(a, 0, 10);
    assert.equal(q.delete(b, delayed.id), "DELETED");
    const r = put(a);
    q.reserve(a, 0);
    assert.equal(q.delete(b, r.id), "NOT_FOUND");
    assert.equal(q.delete(a, r.id), "DELETED");
    assert.equal(q.delete(a, r.id), "NOT_FOUND");
  });

  it("reserve-job takes a delayed or buried job from any tube, never a reserved one", () => {
    const { q, conn, put } = setup();
    const a = conn();
    q.use(a, "other");
    const j = put(a, 0, 50);
    const b = conn();
    assert.equal(q.reserveJob(b, j.id), j);
    assert.equal(q.reserveJob(a, j.id), undefined);
  });
});

describe("tubes", () => {
  it("exist while referenced, list in 1.12's swap-remove order, and a pause keeps none alive", () => {
    const { q, conn, put } = setup();
    const c = conn();
    for (const t of ["a", "b", "c"]) q.watch(c, t);
    assert.deepEqual(q.tubeNames(), ["default", "a", "b", "c"]);
    q.ignore(c, "a");
    assert.deepEqual(q.tubeNames(), ["default", "c", "b"]);
    assert.deepEqual(c.watching.map((t) => t.name), ["default", "c", "b"]);
    q.use(c, "p");
    put(c);
    q.use(c, "default");
    assert.ok(q.hasTube("p"), "a job keeps its tube");
    q.pauseTube("p", 100);
    assert.equal(q.delete(c, 1), "DELETED");
    assert.ok(!q.hasTube("p"));
    q.use(c, "p");
    assert.equal(q.statsTube("p")!.pause, 0, "the pause went with the tube");
  });

  it("ignore of an unwatched tube succeeds; the last watched tube cannot be ignored", () => {
    const { q, conn } = setup();
    const c = conn();
    assert.equal(q.ignore(c, "nope"), 1);
    assert.equal(q.ignore(c, "default"), "NOT_IGNORED");
    assert.ok(!q.hasTube("nope"));
  });

  it("reports pause and pause-time-left while paused", () => {
    const { clock, q } = setup();
    q.pauseTube("default", 10);
    clock.advance(2500);
    const s = q.statsTube("default")!;
    assert.deepEqual([s.pause, s.pauseTimeLeft, s.cmdPauseTube], [10, 7, 1]);
  });
});

describe("drain and restore", () => {
  it("refuses puts in drain mode and still uses up the id", () => {
    const { q, conn } = setup();
    const c = conn();
    q.drain();
    assert.equal(q.put(c, { id: q.takeId(), pri: 0, delaySec: 0, ttrSec: 1, body: body("x") }), "DRAINING");
    assert.equal(q.takeId(), 2);
  });

  it("restores jobs in their states and continues ids above every id seen", () => {
    const { clock, q, conn } = setup();
    const wall = clock.wallMs();
    const rec = (id: number, state: "ready" | "reserved" | "delayed" | "buried", deadlineAtMs = 0) =>
      jobRecord(id, {
        tube: "t",
        pri: id,
        ttrMs: 1000,
        createdAtMs: wall - 5000,
        deadlineAtMs,
        state,
        reserves: 1,
        body: body(`job${id}`),
      });
    q.restore([
      rec(3, "buried"),
      rec(1, "buried"),
      rec(2, "reserved"),
      rec(5, "delayed", wall + 3000),
      rec(6, "delayed", wall - 1),
    ], 9);
    assert.deepEqual([3, 1, 2, 5, 6].map((id) => q.peek(id)!.state), ["buried", "buried", "ready", "delayed", "ready"]);
    const c = conn();
    q.use(c, "t");
    assert.equal(q.peekBuried(c)!.id, 3, "buried order kept");
    assert.equal(q.statsJob(5)!.timeLeft, 3);
    assert.equal(q.statsJob(1)!.age, 5);
    assert.equal((q.put(c, { id: q.takeId(), pri: 0, delaySec: 0, ttrSec: 1, body: body("n") }) as Job).id, 10);
  });
});
