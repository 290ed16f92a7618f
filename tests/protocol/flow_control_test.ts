// The flow-control and recurring-job commands on the wire, in process: exact bytes of
// every reply, every malformed input answered BAD_FORMAT (and not counted) with the
// connection working after it, stats-tube-all's keys in beanstalkd-pi's order, and a
// stock client that uses none of them seeing 1.12's bytes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { Service } from "../../protocol/service.ts";
import { localClient } from "../harness/in_process.ts";
import { TUBE_ALL_KEYS } from "../harness/stats_keys.ts";

function setup() {
  const clock = new ManualClock();
  const q = new Queue({ clock });
  const svc = new Service(q);
  return { clock, q, svc, c: () => localClient(svc) };
}

const ok = (yaml: string) => `OK ${yaml.length}\r\n${yaml}\r\n`;

describe("flow control: the bytes", () => {
  it("set-concurrency, set-rate, schedule, unschedule, list-schedules", () => {
    const { c, svc } = setup();
    const a = c();
    assert.equal(a.send("set-concurrency emails 5\r\n"), "CONCURRENCY_SET\r\n");
    assert.equal(a.send("set-rate emails 100 60\r\n"), "RATE_SET\r\n");
    assert.equal(a.send("set-rate emails 0 0\r\n"), "RATE_SET\r\n", "count 0 removes it, whatever the window");
    assert.equal(a.send("set-rate emails 0 30\r\n"), "RATE_SET\r\n");
    assert.equal(a.send("schedule nightly reports 0_3_*_*_* 10 600 4\r\nnow!\r\n"), "SCHEDULED\r\n");
    assert.equal(a.send("schedule tick default every:60 0 60 0\r\n\r\n"), "SCHEDULED\r\n", "an empty body");
    assert.equal(
      a.send("list-schedules\r\n"),
      ok(
        "---\n" +
          "- name: nightly\n  tube: reports\n  spec: 0_3_*_*_*\n  pri: 10\n  ttr: 600\n  size: 4\n  next-due: 1700017200\n  last-due: 0\n" +
          "- name: tick\n  tube: default\n  spec: every:60\n  pri: 0\n  ttr: 60\n  size: 0\n  next-due: 1700000040\n  last-due: 0\n",
      ),
    );
    assert.equal(a.send("unschedule nightly\r\n"), "DELETED\r\n");
    assert.equal(a.send("unschedule nightly\r\n"), "NOT_FOUND\r\n");
    svc.close();
  });

  it("a schedule name is any printable ASCII without spaces; YAML quotes what needs it", () => {
    const { c, svc } = setup();
    const a = c();
    assert.equal(a.send("schedule report:eu#1 t @hourly 0 60 1\r\nx\r\n"), "SCHEDULED\r\n");
    assert.equal(a.send("schedule *star t */5_*_*_*_* 0 60 1\r\nx\r\n"), "SCHEDULED\r\n");
    const list = a.send("list-schedules\r\n");
    assert.match(list, /- name: "\*star"\n {2}tube: t\n {2}spec: "\*\/5_\*_\*_\*_\*"\n/);
    assert.match(list, /- name: report:eu#1\n {2}tube: t\n {2}spec: "@hourly"\n/);
    svc.close();
  });

  it("capabilities lists them after the others", () => {
    const { c, svc } = setup();
    assert.match(
      c().send("capabilities\r\n"),
      /- set-backoff\n- set-concurrency\n- set-rate\n- schedule\n- unschedule\n- list-schedules\n\r\n$/,
    );
    svc.close();
  });

  it("a schedule body over -z is JOB_TOO_BIG after it is swallowed; a missing CRLF is EXPECTED_CRLF", () => {
    const clock = new ManualClock();
    const svc = new Service(new Queue({ clock, maxJobSize: 4 }));
    const a = localClient(svc);
    assert.equal(a.send("schedule s t every:5 0 60 5\r\nhello\r\nping\r\n"), "JOB_TOO_BIG\r\nPONG\r\n");
    assert.equal(a.send("schedule s t every:5 0 60 2\r\nhiXX"), "EXPECTED_CRLF\r\n");
    assert.equal(a.send("list-schedules\r\n"), ok("---\n"));
    svc.close();
  });
});

describe("flow control: bad input", () => {
  it("answers BAD_FORMAT, counts nothing, and the connection goes on", () => {
    const { c, svc } = setup();
    const a = c();
    const long = "t".repeat(201);
    const bad = [
      "set-concurrency",
      "set-concurrency t",
      "set-concurrency t -1",
      "set-concurrency t +1",
      "set-concurrency t 4294967296",
      "set-concurrency t 1 2",
      "set-concurrency -t 1",
      `set-concurrency ${long} 1`,
      "set-concurrency t x",
      "set-rate t 10",
      "set-rate t 10 0", // a zero window
      "set-rate t 10 -5", // a negative one
      "set-rate t -1 10",
      "set-rate t 10 1.5",
      `set-rate ${long} 1 1`,
      "schedule s t every:0 0 60 1",
      "schedule s t every:-1 0 60 1",
      "schedule s t every:x 0 60 1",
      "schedule s t 61_*_*_*_* 0 60 1",
      "schedule s t *_*_*_* 0 60 1",
      "schedule s t *_*_*_*_*_* 0 60 1",
      "schedule s t 0_0_30_2_* 0 60 1",
      "schedule s t @reboot 0 60 1",
      "schedule s -t every:5 0 60 1",
      `schedule ${"n".repeat(201)} t every:5 0 60 1`,
      "schedule s t every:5 -1 60 1",
      "schedule s t every:5 0 60",
      "schedule s t every:5 0 60 1 x",
      "unschedule",
      "unschedule a b",
      `unschedule ${"n".repeat(201)}`,
      "list-schedules x",
    ];
    for (const line of bad) {
      assert.equal(a.send(line + "\r\n"), "BAD_FORMAT\r\n", line);
      assert.equal(a.send("ping\r\n"), "PONG\r\n", `after ${line}`);
    }
    assert.equal(a.send("stats-tube t\r\n"), "NOT_FOUND\r\n", "nothing was set");
    assert.equal(a.send("list-schedules\r\n"), ok("---\n"));
    // a schedule line refused is not followed by a body: the next line is a command (as put's)
    assert.equal(a.send("schedule s t every:0 0 60 4\r\nping\r\n"), "BAD_FORMAT\r\nPONG\r\n");
    // verbs are whole words
    assert.equal(a.send("set-concurrencyx t 1\r\nschedules\r\nlist-schedule\r\n"), "UNKNOWN_COMMAND\r\n".repeat(3));
    svc.close();
  });
});

describe("stats-tube-all", () => {
  it("lists each tube's keys in beanstalkd-pi's order, then tubeway's own", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("set-concurrency t 2\r\nset-rate t 7 9\r\nset-backoff t 3 30\r\n");
    const all = a.send("stats-tube-all\r\n");
    const keys = (entry: string) => [...entry.matchAll(/^(?:- | {2})([a-z-]+):/gm)].map((m) => m[1]);
    const entries = all.slice(all.indexOf("---\n") + 4).split(/(?=^- )/m);
    for (const e of entries) assert.deepEqual(keys(e), TUBE_ALL_KEYS);
    assert.match(
      all,
      /- name: t\n(?: {2}.*\n)*? {2}backoff-base: 3\n {2}backoff-cap: 30\n {2}concurrency-limit: 2\n {2}rate-limit: 7\n {2}rate-window: 9\n/,
    );
    svc.close();
  });
});

describe("stock replies", () => {
  it("stats-tube shows limits only on a tube that has them", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use plain\r\nput 1 0 60 1\r\nx\r\n");
    assert.match(a.send("stats-tube plain\r\n"), /\npause-time-left: 0\n\r\n$/);
    a.send("set-concurrency plain 1\r\n");
    assert.match(
      a.send("stats-tube plain\r\n"),
      /\npause-time-left: 0\nconcurrency-limit: 1\nrate-limit: 0\nrate-window: 0\n\r\n$/,
    );
    svc.close();
  });
});

describe("random flow-control lines", () => {
  it("never throw, never answer INTERNAL_ERROR, and leave the connection working", () => {
    const errors: string[] = [];
    const clock = new ManualClock();
    const svc = new Service(new Queue({ clock }), { log: () => {}, error: (l) => errors.push(l) });
    const a = localClient(svc);
    const verbs = ["set-concurrency", "set-rate", "unschedule", "list-schedules"];
    const words = ["t", "-t", "0", "1", "-1", "99999999999", "every:1", "0_*_*_*_*", "x", "", "+3", "@daily"];
    let seed = 11;
    const pick = <T>(xs: T[]) => xs[(seed = (seed * 1103515245 + 12345) % 2147483648) % xs.length]!;
    a.send("use t\r\nwatch t\r\nput 1 0 60 1\r\na\r\n");
    for (let i = 0; i < 2000; i++) {
      const n = pick([0, 1, 2, 3, 4]);
      const line = [pick(verbs), ...Array.from({ length: n }, () => pick(words))].join(" ");
      const r = a.send(line + "\r\n");
      assert.doesNotMatch(r, /INTERNAL_ERROR|UNKNOWN_COMMAND/, line);
      if (i % 100 === 0) a.send(`schedule s${i % 3} t every:${1 + (i % 5)} 0 1 1\r\nz\r\nreserve-with-timeout 0\r\n`);
      if (i % 50 === 0) clock.advance(1000);
    }
    assert.equal(a.send("ping\r\n"), "PONG\r\n");
    assert.deepEqual(errors, []);
    svc.close();
  });
});
