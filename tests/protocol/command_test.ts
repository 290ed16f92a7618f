// The command table and argument readers, one line at a time.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Command, OP, parseCommand } from "../../protocol/command.ts";

const NAMES = Object.fromEntries(Object.entries(OP).map(([k, v]) => [v, k]));

function parse(line: string): Command & { name: string } {
  const b = Uint8Array.from(line, (c) => c.charCodeAt(0));
  const cmd = new Command();
  parseCommand(b, 0, b.length, cmd);
  return Object.assign(cmd, { name: NAMES[cmd.op]! });
}

describe("verbs, matched as 1.12 matches them", () => {
  const table: Array<[string, string]> = [
    ["", "UNKNOWN_COMMAND"],
    ["PUT 0 0 0 0", "UNKNOWN_COMMAND"],
    ["put", "UNKNOWN_COMMAND"],
    ["put\t0 0 0 0", "UNKNOWN_COMMAND"],
    ["peek", "UNKNOWN_COMMAND"],
    ["delete", "UNKNOWN_COMMAND"],
    ["use", "UNKNOWN_COMMAND"],
    ["kick", "UNKNOWN_COMMAND"],
    ["reserve", "RESERVE"],
    ["reserve ", "BAD_FORMAT"],
    ["reserve-with-timeout", "BAD_FORMAT"],
    ["reserve-job", "BAD_FORMAT"],
    ["stats", "STATS"],
    ["stats ", "BAD_FORMAT"],
    ["statsfoo", "BAD_FORMAT"],
    ["stats-job", "BAD_FORMAT"],
    ["stats-tube", "BAD_FORMAT"],
    ["list-tubes", "LIST_TUBES"],
    ["list-tubesX", "BAD_FORMAT"],
    ["list-tubes-watched", "LIST_TUBES_WATCHED"],
    ["list-tube-used", "LIST_TUBE_USED"],
    ["peek-ready", "PEEK_READY"],
    ["peek-readyX", "BAD_FORMAT"],
    ["peek-delayed", "PEEK_DELAYED"],
    ["peek-buried", "PEEK_BURIED"],
    ["quit", "QUIT"],
    ["quitXYZ", "QUIT"],
    ["pause-tube", "BAD_FORMAT"],
    ["kick-job 5", "KICK_JOB"],
    ["kick 5", "KICK"],
    ["use a\0b", "BAD_FORMAT"],
    ["xyz\0", "BAD_FORMAT"],
  ];
  for (const [line, want] of table) {
    it(JSON.stringify(line) + " -> " + want, () => assert.equal(parse(line).name, want));
  }
});

describe("strict integers", () => {
  it("skips spaces, allows leading zeros, reads every argument", () => {
    const c = parse("put  1   0  5    1");
    assert.equal(c.name, "PUT");
    assert.deepEqual([c.pri, c.delay, c.ttr, c.n, c.trailing], [1, 0, 5, 1, false]);
    assert.equal(parse("peek 0000000000000000000000001").id, 1);
  });
  const bad = [
    "put -1 0 0 0",
    "put +1 0 0 0",
    "put 4294967296 0 0 0",
    "put 0 0 0",
    "put 0 0 0 \t1",
    "peek 18446744073709551616",
    "peek 99999999999999999999999",
    "peek foo111",
    "peek 111foo",
    "peek 1 ",
    "touch !@#",
    "bury 1",
    "bury a 1",
    "release 1 2",
    "release 1 2 3 4",
    "delete ",
    "stats-job 111 222",
  ];
  for (const line of bad) {
    it(`${JSON.stringify(line)} is BAD_FORMAT`, () => assert.equal(parse(line).name, "BAD_FORMAT"));
  }
  it("u32 max and u64 max are accepted", () => {
    assert.equal(parse("put 4294967295 4294967295 4294967295 0").name, "PUT");
    const c = parse("peek 18446744073709551615");
    assert.equal(c.name, "PEEK");
    assert.ok(c.id > Number.MAX_SAFE_INTEGER);
  });
  it("put keeps trailing garbage for the check after the size check", () => {
    const c = parse("put 0 0 10 99999 junk");
    assert.equal(c.name, "PUT");
    assert.equal(c.n, 99999);
    assert.equal(c.trailing, true);
  });
});

describe("lax readers of kick and reserve-with-timeout", () => {
  const kicks: Array<[string, number | "BAD"]> = [
    ["kick 5", 5],
    ["kick 2abc", 2],
    ["kick -1", 4294967295],
    ["kick 4294967296", 0],
    ["kick \t7", 7],
    ["kick +3", 3],
    ["kick x", "BAD"],
    ["kick ", "BAD"],
    ["kick 18446744073709551616", "BAD"],
    ["kick 18446744073709551615", 4294967295],
  ];
  for (const [line, want] of kicks) {
    it(`${line} -> ${want}`, () => {
      const c = parse(line);
      if (want === "BAD") assert.equal(c.name, "BAD_FORMAT");
      else assert.deepEqual([c.name, c.n], ["KICK", want]);
    });
  }
  const waits: Array<[string, number | "BAD"]> = [
    ["reserve-with-timeout 3", 3],
    ["reserve-with-timeout abc", 0],
    ["reserve-with-timeout ", 0],
    ["reserve-with-timeout 1abc", 1],
    ["reserve-with-timeout -1", -1],
    ["reserve-with-timeout 4294967297", 1],
    ["reserve-with-timeout 2147483648", -2147483648],
    ["reserve-with-timeout 9223372036854775807", -1],
    ["reserve-with-timeout 9223372036854775808", "BAD"],
  ];
  for (const [line, want] of waits) {
    it(`${line} -> ${want}`, () => {
      const c = parse(line);
      if (want === "BAD") assert.equal(c.name, "BAD_FORMAT");
      else assert.deepEqual([c.name, c.n], ["RESERVE_TIMEOUT", want]);
    });
  }
});

describe("tube names", () => {
  const ok = ["default", "a", "A-Z+/;.$_()09", "x".repeat(200)];
  const bad = ["", " foo", "foo ", "-foo", "a*b", "a b", "é", "x".repeat(201)];
  for (const n of ok) {
    it(`use ${n.slice(0, 20)} is fine`, () =>
      assert.deepEqual([parse(`use ${n}`).name, parse(`use ${n}`).tube], ["USE", n]));
  }
  for (const n of bad) {
    it(`use ${JSON.stringify(n.slice(0, 20))} is BAD_FORMAT`, () => assert.equal(parse(`use ${n}`).name, "BAD_FORMAT"));
  }
  it("pause-tube skips spaces, takes the name run, validates after the delay", () => {
    let c = parse("pause-tubedefault 1");
    assert.deepEqual([c.name, c.tube, c.delay, c.badName], ["PAUSE_TUBE", "default", 1, false]);
    c = parse("pause-tube   x   5");
    assert.deepEqual([c.name, c.tube, c.delay], ["PAUSE_TUBE", "x", 5]);
    c = parse("pause-tube -x 5");
    assert.deepEqual([c.name, c.badName], ["PAUSE_TUBE", true]);
    assert.equal(parse("pause-tube x").name, "BAD_FORMAT");
    assert.equal(parse("pause-tube x 1 ").name, "BAD_FORMAT");
  });
});

describe("the argument reader", () => {
  it("is each Command's own, and keeps no line once the parse is done", () => {
    const a = new Command();
    const b = new Command();
    assert.notEqual(a.args, b.args);
    const line = Uint8Array.from("release 7 1 2", (c) => c.charCodeAt(0));
    assert.equal(parseCommand(line, 0, line.length, a), OP.RELEASE);
    assert.deepEqual([a.id, a.pri, a.delay], [7, 1, 2]);
    assert.equal(a.args.buf.length, 0, "the reader let go of the line");
  });
});
