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

  it("with both blocks used up before the next one came: take() says so, next() waits, in order asked", async () => {
    let answer = (_start: number) => {};
    const ids = new IdBlocks(1, () => new Promise((r) => (answer = r)), (e) => assert.fail(String(e)));
    for (let i = 1; i <= ID_BLOCK; i++) assert.equal(ids.take(), i);
    assert.equal(ids.take(), undefined);
    const got: number[] = [];
    const waiting = [ids.next(), ids.next(), ids.next()].map((p) => p.then((id) => got.push(id)));
    await Promise.resolve();
    assert.deepEqual(got, []);
    assert.equal(ids.take(), undefined, "a later take does not pass those waiting");
    answer(7001);
    await Promise.all(waiting);
    assert.deepEqual(got, [7001, 7002, 7003]);
    assert.equal(ids.take(), 7004);
  });

  it("more waiting than a block holds: the first block's worth is served, the rest wait for the one after", async () => {
    const answers: ((start: number) => void)[] = [];
    let fetched = 0;
    const ids = new IdBlocks(1, () => {
      fetched++;
      return new Promise((r) => answers.push(r));
    }, (e) => assert.fail(String(e)));
    for (let i = 1; i <= ID_BLOCK; i++) ids.take();
    const got: number[] = [];
    const waiting = Array.from({ length: ID_BLOCK + 2 }, () => ids.next().then((id) => got.push(id)));
    assert.equal(fetched, 1);
    answers.shift()!(10_001);
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(got.length, ID_BLOCK);
    assert.equal(fetched, 2, "the block after is asked for");
    answers.shift()!(20_001);
    await Promise.all(waiting);
    assert.deepEqual(got.slice(-3), [10_000 + ID_BLOCK, 20_001, 20_002]);
  });

  it("those waiting are refused when the fetch fails; the next asks again", async () => {
    const answers: { resolve: (start: number) => void; reject: (e: unknown) => void }[] = [];
    const errors: unknown[] = [];
    const ids = new IdBlocks(
      1,
      () => new Promise((resolve, reject) => answers.push({ resolve, reject })),
      (e) => errors.push(e),
    );
    for (let i = 1; i <= ID_BLOCK; i++) ids.take();
    const waiting = [ids.next(), ids.next()];
    answers.shift()!.reject(new Error("down"));
    for (const w of waiting) await assert.rejects(w, /down/);
    assert.equal(errors.length, 1, "reported once");
    const again = ids.next();
    answers.shift()!.resolve(3001);
    assert.equal(await again, 3001);
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
