// serveStreams over in-memory web streams: the library entry point (mod.ts
// serveConnection), with a byte stream (read with a BYOB reader) and a default one.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memoryEngine, serveStreams, Service } from "../../mod.ts";

const enc = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const dec = (chunks: Uint8Array[]) => chunks.map((c) => String.fromCharCode(...c)).join("");

/** Feed `input` in the given pieces, then end the stream; return everything written back. */
async function session(kind: "bytes" | "default", pieces: string[]): Promise<string> {
  const svc = new Service(memoryEngine(), { log: () => {}, error: () => {} });
  const out: Uint8Array[] = [];
  let i = 0;
  const readable = kind === "bytes"
    ? new ReadableStream({
      type: "bytes",
      pull(c: ReadableByteStreamController) {
        if (i < pieces.length) return c.enqueue(enc(pieces[i++]!));
        c.close();
        c.byobRequest?.respond(0); // a pending BYOB read completes only when answered
      },
    }) as ReadableStream<Uint8Array>
    : new ReadableStream<Uint8Array>({
      pull(c) {
        if (i < pieces.length) c.enqueue(enc(pieces[i++]!));
        else c.close();
      },
    });
  const writable = new WritableStream<Uint8Array>({ write: (chunk) => void out.push(chunk.slice()) });
  await serveStreams(svc, { readable, writable });
  svc.close();
  return dec(out);
}

describe("serveStreams", () => {
  for (const kind of ["bytes", "default"] as const) {
    it(`serves a ${kind} stream to its end, commands split anywhere`, async () => {
      const got = await session(kind, [
        "put 0 0 60 5\r",
        "\nhel",
        "lo\r\nreserve-with",
        "-timeout 0\r\nlist-tube-used\r\n",
      ]);
      assert.equal(got, "INSERTED 1\r\nRESERVED 1 5\r\nhello\r\nUSING default\r\n");
    });
  }

  it("answers a reserve left waiting at EOF with TIMED_OUT before it closes", async () => {
    assert.equal(await session("bytes", ["reserve\r\n"]), "TIMED_OUT\r\n");
  });

  it("reads garbage at a pace: an endless line gets one read per DISCARD_PAUSE_MS, then the connection works", async () => {
    const svc = new Service(memoryEngine(), { log: () => {}, error: () => {} });
    const out: Uint8Array[] = [];
    const junk = new Uint8Array(64 * 1024).fill(0x78); // "xxx...", no CRLF
    let pulls = 0;
    let ending = false;
    const readable = new ReadableStream<Uint8Array>({
      pull(c) {
        pulls++;
        if (!ending) return c.enqueue(junk);
        c.enqueue(enc("\r\nlist-tube-used\r\n"));
        c.close();
      },
    });
    const writable = new WritableStream<Uint8Array>({ write: (chunk) => void out.push(chunk.slice()) });
    const served = serveStreams(svc, { readable, writable });
    await new Promise((r) => setTimeout(r, 100));
    const in100ms = pulls;
    ending = true;
    await served;
    svc.close();
    // Flat out this took thousands of reads (every one a 64 KiB scan); paced, at most one per millisecond.
    assert.ok(in100ms <= 110, `${in100ms} reads of garbage in 100 ms`);
    assert.ok(in100ms >= 5, `only ${in100ms} reads in 100 ms: the garbage is not read on`);
    assert.equal(dec(out), "BAD_FORMAT\r\nUSING default\r\n");
  });

  it("a connection stalled on replies its client does not read ends when the server closes it", async () => {
    const svc = new Service(memoryEngine(), { log: () => {}, error: () => {} });
    const big = "j".repeat(40000);
    let sent = false;
    const readable = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent) return new Promise(() => {}); // then nothing more, and no EOF
        sent = true;
        c.enqueue(enc(`put 0 0 60 ${big.length}\r\n${big}\r\n` + "peek 1\r\n".repeat(1000)));
      },
    });
    // The client reads nothing: the first write never completes, the replies pile up to
    // the bound, and more than the read-ahead of commands waits.
    const writable = new WritableStream<Uint8Array>({ write: () => new Promise(() => {}) });
    let ended = false;
    const served = serveStreams(svc, { readable, writable }).finally(() => (ended = true));
    while (svc.counters.connections === 0 || [...svc.connections][0]!.wantsInput) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(ended, false, "stalled, waiting for its replies to be read");
    svc.close(); // drops every connection: the stalled one's read loop must end
    await served;
    assert.equal(ended, true);
  });
});
