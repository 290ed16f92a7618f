// What one connection may hold while its client does not read (issue 7, item 2): a
// batch of thousands of pipelined peeks stops once 64 KiB of replies wait, whether or
// not a write is in flight, and big bodies go out by reference, not as copies.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../core/clock.ts";
import { Service } from "../../protocol/service.ts";
import { memoryEngine } from "../../core/memory/queue.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A service holding one 60,000-byte job, id 1. */
function withBigJob(): Service {
  const svc = new Service(memoryEngine({ clock: new ManualClock() }), { log: () => {}, error: () => {} });
  svc.connect({ write: () => {}, close: () => {} }).push(enc.encode(`put 0 0 60 60000\r\n${"j".repeat(60000)}\r\n`));
  return svc;
}

/** A `stats` counter, asked on a connection of its own. */
function counter(svc: Service, name: string): number {
  let out = "";
  const c = svc.connect({ write: (p) => void (out += dec.decode(p)), close: () => {} });
  c.push(enc.encode("stats\r\n"));
  c.abort();
  return Number(new RegExp(`\\n${name}: (\\d+)\\n`).exec(out)?.[1]);
}

describe("reply bound", () => {
  it("4,000 pipelined peeks of a 60 KB job in one read, never read: processing stops at 64 KiB", () => {
    const svc = withBigJob();
    // The client never reads: the first write never completes.
    const conn = svc.connect({ write: () => new Promise<void>(() => {}), close: () => {} });
    conn.push(enc.encode("peek 1\r\n".repeat(4000)));
    // Before the bound every command of the read ran (4,000 replies, 240 MB, queued).
    const peeks = counter(svc, "cmd-peek");
    assert.ok(peeks >= 1 && peeks <= 3, `${peeks} peeks ran before the connection stopped`);
    // One batch is in flight; the next read fills the output to the bound, and then
    // the connection wants no more input: it holds at most two batches of replies.
    conn.push(enc.encode("peek 1\r\n".repeat(4000)));
    const more = counter(svc, "cmd-peek");
    assert.ok(more <= 2 * peeks, `${more} peeks ran`);
    assert.equal(conn.wantsInput, false, "no more reading from a client that does not read");
    svc.close();
  });

  it("a job body of 16 KiB or more goes to the transport by reference: clients share one buffer", () => {
    const svc = withBigJob();
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < 2; i++) {
      svc.connect({ write: (p) => void pieces.push(p), close: () => {} }).push(enc.encode("peek 1\r\n"));
    }
    const bodies = pieces.filter((p) => p.length >= 60_000);
    assert.equal(bodies.length, 2);
    assert.equal(bodies[0]!.buffer, bodies[1]!.buffer);
    svc.close();
  });
});
