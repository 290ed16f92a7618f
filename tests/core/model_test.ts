import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Heap } from "../../core/heap.ts";

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
