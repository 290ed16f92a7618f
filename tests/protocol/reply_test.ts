// Output: replies encoded while an earlier batch is being written must not land in a
// buffer that is still queued to go out.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Output } from "../../protocol/reply.ts";

const fill = (c: string, n: number) => new Uint8Array(n).fill(c.charCodeAt(0));
const text = (pieces: Uint8Array[]) => pieces.map((p) => new TextDecoder().decode(p)).join("");

describe("Output", () => {
  it("reuses only the buffers of the batch that was written, not ones still queued", () => {
    const o = new Output();
    o.bytes(fill("a", 10));
    o.take(); // batch 1 goes to the socket; its write is in flight
    o.bytes(fill("b", 300)); // batch 2 is encoded meanwhile: a small piece...
    o.bytes(fill("x", 20_000)); // ...then a body by reference, which seals the "b" buffer
    o.release(); // batch 1 written: only its buffer may be reused
    o.bytes(fill("c", 5));
    o.bytes(fill("y", 20_000)); // seals "c" and switches to the spare buffer
    o.bytes(fill("d", 300));
    const got = text(o.take());
    assert.equal(got, "b".repeat(300) + "x".repeat(20_000) + "c".repeat(5) + "y".repeat(20_000) + "d".repeat(300));
  });

  it("writes numbers in decimal, from 0 to 2^53 - 1", () => {
    for (const v of [0, 7, 9, 10, 99, 100, 4294967295, 4294967296, Number.MAX_SAFE_INTEGER]) {
      const o = new Output();
      o.line(new TextEncoder().encode("INSERTED "), v);
      assert.equal(text(o.take()), `INSERTED ${v}\r\n`);
    }
  });

  it("hands out one batch while the next is encoded, and reuses both arrays and buffers", () => {
    const o = new Output();
    o.bytes(fill("a", 10));
    const first = o.take();
    o.bytes(fill("b", 10));
    assert.equal(text(first), "a".repeat(10), "the next batch does not touch the one being written");
    o.release();
    assert.equal(text(o.take()), "b".repeat(10));
    o.release();
    o.bytes(fill("c", 10));
    assert.equal(text(o.take()), "c".repeat(10));
  });

  it("bodies of 16 KiB or more are queued by reference, smaller ones copied", () => {
    const o = new Output();
    const big = fill("z", 16 * 1024);
    const small = fill("s", 100);
    o.bytes(small);
    o.bytes(big);
    const pieces = o.take();
    assert.equal(pieces.length, 2);
    assert.notEqual(pieces[0]!.buffer, small.buffer);
    assert.equal(pieces[1], big);
  });

  it("a round trip at a time holds one buffer, and an idle output holds none", () => {
    const o = new Output();
    o.bytes(fill("a", 10));
    o.take();
    o.release(); // written; nothing encoded since
    assert.equal(o.heldBytes, 256, "one buffer kept for the next reply");
    o.bytes(fill("b", 10));
    const first = o.take()[0]!.buffer;
    o.release();
    assert.equal(o.heldBytes, 256, "still one: the next reply went into the kept buffer, not a new one");
    o.idle();
    assert.equal(o.heldBytes, 0, "idle: the buffer went back to the shared pool");
    o.bytes(fill("c", 10));
    assert.equal(o.take()[0]!.buffer, first, "the next reply takes a pooled buffer instead of allocating");
  });

  it("takeOne(): the usual batch as one piece, the same reuse of buffers as take()", () => {
    const o = new Output();
    o.bytes(fill("a", 10));
    const a = o.takeOne()!;
    assert.equal(text([a]), "a".repeat(10));
    o.bytes(fill("b", 5)); // encoded while the first piece is being written
    o.idle();
    assert.notEqual(o.heldBytes, 0, "nothing goes to the pool while a piece is out or a reply waits");
    o.release();
    const b = o.takeOne()!;
    assert.equal(text([b]), "b".repeat(5));
    assert.notEqual(b.buffer, a.buffer, "the piece being written was not written into");
    o.release();
    o.bytes(fill("c", 3));
    assert.equal(o.takeOne()!.buffer, a.buffer, "a written buffer is reused");
    o.release();
    o.bytes(fill("d", 20000)); // big: queued by reference, so not one piece of ours
    assert.equal(o.takeOne(), undefined);
    assert.equal(o.take().length, 1);
  });

  it("idle() keeps what is pending", () => {
    const o = new Output();
    o.bytes(fill("a", 10));
    o.idle();
    assert.equal(text(o.take()), "a".repeat(10));
  });
});
