// Bad input gets the beanstalkd answer, and nothing is lost.
//
// Every case sends something malformed, hostile or badly timed on one connection and
// checks the exact reply. Then it shows that the same connection still works (a
// put/reserve/delete round trip) and that another client, connected before the case
// started, still works too. Cases that drop the connection show the other client and
// a fresh one instead.
//
// Targets: in-process, the server under this file's runtime (`deno run server.ts` under
// deno test, `bun run server.ts` under bun test), and the compiled binary for a subset.
// Memory bounds are read from /proc/<pid>/status, so they apply to process targets.
//
// Run: node_modules/.bin/deno test -A tests/bad_input_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/bad_input_test.ts
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { beanstalkd, binary, bunServer, denoServer, inProcess, type Running, type Target } from "../harness/targets.ts";
import { openSocket, type Wire } from "../harness/wire.ts";
import {
  Conns,
  eventually,
  jobReply,
  list,
  putId,
  stats,
  statsTube,
  tubeName,
  waitersOn,
  watchOnly,
} from "../harness/wire_checks.ts";

const B = "BAD_FORMAT\r\n";
const U = "UNKNOWN_COMMAND\r\n";
const NF = "NOT_FOUND\r\n";
const USING_DEFAULT = "USING default\r\n";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** put, reserve, delete on a tube of its own; restores the connection's tubes afterwards. */
async function roundTrip(w: Wire, who: string): Promise<void> {
  const t = tubeName("rt");
  assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`, `${who}: use`);
  assert.match(await w.cmd(`watch ${t}`), /^WATCHING \d+\r\n$/, `${who}: watch`);
  assert.match(await w.cmd("ignore default"), /^WATCHING \d+\r\n$/, `${who}: ignore`);
  const r = await w.put("rt");
  const m = /^INSERTED (\d+)\r\n$/.exec(r);
  assert.ok(m, `${who}: put gave ${JSON.stringify(r)}`);
  const id = Number(m[1]);
  assert.equal(await w.cmd("reserve-with-timeout 2"), jobReply("RESERVED", id, "rt"), `${who}: reserve`);
  assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n", `${who}: delete`);
  assert.match(await w.cmd("watch default"), /^WATCHING \d+\r\n$/);
  assert.match(await w.cmd(`ignore ${t}`), /^WATCHING \d+\r\n$/);
  assert.equal(await w.cmd("use default"), USING_DEFAULT);
}

/** Resident set size (or its peak, VmHWM) of a process, in bytes. */
function procKb(pid: number, key: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  assert.ok(m, `${key} of ${pid}`);
  return Number(m[1]) * 1024;
}

/** A plain socket that does not read until resume() (Wire always reads). */
async function rawClient(addr: { host: string; port: number }): Promise<Socket> {
  const s = await openSocket(addr);
  s.on("error", () => {}); // a reset shows as the replies stopping, which the tests check
  s.setNoDelay(true);
  s.pause();
  return s;
}

/** Wait until the socket's unsent backlog stops shrinking for `quietMs` (or is gone). Bounded. */
async function untilStalled(s: Socket, quietMs: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = s.writableLength;
  let since = Date.now();
  while (Date.now() < deadline && s.writableLength > 0) {
    await sleep(25);
    if (s.writableLength !== last) {
      last = s.writableLength;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return;
  }
}

/** Deterministic pseudo-random bytes (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** Malformed lines that can never be a valid command (so nothing blocks or quits). */
const JUNK_LINES = [
  "put -1 0 60 1",
  "put 0 0 60 x",
  "delete abc",
  "use -bad",
  "watch a*b",
  "peek 18446744073709551616",
  "stats-job 1 2",
  "release 1",
  "bury",
  "kick-job !",
  "list-tubes now",
];

/** About `size` bytes of garbage: junk lines, binary lines, over-long lines, NULs, stray CRs. */
function garbage(next: () => number, size: number): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  while (n < size) {
    const kind = next() % 4;
    let line: Buffer;
    if (kind === 0) {
      line = Buffer.from(JUNK_LINES[next() % JUNK_LINES.length]!, "latin1");
    } else {
      // Binary: starts with a byte no verb starts with; kind 3 is over-long.
      const len = kind === 3 ? 225 + (next() % 2000) : 1 + (next() % 200);
      line = Buffer.alloc(len);
      for (let i = 0; i < len; i++) line[i] = next() & 0xff;
      line[0] = 0x80 | (next() & 0x7f);
    }
    parts.push(line, Buffer.from("\r\n"));
    n += line.length + 2;
  }
  return Buffer.concat(parts);
}

interface Scope {
  /** Run every case, or only those marked `few`. */
  all: boolean;
}

interface CaseOpts {
  /** Also run against the targets that get only a few cases. */
  few?: boolean;
  /** Against the -z 10 server. */
  small?: boolean;
  /** 1.12 answers differently on purpose (spec §1): skipped for the beanstalkd reference. */
  tubewayOnly?: boolean;
}

/** What a case did to its connection. */
type After = void | "gone";

function badInputSuite(target: Target, scope: Scope): void {
  const v112 = target === beanstalkd;
  const missing = target.unavailable();

  describe(`bad input: ${target.name}`, { skip: skipUnless(missing === undefined, missing ?? "") }, () => {
    let main: Running | undefined;
    let small: Running | undefined;
    before(async () => {
      [main, small] = await Promise.all([target.start([]), target.start(["-z", "10"])]);
    });
    after(async () => {
      await Promise.all([main?.stop(), small?.stop()]);
    });

    /**
     * One case: `other` connects first, then `w`, the connection the bad input goes to.
     * Afterwards both must pass a round trip (a fresh connection stands in for w when
     * the case dropped it).
     */
    const kase = (
      name: string,
      opts: CaseOpts,
      body: (w: Wire, other: Wire, c: Conns, srv: Running) => Promise<After>,
    ) => {
      if (!scope.all && !opts.few) return;
      if (v112 && opts.tubewayOnly) return;
      it(name, async () => {
        const srv = opts.small ? small : main;
        assert.ok(srv, "server did not start");
        const c = new Conns(srv.addr);
        try {
          const other = await c.dial();
          const w = await c.dial();
          const gone = await body(w, other, c, srv);
          if (gone === "gone") await roundTrip(await c.dial(), "a new connection");
          else await roundTrip(w, "the same connection");
          await roundTrip(other, "another connection");
        } finally {
          c.closeAll();
        }
      });
    };

    /** Send `sent` (in one write, or several) and expect exactly `want`, reply by reply. */
    const lineCase = (name: string, sent: string | string[], want: string[], opts: CaseOpts = {}) =>
      kase(name, opts, async (w) => {
        for (const piece of typeof sent === "string" ? [sent] : sent) {
          w.send(piece);
          if (typeof sent !== "string") await sleep(5);
        }
        const got: string[] = [];
        for (let i = 0; i < want.length; i++) got.push(await w.reply());
        assert.deepEqual(got, want, `sent ${JSON.stringify(sent).slice(0, 300)}`);
      });

    // ---- malformed lines -------------------------------------------------------------

    lineCase("unknown verb", "frobnicate\r\n", [U], { few: true });
    lineCase("empty line", "\r\n", [U]);
    lineCase("upper-case verb", "STATS\r\n", [U]);
    lineCase("verb that needs an argument, sent without its space", "delete\r\n", [U]);
    lineCase("near-miss verb", "puts 0 0 60 1\r\n", [U]);

    lineCase("missing args: put", "put 0 0 60\r\n", [B], { few: true });
    lineCase("missing args: release", "release 1 2\r\n", [B]);
    lineCase("missing args: bury", "bury 1\r\n", [B]);
    lineCase("missing args: pause-tube", "pause-tube default\r\n", [B]);
    lineCase("missing args: empty id", "stats-job \r\n", [B]);

    lineCase("extra args: delete", "delete 1 2\r\n", [B]);
    lineCase("extra args: release", "release 1 2 3 4\r\n", [B]);
    lineCase("extra args: a no-argument command", "reserve now\r\n", [B]);
    lineCase("extra args: trailing space after a no-argument command", "stats \r\n", [B]);
    lineCase("extra args: trailing space after the last number", "touch 1 \r\n", [B]);
    // No body is consumed after a BAD_FORMAT put: the body line is the next command.
    lineCase("extra args: put with trailing garbage", "put 0 0 60 2 x\r\nhi\r\n", [B, U]);

    lineCase("non-digits: id", "delete abc\r\n", [B]);
    lineCase("non-digits: trailing letters", "peek 111foo\r\n", [B]);
    lineCase("non-digits: leading letters", "touch a111\r\n", [B]);
    lineCase("non-digits: punctuation", "kick-job !@#\r\n", [B]);
    lineCase("non-digits: put ttr", "put 0 0 sixty 1\r\n", [B]);
    lineCase("non-digits: bury pri", "bury 1 x\r\n", [B]);

    lineCase("sign: plus", "peek +1\r\n", [B]);
    lineCase("sign: minus id", "delete -1\r\n", [B]);
    lineCase("sign: minus pri", "put -1 0 60 1\r\n", [B], { few: true });
    lineCase("sign: release pri", "release 1 +2 0\r\n", [B]);
    lineCase("sign: pause delay", "pause-tube default -1\r\n", [B]);

    lineCase("tab: instead of the verb's space", "delete\t1\r\n", [U]);
    lineCase("tab: before a number", "delete \t1\r\n", [B]);
    lineCase("tab: between numbers", "release 1\t2 0\r\n", [B]);
    lineCase("tab: inside a tube name", "use foo\tbar\r\n", [B]);

    lineCase("overflow u32: put pri", "put 4294967296 0 60 1\r\n", [B]);
    lineCase("overflow u32: put delay", "put 0 4294967296 60 1\r\n", [B]);
    lineCase("overflow u32: put ttr", "put 0 0 4294967296 1\r\n", [B]);
    lineCase("overflow u32: put bytes", "put 0 0 60 4294967296\r\n", [B], { few: true });
    lineCase("overflow u32: bury pri", "bury 1 4294967296\r\n", [B]);
    lineCase("overflow u32: release delay", "release 1 0 4294967296\r\n", [B]);
    lineCase("overflow u32: pause delay", "pause-tube default 4294967296\r\n", [B]);
    lineCase("overflow u32: many digits", "put 99999999999999999999 0 60 1\r\n", [B]);
    lineCase("u32 max is fine: pause-tube", "pause-tube default 4294967295\r\npause-tube default 0\r\n", [
      "PAUSED\r\n",
      "PAUSED\r\n",
    ]);

    lineCase("overflow u64: peek", "peek 18446744073709551616\r\n", [B], { few: true });
    lineCase("overflow u64: delete", "delete 99999999999999999999999\r\n", [B]);
    lineCase("overflow u64: kick-job", "kick-job 18446744073709551616\r\n", [B]);
    lineCase("overflow u64: touch", "touch 18446744073709551616\r\n", [B]);
    lineCase("u64 max is fine: peek", "peek 18446744073709551615\r\n", [NF]);

    lineCase("bad tube name: 201 chars", `use ${"a".repeat(201)}\r\n`, [B], { few: true });
    lineCase("bad tube name: leading '-'", "watch -foo\r\n", [B]);
    lineCase("bad tube name: '*'", "use a*b\r\n", [B]);
    lineCase("bad tube name: space inside", "use a b\r\n", [B]);
    lineCase("bad tube name: trailing space", "use foo \r\n", [B]);
    lineCase("bad tube name: two spaces before it", "use  foo\r\n", [B]);
    lineCase("bad tube name: empty", "use \r\n", [B]);
    lineCase("bad tube name: non-ASCII", "use caf\xe9\r\n", [B]);
    lineCase("bad tube name: ignore", "ignore -x\r\n", [B]);
    lineCase("bad tube name: stats-tube", "stats-tube a*\r\n", [B]);
    lineCase("bad tube name: pause-tube", "pause-tube -x 1\r\n", [B]);
    lineCase("bad tube name: pause-tube, 201 chars", `pause-tube ${"a".repeat(201)} 1\r\n`, [B]);

    lineCase("NUL inside a tube name", "use fo\0o\r\n", [B], { few: true });
    lineCase("NUL alone", "\0\r\n", [B]);
    lineCase("NUL after a no-argument command", "stats\0\r\n", [B]);
    lineCase("NUL in an unknown command", "frob\0nicate\r\n", [B]);
    lineCase("NUL in a number", "peek 1\x002\r\n", [B]);

    lineCase("a bare LF does not end a line", "stats\nlist-tube-used\r\n", [B]);
    lineCase("stray CR before CRLF: no-argument command", "stats\r\r\nlist-tube-used\r\n", [B, USING_DEFAULT], {
      tubewayOnly: true,
    });
    lineCase("stray CR before CRLF: tube name", "use foo\r\r\nlist-tube-used\r\n", [B, USING_DEFAULT], {
      tubewayOnly: true,
    });
    lineCase("stray CR before CRLF: number", "delete 1\r\r\n", [B], { tubewayOnly: true });
    lineCase("abc\\rdef\\r\\n is one unknown line", "abc\rdef\r\nlist-tube-used\r\n", [U, USING_DEFAULT], {
      tubewayOnly: true,
      few: true,
    });

    // ---- line length -----------------------------------------------------------------

    const junk = (total: number) => "x".repeat(total - 2) + "\r\n";

    lineCase("a 224-byte line (CRLF included) is parsed", junk(224), [U], { few: true });
    kase("a 224-byte peek with leading zeros finds the job", {}, async (w) => {
      const id = await putId(w, "found");
      const line = `peek ${String(id).padStart(217, "0")}\r\n`;
      assert.equal(line.length, 224);
      assert.equal(await w.cmd(line.slice(0, -2)), jobReply("FOUND", id, "found"));
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    });
    kase("the longest command, pause-tube <200 chars> 4294967295, fits", { few: true }, async (w) => {
      const name = (tubeName("longest") + "p".repeat(200)).slice(0, 200);
      assert.equal(await w.cmd(`watch ${name}`), "WATCHING 2\r\n");
      const line = `pause-tube ${name} 4294967295`;
      assert.equal(line.length + 2, 224);
      assert.equal(await w.cmd(line), "PAUSED\r\n");
      assert.equal((await statsTube(w, name)).num("pause"), 4294967295);
      assert.equal(await w.cmd(`ignore ${name}`), "WATCHING 1\r\n");
    });
    if (v112) {
      // 1.12 drops the CR with the first 224-byte chunk: the next command's CRLF ends the line.
      lineCase("a 225-byte line: 1.12 swallows the next command", junk(225) + "list-tube-used\r\n", [B]);
    } else {
      lineCase("a 225-byte line: one BAD_FORMAT, the next command is answered", junk(225) + "list-tube-used\r\n", [
        B,
        USING_DEFAULT,
      ], { few: true });
      kase("a 225-byte line alone is answered at once", {}, async (w) => {
        w.send(junk(225));
        assert.equal(await w.reply(), B);
      });
    }
    lineCase("a 226-byte line: one BAD_FORMAT, the next command is answered", junk(226) + "list-tube-used\r\n", [
      B,
      USING_DEFAULT,
    ]);
    lineCase("a 10,000-byte line: one BAD_FORMAT, the next command is answered", junk(10_000) + "list-tube-used\r\n", [
      B,
      USING_DEFAULT,
    ], { few: true });
    lineCase(
      "a 10,000-byte line in 100-byte writes",
      Array.from({ length: 100 }, (_, i) => junk(10_000).slice(i * 100, i * 100 + 100)).concat("list-tube-used\r\n"),
      [B, USING_DEFAULT],
    );
    kase(
      "line lengths around 224 and 448, split at the CR, the LF and the 224th byte",
      { tubewayOnly: true },
      async (w) => {
        for (const total of [222, 223, 224, 225, 226, 227, 447, 448, 449, 450, 451]) {
          const line = junk(total);
          const want = total <= 224 ? U : B;
          const splits = [0, total - 2, total - 1, 224, 223, 225].filter((s) => s >= 0 && s < total);
          for (const at of splits) {
            const parts = at === 0 ? [line] : [line.slice(0, at), line.slice(at)];
            for (const p of parts) {
              w.send(p);
              if (parts.length > 1) await sleep(3);
            }
            w.send("list-tube-used\r\n");
            const got = [await w.reply(), await w.reply()];
            assert.deepEqual(got, [want, USING_DEFAULT], `${total}-byte line split at ${at}`);
          }
        }
      },
    );

    // ---- bodies ------------------------------------------------------------------------

    kase(
      "oversized body (-z 10): JOB_TOO_BIG only after the body, no id used up",
      { small: true, few: true },
      async (w) => {
        const id = await putId(w, "0123456789");
        w.send("put 0 0 60 11\r\nabcdefghij");
        assert.ok(await w.silentFor(150), "no reply before the whole body");
        w.send("k");
        assert.ok(await w.silentFor(150), "no reply before the body's CRLF");
        w.send("\r\n");
        assert.equal(await w.reply(), "JOB_TOO_BIG\r\n");
        // The size check comes before the trailing-garbage check, and swallows bytes+2.
        w.send("put 0 0 60 11 junk\r\nabcdefghijk\r\n");
        assert.equal(await w.reply(), "JOB_TOO_BIG\r\n");
        // The swallowed bytes are not read as commands, whatever they contain.
        w.send("put 0 0 60 11\r\nstats\r\nstat\r\n");
        assert.equal(await w.reply(), "JOB_TOO_BIG\r\n");
        const next = await putId(w, "fits");
        assert.equal(next, id + 1, "JOB_TOO_BIG used up no id");
        for (const j of [id, next]) assert.equal(await w.cmd(`delete ${j}`), "DELETED\r\n");
        assert.equal((await stats(w)).num("max-job-size"), 10);
      },
    );

    kase("EXPECTED_CRLF uses up an id; the bytes after the body are the next command", { few: true }, async (w) => {
      const id = await putId(w, "one");
      w.send("put 0 0 60 3\r\nabcde\r\n");
      assert.equal(await w.reply(), "EXPECTED_CRLF\r\n");
      assert.equal(await w.reply(), U, "the trailing CRLF is an empty line");
      w.send("put 0 0 60 3\r\nabc\n\r");
      assert.equal(await w.reply(), "EXPECTED_CRLF\r\n");
      const next = await putId(w, "two");
      assert.equal(next, id + 3, "each EXPECTED_CRLF used up an id");
      for (const j of [id, next]) assert.equal(await w.cmd(`delete ${j}`), "DELETED\r\n");
    });

    kase("a body with NUL, CR, LF, CRLF and every byte value round-trips exactly", { few: true }, async (w) => {
      const body = "\0\r\n\r\n\0" + String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i)) + "\r\n";
      const t = tubeName("bin");
      await w.cmd(`use ${t}`);
      await w.cmd(`watch ${t}`);
      const id = await putId(w, body);
      assert.equal(await w.cmd(`peek ${id}`), jobReply("FOUND", id, body));
      assert.equal(await w.cmd(`reserve-job ${id}`), jobReply("RESERVED", id, body));
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      await w.cmd(`ignore ${t}`);
    });

    // ---- framing across writes ---------------------------------------------------------

    kase("a command split into one byte per write", {}, async (w) => {
      const trickle = async (s: string) => {
        for (let i = 0; i < s.length && i < 100; i++) {
          w.send(s[i]!);
          await sleep(2);
        }
      };
      const t = tubeName("trickle");
      await trickle(`use ${t}\r\n`);
      assert.equal(await w.reply(), `USING ${t}\r\n`);
      await trickle("put 0 0 60 5\r\nhello\r\n");
      const m = /^INSERTED (\d+)\r\n$/.exec(await w.reply());
      assert.ok(m);
      await trickle(`peek ${m[1]}\r\n`);
      assert.equal(await w.reply(), jobReply("FOUND", Number(m[1]), "hello"));
      assert.equal(await w.cmd(`delete ${m[1]}`), "DELETED\r\n");
    });

    kase("200 commands pipelined in one write", { few: true }, async (w) => {
      const t = tubeName("pipe");
      await w.cmd(`use ${t}`);
      w.send("put 0 0 60 3\r\nabc\r\n".repeat(200));
      const ids: number[] = [];
      for (let i = 0; i < 200; i++) {
        const m = /^INSERTED (\d+)\r\n$/.exec(await w.reply());
        assert.ok(m, `reply ${i}`);
        ids.push(Number(m[1]));
      }
      assert.deepEqual(ids, ids.map((_, i) => ids[0]! + i), "answered in order");
      w.send(ids.map((id) => `delete ${id}\r\n`).join(""));
      for (let i = 0; i < 200; i++) assert.equal(await w.reply(), "DELETED\r\n");
      // A mixed pipeline, answered in order.
      w.send("list-tube-used\r\nfoo\r\nuse default\r\npeek 0\r\nlist-tubes-watched\r\n");
      assert.deepEqual(
        [await w.reply(), await w.reply(), await w.reply(), await w.reply(), await w.reply()],
        [`USING ${t}\r\n`, U, USING_DEFAULT, NF, list("default")],
      );
    });

    // ---- connections that go away --------------------------------------------------------

    kase("a half-sent body, then disconnect: no job is created", {}, async (w, other) => {
      const t = tubeName("half");
      // Earlier cases close their connections without waiting for the server to notice;
      // let those closes land first, so the count below starts from just `other` and `w`.
      await eventually(
        "only this case's two connections are open",
        async () => (await stats(other)).num("current-connections"),
        (n) => n === 2,
      );
      const s0 = await stats(other);
      await w.cmd(`use ${t}`);
      w.send("put 0 0 60 100\r\n" + "h".repeat(50));
      await eventually(
        "the put line was read",
        async () => (await stats(other)).num("current-producers"),
        (n) => n === s0.num("current-producers") + 1,
      );
      w.close();
      await eventually(
        "the connection is gone",
        async () => (await stats(other)).num("current-connections"),
        (n) => n === s0.num("current-connections") - 1,
      );
      const s1 = await stats(other);
      assert.equal(s1.num("current-jobs-ready"), s0.num("current-jobs-ready"));
      assert.equal(s1.num("total-jobs"), s0.num("total-jobs"));
      assert.equal(await other.cmd(`stats-tube ${t}`), NF, "its tube went away with it: it holds no job");
      return "gone";
    });

    kase(
      "a client that vanishes holding a reserved job: the job goes to another client",
      { few: true },
      async (w, other) => {
        const t = tubeName("vanish");
        await w.cmd(`use ${t}`);
        await w.cmd(`watch ${t}`);
        const id = await putId(w, "keep me");
        assert.equal(await w.cmd(`reserve-job ${id}`), jobReply("RESERVED", id, "keep me"));
        await watchOnly(other, t);
        other.send("reserve-with-timeout 5\r\n");
        await waitersOn(w, t, 1);
        w.close();
        assert.equal(await other.reply(), jobReply("RESERVED", id, "keep me"));
        assert.equal(await other.cmd(`delete ${id}`), "DELETED\r\n");
        await other.cmd("watch default");
        await other.cmd(`ignore ${t}`);
        return "gone";
      },
    );

    kase("a client that vanishes while waiting in reserve: current-waiting goes back", {}, async (w, other) => {
      const t = tubeName("waitgone");
      const base = (await stats(other)).num("current-waiting");
      await w.cmd(`watch ${t}`);
      w.send("reserve\r\n");
      await waitersOn(other, t, 1);
      assert.equal((await stats(other)).num("current-waiting"), base + 1);
      w.close();
      await eventually(
        "current-waiting back",
        async () => (await stats(other)).num("current-waiting"),
        (n) => n === base,
      );
      assert.equal(await other.cmd(`stats-tube ${t}`), NF, "the tube it watched is gone");
      return "gone";
    });

    kase("half-close while waiting: TIMED_OUT, then the server closes", { few: true }, async (w, other) => {
      const t = tubeName("halfclose");
      await w.cmd(`watch ${t}`);
      w.send("reserve\r\n");
      await waitersOn(other, t, 1);
      w.end();
      assert.equal(await w.reply(), "TIMED_OUT\r\n");
      await w.closed();
      assert.equal(w.pending, "");
      return "gone";
    });

    kase("reserve and half-close in one go: TIMED_OUT, then the server closes", {}, async (w) => {
      await w.cmd(`watch ${tubeName("halfclose2")}`);
      w.send("reserve\r\n");
      w.end();
      assert.equal(await w.reply(), "TIMED_OUT\r\n");
      await w.closed();
      return "gone";
    });

    kase("half-close after pipelined commands: all are answered, then the server closes", {}, async (w) => {
      w.send("list-tube-used\r\nfoo\r\nlist-tube-used\r\n");
      w.end();
      assert.deepEqual([await w.reply(), await w.reply(), await w.reply()], [USING_DEFAULT, U, USING_DEFAULT]);
      await w.closed();
      return "gone";
    });

    kase(
      "commands pipelined behind a blocked reserve wait for it, then are answered in order",
      { few: true },
      async (w, other) => {
        const t = tubeName("behind");
        await watchOnly(w, t);
        w.send("reserve\r\nlist-tube-used\r\nfrob\r\npeek 0\r\n");
        await waitersOn(other, t, 1);
        assert.ok(await w.silentFor(100), "nothing is answered before the reserve");
        await other.cmd(`use ${t}`);
        const id = await putId(other, "wake");
        assert.deepEqual(
          [await w.reply(), await w.reply(), await w.reply(), await w.reply()],
          [jobReply("RESERVED", id, "wake"), USING_DEFAULT, U, NF],
        );
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        await w.cmd("watch default");
        await w.cmd(`ignore ${t}`);
        await other.cmd("use default");
      },
    );

    kase("160 KB pipelined behind a blocked reserve: all answered once it is", {}, async (w, other) => {
      const t = tubeName("behind-big");
      await watchOnly(w, t);
      const N = 10_000;
      w.send("reserve\r\n" + "list-tube-used\r\n".repeat(N));
      await waitersOn(other, t, 1);
      await other.cmd(`use ${t}`);
      const id = await putId(other, "wake");
      assert.equal(await w.reply(), jobReply("RESERVED", id, "wake"));
      for (let i = 0; i < N; i++) assert.equal(await w.line(), "USING default", `reply ${i + 1}`);
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      await w.cmd("watch default");
      await w.cmd(`ignore ${t}`);
      await other.cmd("use default");
    });

    kase("half-close with commands pipelined behind a blocked reserve", {}, async (w, other) => {
      const t = tubeName("behind-end");
      await w.cmd(`watch ${t}`);
      w.send("reserve\r\nlist-tube-used\r\n");
      await waitersOn(other, t, 1);
      w.end();
      assert.deepEqual([await w.reply(), await w.reply()], ["TIMED_OUT\r\n", USING_DEFAULT]);
      await w.closed();
      return "gone";
    });

    // ---- floods ------------------------------------------------------------------------

    kase("garbage at full speed for ~1 s while another client works with bounded latency", {}, async (g, worker) => {
      const next = rng(0x7ab3);
      const MAX_BYTES = 24 * 1024 * 1024;
      let sent = 0;
      let done = false;
      // Count-based, not timed (speed goals are benchmarks, and this box is loaded): the
      // flood goes on until the worker has had WANT round trips, so a server that served
      // only the flooder would leave the worker short when the flood hits its caps.
      const WANT = 20;
      const latencies: number[] = [];
      const flood = (async () => {
        const t0 = Date.now();
        for (let i = 0; i < 5000 && latencies.length < WANT && Date.now() - t0 < 15_000 && sent < MAX_BYTES; i++) {
          const chunk = garbage(next, 32 * 1024);
          g.send(chunk);
          sent += chunk.length;
          const n = g.pending.length;
          if (n > 0) await g.bytes(n);
          await sleep(0);
        }
        done = true;
      })();
      try {
        while (!done && latencies.length < WANT) {
          const t0 = Date.now();
          await roundTrip(worker, "the worker during the flood");
          latencies.push(Date.now() - t0);
        }
      } finally {
        await flood;
      }
      const worst = Math.max(...latencies);
      assert.ok(latencies.length >= WANT, `only ${latencies.length} round trips during ${sent} bytes of garbage`);
      assert.ok(worst < STALL_MS, `worst round trip ${worst} ms during ${sent} bytes of garbage`);
      // The flooding connection itself recovers: end any partial line, then a marker.
      // (Not in 1.12: a CR without LF in the garbage leaves it waiting for the 224-byte rule.)
      if (v112) return "gone";
      g.send("\r\nlist-tube-used\r\n");
      const deadline = Date.now() + 15_000;
      let replies = 0;
      for (;;) {
        const l = await g.line(Math.max(1, deadline - Date.now()));
        if (l === "USING default") break;
        assert.match(l, /^(BAD_FORMAT|UNKNOWN_COMMAND)$/, `reply ${replies} to garbage`);
        replies++;
        assert.ok(replies < 2_000_000);
      }
    });
  });
}

/**
 * The bound on one round trip of another client while a flood is on. Not a speed goal
 * (those are benchmarks): the flooding client here never reads, so a server that stalled
 * on it would never answer anyone, and only such a stall should fail; a loaded 2-core CI
 * box has shown 1.1 s round trips, so the bound is far above that.
 */
const STALL_MS = 10_000;

/**
 * A client pipelines puts (or peeks of a 64 KiB job) and does not read. The server
 * must stop taking more than it can answer: its RSS stays bounded, other clients are
 * answered, and when the client finally reads it gets every reply in order.
 */
function floodSuite(target: Target): void {
  const missing = target.unavailable();
  describe(`never-reading clients: ${target.name}`, { skip: skipUnless(missing === undefined, missing ?? "") }, () => {
    const rss = (r: Running, key: "VmRSS" | "VmHWM") =>
      r.child?.pid !== undefined && existsSync(`/proc/${r.child.pid}/status`) ? procKb(r.child.pid, key) : undefined;

    it("50,000 pipelined puts (~20 MB), never read: bounded memory, others served, all replies in order", async () => {
      const r = await target.start([]);
      const c = new Conns(r.addr);
      let s: Socket | undefined;
      try {
        const other = await c.dial();
        await roundTrip(other, "before the flood");
        const rss0 = rss(r, "VmRSS");
        const N = 50_000;
        const body = "b".repeat(380);
        const one = Buffer.from(`put 0 0 60 ${body.length}\r\n${body}\r\n`, "latin1");
        s = await rawClient(r.addr);
        const sock = s;
        const perChunk = 2500;
        const chunk = Buffer.concat(Array.from({ length: perChunk }, () => one));
        for (let i = 0; i < N / perChunk; i++) sock.write(chunk);
        // Either the server stops reading (its replies back up) or it takes it all in.
        await untilStalled(sock, 400, 20_000);
        const stalledRss = rss(r, "VmRSS");
        const t0 = Date.now();
        await roundTrip(other, "another client during the flood");
        const ms = Date.now() - t0;
        assert.ok(ms < STALL_MS, `round trip during the flood took ${ms} ms`);
        // Now read everything: INSERTED ids, consecutive, N of them.
        let last = -1;
        let skipped = 0;
        let count = 0;
        let rest = "";
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`only ${count} of ${N} replies within 60 s`)), 60_000);
          sock.on("data", (d: Buffer) => {
            const lines = (rest + d.toString("latin1")).split("\r\n");
            rest = lines.pop()!;
            for (const l of lines) {
              const m = /^INSERTED (\d+)$/.exec(l);
              if (!m) return reject(new Error(`reply ${count}: ${JSON.stringify(l)}`));
              // Ids go up by one, except once: the other client's put may land in between.
              const got = Number(m[1]);
              if (count > 0 && got !== last + 1 && (got !== last + 2 || skipped++ > 0)) {
                return reject(new Error(`reply ${count}: id ${got} after ${last}`));
              }
              last = got;
              count++;
            }
            if (count === N) {
              clearTimeout(timer);
              resolve();
            }
          });
          sock.resume();
        });
        assert.equal(rest, "");
        const sN = await stats(other);
        assert.equal(sN.num("current-jobs-ready"), N);
        const peak = rss(r, "VmHWM");
        if (rss0 !== undefined && peak !== undefined) {
          const grew = (peak - rss0) / 2 ** 20;
          assert.ok(grew < 200, `server RSS peak grew by ${grew.toFixed(1)} MiB (stalled at ${stalledRss})`);
        }
      } finally {
        s?.destroy();
        c.closeAll();
        await r.stop();
      }
    });

    it("3,000 pipelined peeks of a 64 KiB job (~200 MB of replies), never read: output stays bounded", async () => {
      const r = await target.start([]);
      const c = new Conns(r.addr);
      let s: Socket | undefined;
      try {
        const other = await c.dial();
        const body = "j".repeat(65535);
        const id = await putId(other, body);
        const rss0 = rss(r, "VmRSS");
        const N = 3000;
        s = await rawClient(r.addr);
        const sock = s;
        sock.write(`peek ${id}\r\n`.repeat(N));
        await untilStalled(sock, 400, 10_000);
        const stalled = rss(r, "VmRSS");
        const t0 = Date.now();
        await roundTrip(other, "another client while the peeks are stalled");
        const ms = Date.now() - t0;
        assert.ok(ms < STALL_MS, `round trip during the flood took ${ms} ms`);
        if (rss0 !== undefined && stalled !== undefined) {
          const grew = (stalled - rss0) / 2 ** 20;
          assert.ok(grew < 100, `server RSS grew by ${grew.toFixed(1)} MiB while the replies were not read`);
        }
        const head = Buffer.from(`FOUND ${id} 65535\r\n`, "latin1");
        const size = head.length + 65535 + 2;
        let buf: Buffer = Buffer.alloc(0);
        let count = 0;
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`only ${count} of ${N} replies within 60 s`)), 60_000);
          sock.on("data", (d: Buffer) => {
            buf = buf.length ? Buffer.concat([buf, d]) : d;
            while (buf.length >= size) {
              if (!buf.subarray(0, head.length).equals(head) || buf[size - 2] !== 13 || buf[size - 1] !== 10) {
                clearTimeout(timer);
                return reject(new Error(`reply ${count}: ${JSON.stringify(buf.subarray(0, 40).toString("latin1"))}`));
              }
              buf = buf.subarray(size);
              count++;
            }
            if (count === N) {
              clearTimeout(timer);
              resolve();
            }
          });
          sock.resume();
        });
        assert.equal(buf.length, 0);
        const peak = rss(r, "VmHWM");
        if (rss0 !== undefined && peak !== undefined) {
          const grew = (peak - rss0) / 2 ** 20;
          assert.ok(grew < 100, `server RSS peak grew by ${grew.toFixed(1)} MiB`);
        }
        assert.equal(await other.cmd(`delete ${id}`), "DELETED\r\n");
      } finally {
        s?.destroy();
        c.closeAll();
        await r.stop();
      }
    });
  });
}

/** The server process under this file's runtime. */
const SAME_RUNTIME: Target = RUNTIME === "bun" ? bunServer : denoServer;
/** Set TUBEWAY_BAD_INPUT_REFERENCE=1 to check these expectations against beanstalkd 1.12. */
const REFERENCE = process.env.TUBEWAY_BAD_INPUT_REFERENCE === "1";

if (REFERENCE) {
  badInputSuite(beanstalkd, { all: true });
  floodSuite(beanstalkd);
} else {
  badInputSuite(inProcess, { all: true });
  badInputSuite(SAME_RUNTIME, { all: true });
  badInputSuite(binary, { all: false });
  floodSuite(inProcess);
  floodSuite(SAME_RUNTIME);
  floodSuite(binary);
}
