// The id blocks behind the PostgreSQL engine's synchronous takeId() (core/pg/ids.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { IdBlocks } from "../../../core/pg/ids.ts";
import { ID_BLOCK } from "../../../core/pg/schema.ts";

describe("IdBlocks", () => {
  it("hands out a block in order, fetches the next at half, then moves on to it", async () => {
    const starts = [5001];
    let fetched = 0;
    const ids = new IdBlocks(1, () => {
      fetched++;
      return Promise.resolve(starts.shift()!);
    }, (e) => assert.fail(String(e)));
    for (let i = 1; i <= ID_BLOCK / 2; i++) assert.equal(ids.take(), i);
    assert.equal(fetched, 0);
    assert.equal(ids.take(), ID_BLOCK / 2 + 1);
    assert.equal(fetched, 1, "the next block is asked for once half is used");
    await Promise.resolve();
    for (let i = ID_BLOCK / 2 + 2; i <= ID_BLOCK; i++) assert.equal(ids.take(), i);
    assert.equal(fetched, 1);
    assert.equal(ids.take(), 5001, "then the fetched block");
  });

  it("throws when both blocks are used up before the next one came (the put answers INTERNAL_ERROR)", () => {
    const ids = new IdBlocks(1, () => new Promise(() => {}), () => {});
    for (let i = 0; i < ID_BLOCK; i++) ids.take();
    assert.throws(() => ids.take(), /no job ids/);
  });

  it("reports a failed fetch and asks again later", async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const ids = new IdBlocks(
      1,
      () => (++calls === 1 ? Promise.reject(new Error("down")) : Promise.resolve(9001)),
      (e) => errors.push(e),
    );
    for (let i = 0; i <= ID_BLOCK / 2; i++) ids.take();
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(errors.length, 1);
    ids.take();
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(calls, 2, "the next take asks again");
  });
});
