// The log line formatter: timestamps and levels on every line, one line per event,
// text for people and JSON for machines.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger, formatLogLine } from "../../core/log.ts";

const T = Date.UTC(2026, 10, 25, 2, 45, 35, 123);

describe("formatLogLine (text)", () => {
  it("starts with the UTC time to the millisecond and a padded upper-case level", () => {
    assert.equal(formatLogLine("text", T, "info", "accept 3"), "2026-11-25T02:45:35.123Z INFO  accept 3");
    assert.equal(formatLogLine("text", T, "error", "boom"), "2026-11-25T02:45:35.123Z ERROR boom");
  });

  it("appends fields as key=value, quoting values that are not one plain word", () => {
    assert.equal(
      formatLogLine("text", T, "warn", "listening", { plain: "127.0.0.1:1", tls: false, n: 2, dir: "a b", e: "" }),
      '2026-11-25T02:45:35.123Z WARN  listening plain=127.0.0.1:1 tls=false n=2 dir="a b" e=""',
    );
    assert.equal(
      formatLogLine("text", T, "info", "x", { a: 'say "hi"', b: "k=v", gone: undefined }).split(" x ")[1],
      [
        'a="say \\"hi\\""',
        'b="k=v"',
      ].join(" "),
    );
  });

  it("keeps one event on one line: control characters in the message are escaped", () => {
    const line = formatLogLine("text", T, "info", "<1 command put\r\nINFO forged\x1b[2J\x00\tend");
    // deno-lint-ignore no-control-regex
    assert.ok(!/[\x00-\x1f]/.test(line), line);
    assert.ok(line.endsWith("<1 command put\\r\\nINFO forged\\x1b[2J\\x00\\tend"), line);
    assert.ok(!/[\n\r]/.test(formatLogLine("text", T, "info", "m", { stack: "a\nb" })));
  });
});

describe("formatLogLine (json)", () => {
  it("is one JSON object with time, level, msg and the fields", () => {
    const line = formatLogLine("json", T, "info", "listening", {
      plain: "127.0.0.1:1",
      tls: false,
      n: 2,
      x: undefined,
    });
    assert.equal(
      line,
      '{"time":"2026-11-25T02:45:35.123Z","level":"info","msg":"listening","plain":"127.0.0.1:1","tls":false,"n":2}',
    );
  });

  it("cannot be split or have its time, level or message overridden", () => {
    const line = formatLogLine("json", T, "error", "a\nb\x00", { level: "info", msg: "fake", time: "0" });
    assert.ok(!line.includes("\n"));
    assert.deepEqual(JSON.parse(line), { time: "2026-11-25T02:45:35.123Z", level: "error", msg: "a\nb\x00" });
  });
});

describe("createLogger", () => {
  it("sends debug and info to out, warn and error to err, reading the clock per line", () => {
    const out: string[] = [];
    const err: string[] = [];
    let now = T;
    const log = createLogger({ format: "text", now: () => now++, out: (l) => out.push(l), err: (l) => err.push(l) });
    log.debug("d");
    log.info("i", { k: 1 });
    log.warn("w");
    log.error("e");
    assert.deepEqual(out, ["2026-11-25T02:45:35.123Z DEBUG d", "2026-11-25T02:45:35.124Z INFO  i k=1"]);
    assert.deepEqual(err, ["2026-11-25T02:45:35.125Z WARN  w", "2026-11-25T02:45:35.126Z ERROR e"]);
    assert.equal(log.format, "text");
  });
});
