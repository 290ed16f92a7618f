// JobTable against a Map: the same answers after every operation, for consecutive
// ids (the usual case), ids that collide on purpose, and ids above 2^32.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { JobTable } from "../../../core/memory/job_table.ts";

interface Item {
  readonly id: number;
  v: number;
}

/** A small deterministic generator (xorshift), so a failure repeats. */
function rng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

function check(ids: (r: () => number, step: number) => number, steps: number, seed: number): void {
  const t = new JobTable<Item>();
  const m = new Map<number, Item>();
  const r = rng(seed);
  for (let step = 0; step < steps; step++) {
    const id = ids(r, step);
    const op = r();
    if (op < 0.55) {
      const item = { id, v: step };
      t.set(item);
      m.set(id, item);
    } else if (op < 0.9) {
      assert.equal(t.delete(id), m.delete(id), `delete ${id} at step ${step}`);
    } else {
      assert.equal(t.get(id), m.get(id), `get ${id} at step ${step}`);
    }
    assert.equal(t.size, m.size);
  }
  for (const [id, item] of m) assert.equal(t.get(id), item);
  for (const id of [...m.keys()]) assert.ok(t.delete(id));
  assert.equal(t.size, 0);
}

describe("JobTable", () => {
  it("consecutive ids, as put hands them out, deleted mostly in order", () => {
    check((r, step) => Math.max(1, step - Math.floor(r() * 50)), 200_000, 1);
  });

  it("ids that share their low bits (every one lands on the same home slot)", () => {
    check((r) => 1 + Math.floor(r() * 40) * 4096, 50_000, 2);
  });

  it("ids above 2^32 and sparse ones (a restart, an import of beanstalkd's ids)", () => {
    check((r) => 2 ** 32 + Math.floor(r() * 5000) * 97 + (r() < 0.1 ? 2 ** 40 : 0), 100_000, 3);
  });

  it("gives memory back: a drained table is small again", () => {
    const t = new JobTable<Item>();
    for (let id = 1; id <= 100_000; id++) t.set({ id, v: id });
    for (let id = 1; id <= 100_000; id++) assert.ok(t.delete(id));
    assert.equal(t.size, 0);
    assert.equal(t.get(5), undefined);
    t.set({ id: 100_001, v: 1 });
    assert.equal(t.get(100_001)?.v, 1);
  });
});
