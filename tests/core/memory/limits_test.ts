// Per-tube limits in the in-memory engine (set-concurrency, set-rate): a reserve never
// takes a job of a tube at its limit and waits as on an empty tube (its other watched
// tubes still serve it); it is woken when a reservation of the tube ends, whichever way,
// or when the rate's window lets the next one through, by the engine's timer. In
// process, on a manual clock.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Queue } from "../../../core/memory/queue.ts";
import { Service } from "../../../protocol/service.ts";
import { localClient } from "../../harness/in_process.ts";

function setup() {
  const clock = new ManualClock();
  const q = new Queue({ clock });
  const svc = new Service(q);
  return { clock, q, svc, c: () => localClient(svc) };
}

/** Let a woken connection write its reply (it resumes in a microtask). */
const settle = () => new Promise((r) => setTimeout(r, 0));

function fill(a: ReturnType<ReturnType<typeof setup>["c"]>, tube: string, n: number): void {
  a.send(`use ${tube}\r\n`);
  for (let i = 0; i < n; i++) a.send(`put 1 0 60 1\r\n${i % 10}\r\n`);
}

describe("set-concurrency", () => {
  test("at the limit a reserve waits; each way a reservation ends wakes the next", async () => {
    const { c, svc, clock } = setup();
    const a = c();
    assert.equal(a.send("set-concurrency t 2\r\n"), "CONCURRENCY_SET\r\n");
    fill(a, "t", 6);
    const ws = [c(), c(), c()];
    for (const w of ws) w.send("watch t\r\nignore default\r\n");
    assert.equal(ws[0]!.send("reserve\r\n"), "RESERVED 1 1\r\n0\r\n");
    assert.equal(ws[1]!.send("reserve\r\n"), "RESERVED 2 1\r\n1\r\n");
    assert.equal(ws[2]!.send("reserve-with-timeout 0\r\n"), "TIMED_OUT\r\n", "held as an empty tube");
    assert.equal(ws[2]!.send("reserve\r\n"), "");
    // delete
    assert.equal(ws[0]!.send("delete 1\r\n"), "DELETED\r\n");
    await settle();
    assert.equal(ws[2]!.take(), "RESERVED 3 1\r\n2\r\n");
    // release (with a delay: the job does not come back, the room does)
    assert.equal(ws[0]!.send("reserve\r\n"), "");
    assert.equal(ws[1]!.send("release 2 1 30\r\n"), "RELEASED\r\n");
    await settle();
    assert.equal(ws[0]!.take(), "RESERVED 4 1\r\n3\r\n");
    // bury
    assert.equal(ws[1]!.send("reserve\r\n"), "");
    assert.equal(ws[2]!.send("bury 3 1\r\n"), "BURIED\r\n");
    await settle();
    assert.equal(ws[1]!.take(), "RESERVED 5 1\r\n4\r\n");
    // TTR (job 2, released with a delay, is ready since 30 s, held back by the limit)
    assert.equal(ws[2]!.send("reserve\r\n"), "");
    clock.advance(30_000);
    await settle();
    assert.equal(ws[2]!.take(), "", "ready, but 2 reserved");
    clock.advance(30_000);
    await settle();
    assert.equal(ws[2]!.take(), "RESERVED 2 1\r\n1\r\n", "the TTRs of 4 and 5 ran out: room");
    // disconnect: 2 and 4 reserved, a waiting client gets 5 when 2's holder goes
    const x = c(), y = c();
    x.send("watch t\r\nignore default\r\n");
    y.send("watch t\r\nignore default\r\n");
    assert.equal(x.send("reserve\r\n"), "RESERVED 4 1\r\n3\r\n");
    assert.equal(y.send("reserve\r\n"), "");
    ws[2]!.close();
    await settle();
    assert.equal(y.take(), "RESERVED 2 1\r\n1\r\n", "2 came back to ready, and there is room");
    svc.close();
  });

  test("other watched tubes still serve a client held back by a limit", async () => {
    const { c, svc } = setup();
    const a = c();
    a.send("set-concurrency lim 1\r\n");
    fill(a, "lim", 3); // ids 1-3
    const w = c();
    w.send("watch lim\r\nwatch free\r\n");
    assert.equal(w.send("reserve\r\n"), "RESERVED 1 1\r\n0\r\n");
    a.send("use free\r\nput 5 0 60 1\r\nf\r\n"); // id 4, a worse priority than lim's jobs
    assert.equal(w.send("reserve\r\n"), "RESERVED 4 1\r\nf\r\n", "lim is at its limit: free serves");
    assert.equal(w.send("reserve\r\n"), "", "then it waits on both");
    a.send("put 5 0 60 1\r\ng\r\n"); // id 5 into free, to the waiting client at once
    await settle();
    assert.equal(w.take(), "RESERVED 5 1\r\ng\r\n");
    svc.close();
  });

  test("0 removes the limit and serves the waiting clients; a lower limit takes nothing back", async () => {
    const { c, svc } = setup();
    const a = c();
    a.send("set-concurrency t 1\r\n");
    fill(a, "t", 3);
    const w1 = c(), w2 = c();
    w1.send("watch t\r\n");
    w2.send("watch t\r\n");
    assert.equal(w1.send("reserve\r\n"), "RESERVED 1 1\r\n0\r\n");
    assert.equal(w2.send("reserve\r\n"), "");
    assert.equal(a.send("set-concurrency t 0\r\n"), "CONCURRENCY_SET\r\n");
    await settle();
    assert.equal(w2.take(), "RESERVED 2 1\r\n1\r\n");
    assert.equal(a.send("set-concurrency t 1\r\nstats-tube t\r\n").includes("current-jobs-reserved: 2\n"), true);
    assert.equal(w1.send("reserve-with-timeout 0\r\n"), "TIMED_OUT\r\n", "2 reserved, limit 1: held");
    assert.equal(w1.send("delete 1\r\nreserve-with-timeout 0\r\n"), "DELETED\r\nTIMED_OUT\r\n", "still 1 reserved");
    assert.equal(w2.send("delete 2\r\n"), "DELETED\r\n");
    assert.equal(w1.send("reserve-with-timeout 0\r\n"), "RESERVED 3 1\r\n2\r\n");
    svc.close();
  });

  test("a limit on a tube that does not exist makes it, keeps it, and shows in stats-tube", () => {
    const { c, svc } = setup();
    const a = c();
    assert.equal(a.send("set-concurrency later 3\r\n"), "CONCURRENCY_SET\r\n");
    assert.match(a.send("list-tubes\r\n"), /- later\n/);
    assert.match(
      a.send("stats-tube later\r\n"),
      /\npause-time-left: 0\nconcurrency-limit: 3\nrate-limit: 0\nrate-window: 0\n\r\n$/,
    );
    assert.equal(a.send("set-rate later 10 60\r\n"), "RATE_SET\r\n");
    assert.match(a.send("stats-tube later\r\n"), /\nconcurrency-limit: 3\nrate-limit: 10\nrate-window: 60\n\r\n$/);
    assert.equal(a.send("set-concurrency later 0\r\nset-rate later 0 0\r\n"), "CONCURRENCY_SET\r\nRATE_SET\r\n");
    assert.equal(a.send("stats-tube later\r\n"), "NOT_FOUND\r\n", "no limit, nothing else: gone");
    svc.close();
  });

  test("reserve-job takes a job whatever the limit (as whatever a pause), and counts", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("set-concurrency t 1\r\n");
    fill(a, "t", 2);
    a.send("watch t\r\n");
    assert.equal(a.send("reserve\r\n"), "RESERVED 1 1\r\n0\r\n");
    assert.equal(a.send("reserve-job 2\r\n"), "RESERVED 2 1\r\n1\r\n");
    assert.match(a.send("stats-tube t\r\n"), /current-jobs-reserved: 2\n/);
    svc.close();
  });

  test("the tube's snapshot counts the ready jobs held back", () => {
    const { c, svc, q } = setup();
    const a = c();
    a.send("set-concurrency t 1\r\n");
    fill(a, "t", 4);
    assert.equal(q.tubes(["t"])[0]!.heldJobs, 0, "nothing reserved: nothing held");
    a.send("watch t\r\nreserve\r\n");
    assert.equal(q.tubes(["t"])[0]!.heldJobs, 3);
    assert.equal(q.tubes(["default"])[0]!.heldJobs, 0);
    svc.close();
  });
});

describe("set-rate", () => {
  test("never more than N in any window of S seconds; a waiting client is served when the window allows", async () => {
    const { c, svc, clock } = setup();
    const a = c();
    assert.equal(a.send("set-rate t 3 10\r\n"), "RATE_SET\r\n");
    fill(a, "t", 10);
    const w = c();
    w.send("watch t\r\n");
    for (let i = 1; i <= 3; i++) {
      assert.match(w.send("reserve\r\n"), new RegExp(`^RESERVED ${i} `));
      w.send(`delete ${i}\r\n`);
      clock.advance(1000); // reservations at 0, 1 and 2 s
    }
    assert.equal(w.send("reserve\r\n"), "", "3 in the last 10 s: waits");
    clock.advance(6999); // 9.999 s after the first
    await settle();
    assert.equal(w.take(), "");
    clock.advance(1); // the first leaves the window
    await settle();
    assert.match(w.take(), /^RESERVED 4 /);
    w.send("delete 4\r\n");
    assert.equal(w.send("reserve-with-timeout 0\r\n"), "TIMED_OUT\r\n");
    clock.advance(1000); // the second leaves
    assert.match(w.send("reserve-with-timeout 0\r\n"), /^RESERVED 5 /);
    svc.close();
  });

  test("a rate and a concurrency limit together: both hold", async () => {
    const { c, svc, clock } = setup();
    const a = c();
    a.send("set-rate t 2 5\r\nset-concurrency t 1\r\n");
    fill(a, "t", 5);
    const w = c();
    w.send("watch t\r\n");
    assert.match(w.send("reserve\r\n"), /^RESERVED 1 /);
    assert.equal(w.send("reserve-with-timeout 0\r\n"), "TIMED_OUT\r\n", "concurrency");
    assert.match(w.send("delete 1\r\nreserve\r\n"), /^DELETED\r\nRESERVED 2 /);
    assert.equal(w.send("delete 2\r\nreserve\r\n"), "DELETED\r\n", "the rate: 2 in 5 s");
    clock.advance(5000);
    await settle();
    assert.match(w.take(), /^RESERVED 3 /);
    svc.close();
  });

  test("a lower rate holds at once; count 0 removes it and serves", async () => {
    const { c, svc } = setup();
    const a = c();
    a.send("set-rate t 100 60\r\n");
    fill(a, "t", 5);
    const w = c();
    w.send("watch t\r\n");
    for (let i = 1; i <= 3; i++) assert.match(w.send(`reserve\r\ndelete ${i}\r\n`), /^RESERVED/);
    assert.equal(a.send("set-rate t 3 60\r\n"), "RATE_SET\r\n");
    assert.equal(w.send("reserve\r\n"), "", "3 in the window already");
    assert.equal(a.send("set-rate t 0 0\r\n"), "RATE_SET\r\n");
    await settle();
    assert.match(w.take(), /^RESERVED 4 /);
    svc.close();
  });
});
