import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Heap } from "../../../core/memory/heap.ts";
import { Job, Tube } from "../../../core/memory/model.ts";

interface Item {
  key: number;
  id: number;
  slot: number;
}
const slot = { get: (x: Item) => x.slot, set: (x: Item, i: number) => void (x.slot = i) };
const less = (a: Item, b: Item) => a.key < b.key || (a.key === b.key && a.id < b.id);

/** A small deterministic PRNG so failures reproduce. */
function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
}

describe("Heap", () => {
  it("pops in (key, id) order, ties broken by id", () => {
    const h = new Heap<Item>(less, slot);
    const items = [[5, 1], [3, 2], [5, 0], [1, 9], [3, 1]].map(([key, id]) => ({ key: key!, id: id!, slot: -1 }));
    for (const x of items) h.push(x);
    const out: string[] = [];
    for (let x = h.pop(); x; x = h.pop()) out.push(`${x.key}/${x.id}`);
    assert.deepEqual(out, ["1/9", "3/1", "3/2", "5/0", "5/1"]);
    assert.equal(h.size, 0);
  });

  it("removes any item in place and keeps slots right (randomised against a sorted array)", () => {
    const rand = rng(42);
    const h = new Heap<Item>(less, slot);
    const live: Item[] = [];
    for (let step = 0; step < 5000; step++) {
      const r = rand();
      if (r < 0.5 || live.length === 0) {
        const x = { key: Math.floor(rand() * 50), id: step, slot: -1 };
        h.push(x);
        live.push(x);
      } else if (r < 0.75) {
        const i = Math.floor(rand() * live.length);
        const [x] = live.splice(i, 1);
        assert.ok(h.has(x!));
        h.remove(x!);
        assert.equal(x!.slot, -1);
        assert.ok(!h.has(x!));
      } else {
        live.sort((a, b) => (less(a, b) ? -1 : 1));
        const x = h.pop()!;
        assert.equal(x, live.shift());
      }
      for (const x of h.values()) assert.equal(h.values()[x.slot], x);
      assert.equal(h.size, live.length);
    }
  });

  it("remove of an item not in the heap is a no-op", () => {
    const h = new Heap<Item>(less, slot);
    const a = { key: 1, id: 1, slot: -1 };
    const b = { key: 2, id: 2, slot: -1 };
    h.push(a);
    h.remove(b);
    assert.equal(h.size, 1);
    assert.equal(h.peek(), a);
  });
});

describe("Job", () => {
  const body = new TextEncoder().encode("hello\r\n");
  it("reads the same fields before and after its second object (JobLife) is made", () => {
    const t = new Tube("default");
    const j = new Job(7, t, 10, 0, 60_000, body, 1234.9);
    const fields = () => ({
      state: j.state,
      deadline: j.deadline,
      delayMs: j.delayMs,
      timeSlot: j.timeSlot,
      reserves: j.reserves,
      timeouts: j.timeouts,
      releases: j.releases,
      buries: j.buries,
      kicks: j.kicks,
      reservedAt: j.reservedAt,
      owner: j.owner,
      prev: j.prev,
      next: j.next,
    });
    const before = fields();
    assert.deepEqual(before, {
      state: "ready",
      deadline: 1234, // ready since it was created
      delayMs: 0,
      timeSlot: -1,
      reserves: 0,
      timeouts: 0,
      releases: 0,
      buries: 0,
      kicks: 0,
      reservedAt: 0,
      owner: null,
      prev: null,
      next: null,
    });
    j.kicks = 0; // writing a field's own value makes nothing
    assert.deepEqual(fields(), before);
    j.buries = 1; // any other write makes the second object: the rest reads as before
    assert.deepEqual(fields(), { ...before, buries: 1 });
  });

  it("put with a delay: its second object starts from its creation time", () => {
    const j = new Job(8, new Tube("default"), 0, 5000, 60_000, body, 1234.9);
    assert.equal(j.delayMs, 5000);
    assert.equal(j.deadline, 1234);
  });

  it("keeps its body as sent, from a shared buffer or one of its own", () => {
    const slab = new Uint8Array(64);
    slab.set(body, 20);
    const shared = new Job(1, new Tube("t"), 0, 0, 1000, slab.subarray(20, 20 + body.length), 0);
    assert.deepEqual(shared.body, body);
    assert.equal(shared.size, 5);
    assert.equal(shared.body.buffer, slab.buffer, "a view of the shared buffer, not a copy");
    const own = new Job(2, new Tube("t"), 0, 0, 1000, body, 0);
    assert.deepEqual(own.body, body);
    assert.equal(own.size, 5);
    const big = new Uint8Array(3 * 2 ** 20);
    big.fill(120, 2 ** 20, 2 ** 20 + 5000);
    big.set([13, 10], 2 ** 20 + 5000);
    const far = new Job(3, new Tube("t"), 0, 0, 1000, big.subarray(2 ** 20, 2 ** 20 + 5002), 0);
    assert.equal(far.size, 5000);
    assert.deepEqual(far.body, big.subarray(2 ** 20, 2 ** 20 + 5002));
  });
});
