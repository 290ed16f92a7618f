import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { AcceptErrorLog, acceptVerdict } from "../../adapters/accept_errors.ts";

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

describe("acceptVerdict", () => {
  it("a connection reset before accept is retried at once", () => {
    assert.equal(acceptVerdict(named("NotConnected", "Transport endpoint is not connected (os error 107)")), "retry");
    assert.equal(acceptVerdict(named("ConnectionAborted", "Software caused connection abort (os error 103)")), "retry");
  });
  it("running out of fds, files, memory or buffers backs off", () => {
    for (const n of [24, 23, 12, 105]) {
      assert.equal(acceptVerdict(new Error(`x (os error ${n})`)), "back-off", `errno ${n}`);
    }
  });
  it("a closed listener is fatal", () => {
    assert.equal(acceptVerdict(named("BadResource", "Bad resource ID")), "fatal");
    assert.equal(acceptVerdict(named("Interrupted", "operation canceled")), "fatal");
  });
  it("anything unknown is retried (it may belong to one connection)", () => {
    assert.equal(acceptVerdict("strange"), "retry");
  });
});

describe("AcceptErrorLog", () => {
  it("reports the first error at once, then one line per interval with the count in between", () => {
    const lines: string[] = [];
    const log = new AcceptErrorLog((l) => lines.push(l), 1000);
    const e = new Error("Too many open files (os error 24)");
    log.note(e, 0);
    for (let t = 1; t < 1000; t += 10) log.note(e, t);
    assert.equal(lines.length, 1);
    log.note(e, 1500);
    assert.equal(lines.length, 2);
    assert.match(lines[1]!, /and 100 more since the last report/);
    assert.match(lines[0]!, /^accept: Error: Too many open files/);
  });
});
