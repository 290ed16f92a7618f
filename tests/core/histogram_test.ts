// The fixed-bucket histogram behind the latency metrics.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Histogram } from "../../core/histogram.ts";

describe("Histogram", () => {
  it("puts a value in the first bucket whose bound it does not exceed, and counts the rest as +Inf", () => {
    const h = new Histogram([1, 10]);
    for (const v of [0, 1, 1.5, 10, 10.01, 1e9]) h.observe(v);
    assert.deepEqual([...h.counts], [2, 2, 2]);
    assert.equal(h.count, 6);
    assert.equal(h.sumMs, 0 + 1 + 1.5 + 10 + 10.01 + 1e9);
  });
});
