// Parser fixtures: bytes in, replies out, through the real connection loop with an
// in-memory transport. Every fixture is fed whole, one byte at a time, and split at
// every index; the replies must be the same every time.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../core/clock.ts";
import { Service } from "../../protocol/service.ts";
import { memoryEngine } from "../../core/memory/queue.ts";
import { LINE, NEED_MORE, OVERLONG, Parser, SKIPPED } from "../../protocol/parser.ts";

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const text = (b: Uint8Array) => String.fromCharCode(...b);

/** Feed chunks to a fresh server connection; return what it wrote and whether it closed. */
function run(chunks: Uint8Array[], maxJobSize?: number): { out: string; closed: boolean } {
  const svc = new Service(memoryEngine({ clock: new ManualClock(), ...(maxJobSize ? { maxJobSize } : {}) }), {
    log: () => {},
    error: () => {},
  });
  let out = "";
  let closed = false;
  const conn = svc.connect({ write: (p) => void (out += text(p)), close: () => void (closed = true) });
  for (const c of chunks) {
    if (conn.closed) break;
    conn.push(c);
  }
  const result = { out, closed };
  svc.close();
  return result;
}

interface Fixture {
  name: string;
  input: string;
  output: string;
  closes?: boolean;
  maxJobSize?: number;
}

const long = (n: number) => "x".repeat(n);
const FIXTURES: Fixture[] = [
  {
    name: "put and peek",
    input: "put 0 0 60 5\r\nhello\r\npeek 1\r\n",
    output: "INSERTED 1\r\nFOUND 1 5\r\nhello\r\n",
  },
  {
    name: "a body holding CRLF and NUL",
    input: "put 0 0 60 4\r\na\r\n\0\r\npeek 1\r\n",
    output: "INSERTED 1\r\nFOUND 1 4\r\na\r\n\0\r\n",
  },
  { name: "a zero-length body", input: "put 0 0 1 0\r\n\r\npeek 1\r\n", output: "INSERTED 1\r\nFOUND 1 0\r\n\r\n" },
  {
    name: "pipelined commands",
    input: "use t\r\nput 1 0 60 1\r\na\r\nput 0 0 60 1\r\nb\r\nwatch t\r\nreserve\r\ndelete 2\r\nlist-tube-used\r\n",
    output: "USING t\r\nINSERTED 1\r\nINSERTED 2\r\nWATCHING 2\r\nRESERVED 2 1\r\nb\r\nDELETED\r\nUSING t\r\n",
  },
  {
    name: "JOB_TOO_BIG only after body+CRLF is swallowed, no id used",
    input: "put 0 0 60 11\r\n01234567890\r\nput 0 0 60 1\r\nx\r\n",
    output: "JOB_TOO_BIG\r\nINSERTED 1\r\n",
    maxJobSize: 10,
  },
  {
    name: "JOB_TOO_BIG comes before the trailing-garbage check",
    input: "put 0 0 10 12 junk\r\n012345678901\r\nlist-tube-used\r\n",
    output: "JOB_TOO_BIG\r\nUSING default\r\n",
    maxJobSize: 10,
  },
  {
    name: "EXPECTED_CRLF uses up an id; the rest is read as a command",
    input: "put 0 0 10 3\r\nabcde\r\nput 0 0 10 1\r\nx\r\n",
    output: "EXPECTED_CRLF\r\nUNKNOWN_COMMAND\r\nINSERTED 2\r\n",
  },
  {
    name: "put with trailing garbage: BAD_FORMAT and the body is read as a command",
    input: "put 0 0 60 1 x\r\nx\r\n",
    output: "BAD_FORMAT\r\nUNKNOWN_COMMAND\r\n",
  },
  { name: "a 224-byte line is parsed", input: `pause-tube ${long(200)} 4294967295\r\n`, output: "NOT_FOUND\r\n" },
  {
    name: "a 225-byte line: one BAD_FORMAT and the next command answered (1.12 swallows it)",
    input: `${long(223)}\r\nlist-tube-used\r\n`,
    output: "BAD_FORMAT\r\nUSING default\r\n",
  },
  { name: "a 226-byte line", input: `${long(224)}\r\nlist-tube-used\r\n`, output: "BAD_FORMAT\r\nUSING default\r\n" },
  { name: "a 3000-byte line", input: `${long(2998)}\r\nlist-tube-used\r\n`, output: "BAD_FORMAT\r\nUSING default\r\n" },
  {
    name: "an over-long line full of CRs",
    input: `${"\r".repeat(300)}\r\nlist-tube-used\r\n`,
    output: "BAD_FORMAT\r\nUSING default\r\n",
  },
  {
    name: "a stray CR does not hide the next CRLF",
    input: "abc\rdef\r\nlist-tube-used\r\n",
    output: "UNKNOWN_COMMAND\r\nUSING default\r\n",
  },
  {
    name: "a stray CR before CRLF",
    input: "use foo\r\r\nlist-tube-used\r\n",
    output: "BAD_FORMAT\r\nUSING default\r\n",
  },
  { name: "bare LF is not a terminator", input: "list-tube-used\nlist-tube-used\r\n", output: "BAD_FORMAT\r\n" },
  { name: "NUL in a line", input: "use a\0b\r\nlist-tube-used\r\n", output: "BAD_FORMAT\r\nUSING default\r\n" },
  { name: "the empty line", input: "\r\n", output: "UNKNOWN_COMMAND\r\n" },
  {
    name: "quit closes after earlier replies",
    input: "list-tube-used\r\nquit\r\nlist-tube-used\r\n",
    output: "USING default\r\n",
    closes: true,
  },
  { name: "quitXYZ closes too", input: "quitXYZ\r\n", output: "", closes: true },
  { name: "reserve-with-timeout 0 answers at once", input: "reserve-with-timeout 0\r\n", output: "TIMED_OUT\r\n" },
  {
    name: "stats-tube of a missing tube does not create it",
    input: "stats-tube nope\r\nlist-tubes\r\n",
    output: "NOT_FOUND\r\nOK 14\r\n---\n- default\n\r\n",
  },
];

describe("parser fixtures", () => {
  for (const f of FIXTURES) {
    it(f.name, () => {
      const input = bytes(f.input);
      const whole = run([input], f.maxJobSize);
      assert.equal(whole.out, f.output, "fed whole");
      assert.equal(whole.closed, f.closes ?? false, "closed");
      const byByte = run(Array.from(input, (b) => Uint8Array.of(b)), f.maxJobSize);
      assert.equal(byByte.out, f.output, "fed one byte at a time");
      const step = input.length > 600 ? 7 : 1;
      for (let i = 0; i <= input.length; i += step) {
        const split = run([input.subarray(0, i), input.subarray(i)], f.maxJobSize);
        assert.equal(split.out, f.output, `split at ${i}`);
      }
    });
  }
});

describe("Parser framing", () => {
  it("tells whether the next input is a whole line with a prefix, consuming nothing", () => {
    const p = new Parser(16);
    const prefix = bytes("reserve\r\n");
    p.push(bytes("delete 1\r\nreserve\r"));
    assert.equal(p.lineNextStarts(prefix), false, "a delete line comes first");
    assert.equal(p.next(), LINE);
    assert.equal(p.lineNextStarts(prefix), false, "the reserve line is not whole yet");
    p.push(bytes("\n"));
    assert.equal(p.lineNextStarts(prefix), true);
    assert.equal(p.lineNextStarts(bytes("reserve-with-timeout ")), false);
    assert.equal(p.next(), LINE, "nothing was consumed");
    assert.equal(text(p.lineBuf.subarray(p.lineStart, p.lineEnd)), "reserve");
    p.push(bytes("reserve-with-timeout " + "9".repeat(220) + "\r\n"));
    assert.equal(p.lineNextStarts(bytes("reserve-with-timeout ")), false, "a line over the limit is no line");
    assert.equal(p.next(), OVERLONG);
    p.expectBody(3);
    p.push(bytes("reserve\r\nx"));
    assert.equal(p.lineNextStarts(prefix), false, "a put's body is no line");
  });

  it("reports lines as ranges of its own buffer and keeps bytes after them", () => {
    const p = new Parser(16);
    p.push(bytes("stats\r\nuse a\r\nlist"));
    assert.equal(p.next(), LINE);
    assert.equal(text(p.lineBuf.subarray(p.lineStart, p.lineEnd)), "stats");
    assert.equal(p.next(), LINE);
    assert.equal(text(p.lineBuf.subarray(p.lineStart, p.lineEnd)), "use a");
    assert.equal(p.next(), NEED_MORE);
    assert.equal(p.buffered, 4);
    p.push(bytes("-tubes\r\n"));
    assert.equal(p.next(), LINE);
    assert.equal(text(p.lineBuf.subarray(p.lineStart, p.lineEnd)), "list-tubes");
  });

  it("holds no input buffer between commands, and keeps a partial line after the caller reuses its chunk", () => {
    const p = new Parser(16);
    const read = new Uint8Array(32); // an adapter's read buffer, reused for every read
    const fill = (s: string) => {
      read.set(bytes(s));
      return read.subarray(0, s.length);
    };
    p.push(fill("stats\r\n"));
    assert.equal(p.next(), LINE);
    assert.equal(p.next(), NEED_MORE);
    p.release();
    assert.equal(p.heldBytes, 0, "idle: no buffer held");
    p.push(fill("use a\r\nlist"));
    assert.equal(p.next(), LINE);
    assert.equal(p.next(), NEED_MORE);
    p.release(); // "list" is copied out of `read`
    assert.notEqual(p.lineBuf.buffer, read.buffer);
    p.push(fill("-tubes\r\n"));
    assert.equal(p.next(), LINE);
    assert.equal(text(p.lineBuf.subarray(p.lineStart, p.lineEnd)), "list-tubes");
    assert.equal(p.next(), NEED_MORE);
    p.release();
    assert.equal(p.heldBytes, 0, "idle again: the leftover buffer is dropped");
  });

  it("discards an over-long line in bounded memory", () => {
    const p = new Parser();
    const chunk = bytes(long(4096));
    for (let i = 0; i < 256; i++) {
      p.push(chunk);
      assert.equal(p.next(), NEED_MORE);
      assert.ok(p.heldBytes <= 16384, `buffer grew to ${p.heldBytes}`);
    }
    p.push(bytes("\r\nstats\r\n"));
    assert.equal(p.next(), OVERLONG);
    assert.equal(p.next(), LINE);
  });

  it("says when it is throwing input away (the adapters read such input at a pace)", () => {
    const p = new Parser();
    p.push(bytes("list-tube-used\r\n"));
    assert.equal(p.next(), LINE);
    assert.equal(p.discarding, false);
    p.push(bytes(long(300)));
    assert.equal(p.next(), NEED_MORE);
    assert.equal(p.discarding, true, "an over-long line");
    p.push(bytes("\r\n"));
    assert.equal(p.next(), OVERLONG);
    assert.equal(p.discarding, false);
    p.skip(10);
    assert.equal(p.discarding, true, "a body over -z");
    p.push(bytes("0123456789"));
    assert.equal(p.next(), SKIPPED);
    assert.equal(p.discarding, false);
    p.expectBody(4);
    assert.equal(p.discarding, false, "a body being read is kept, not discarded");
  });
});
