// A transport may take part of a piece and say how much (Deno's conn.write resolves to
// the bytes written, and the Deno adapter hands that promise over as it is): the
// connection must write the rest, in order, before anything after it. Replies mix the
// two ways a batch goes out: one piece of the output's own buffer (takeOne) and a list
// with a big body by reference (take).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../core/clock.ts";
import { Service } from "../../protocol/service.ts";
import { memoryEngine } from "../../core/memory/queue.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A connection whose transport takes at most `most` bytes per write, later; all that went out. */
function trickle(svc: Service, most: number) {
  const got: Uint8Array[] = [];
  let writes = 0;
  const conn = svc.connect({
    write(piece) {
      writes++;
      const n = Math.min(most, piece.length);
      got.push(piece.slice(0, n)); // copied now: the piece is ours only until the promise settles
      return Promise.resolve(n);
    },
    close() {},
  });
  const text = () => got.map((b) => dec.decode(b)).join("");
  return { conn, text, writes: () => writes };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("partial writes", () => {
  it("small replies, one command at a time: every byte, in order", async () => {
    const svc = new Service(memoryEngine({ clock: new ManualClock() }), { log: () => {}, error: () => {} });
    const { conn, text, writes } = trickle(svc, 3);
    let want = "";
    for (let i = 1; i <= 20; i++) {
      conn.push(enc.encode(`put 0 0 60 5\r\nhello\r\n`));
      want += `INSERTED ${i}\r\n`;
      await settle();
    }
    conn.push(enc.encode("peek 7\r\nstats-job 99\r\n"));
    want += "FOUND 7 5\r\nhello\r\nNOT_FOUND\r\n";
    await settle();
    assert.equal(text(), want);
    assert.ok(writes() > 20, "the writes were partial");
    svc.close();
  });

  it("a big body by reference between small replies: every byte, in order", async () => {
    const svc = new Service(memoryEngine({ clock: new ManualClock() }), { log: () => {}, error: () => {} });
    const big = "b".repeat(40000); // over the size queued by reference (reply.ts)
    const { conn, text } = trickle(svc, 4096);
    conn.push(enc.encode(`put 0 0 60 ${big.length}\r\n${big}\r\nput 0 0 60 1\r\nx\r\n`));
    await settle();
    conn.push(enc.encode("peek 2\r\npeek 1\r\npeek 2\r\n"));
    for (let i = 0; i < 20; i++) await settle();
    assert.equal(
      text(),
      `INSERTED 1\r\nINSERTED 2\r\nFOUND 2 1\r\nx\r\nFOUND 1 ${big.length}\r\n${big}\r\nFOUND 2 1\r\nx\r\n`,
    );
    svc.close();
  });
});
