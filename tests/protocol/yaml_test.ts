// The YAML documents, byte for byte.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import yaml from "js-yaml";
import { listYaml, quote, scalar, statsJobYaml, statsTubeYaml, statsYaml } from "../../protocol/yaml.ts";
import { ManualClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { Counters } from "../../protocol/counters.ts";
import { STATS_KEYS, TUBE_KEYS } from "../harness/stats_keys.ts";

const JOB = {
  id: 7,
  tube: "t",
  state: "ready",
  pri: 1,
  age: 2,
  delay: 3,
  ttr: 4,
  timeLeft: 0,
  file: 0,
  reserves: 5,
  timeouts: 6,
  releases: 7,
  buries: 8,
  kicks: 9,
} as const;

describe("YAML output", () => {
  it("lists names raw", () => {
    assert.equal(listYaml(["default", "a"]), "---\n- default\n- a\n");
    assert.equal(listYaml([]), "---\n");
  });

  it("quotes strings as 1.13 does and escapes anything unprintable (when quoting)", () => {
    assert.equal(quote("default"), '"default"');
    assert.equal(quote('#1 SMP "x"'), '"#1 SMP \\"x\\""');
    assert.equal(quote("a\nb\u00e9"), '"a\\x0ab\\xe9"');
  });

  // Values a YAML reader takes for something else: empty, indicators, comments, mapping
  // separators, numbers of YAML 1.1/1.2, booleans and nulls, dates, unprintables.
  const AMBIGUOUS = [
    "",
    "#1 SMP PREEMPT_DYNAMIC",
    "&a",
    "*a",
    "!x",
    "|",
    ">",
    "'q",
    '"q',
    "%x",
    "@x",
    "`x",
    "-x",
    "?x",
    ":x",
    "{x",
    "}",
    "[x",
    "]",
    ",x",
    " lead",
    "trail ",
    "a: b",
    "a #b",
    "a:",
    "123",
    "-1",
    "+1",
    "1.5",
    ".5",
    "1.",
    "1e3",
    "1E-3",
    "0x1f",
    "0o17",
    "0b101",
    "017",
    "1_000",
    "1:20",
    "190:20:30",
    ".inf",
    "-.inf",
    ".NaN",
    "true",
    "False",
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "N",
    "null",
    "Null",
    "~",
    "2024-01-02",
    "2024-1-2T10:00:00",
    "tab\there",
    "é",
  ];
  // Plain strings to every YAML reader, written as 1.12 writes them.
  const PLAIN = [
    "default",
    "x86_64",
    "vm",
    "host.example.com",
    "Linux",
    "a;b",
    "$x",
    "(paren)",
    "a/b",
    "a+b",
    "1abc",
    "1.2.3",
    "v1.12",
    "yes-please",
    "2024-01-02-backup",
    "a:b",
    "a#b",
    "1x1",
    "nullable",
    "trueish",
    "0x",
    "on.off",
    "aarch64",
  ];

  it("writes string values plain as 1.12 does, unless a YAML reader would misread them", () => {
    for (const v of PLAIN) assert.equal(scalar(v), v, v);
    for (const v of AMBIGUOUS) assert.equal(scalar(v), quote(v), v);
  });

  it("every value reads back as the same string with a YAML parser (js-yaml)", () => {
    for (const v of [...PLAIN, ...AMBIGUOUS]) {
      assert.deepEqual(yaml.load(`k: ${scalar(v)}\n`), { k: v }, `${v} -> ${scalar(v)}`);
    }
  });

  it('reaches a line-splitting reader (as greenstalk\'s) without quotes: tube is default, not "default"', () => {
    // greenstalk (Python) reads stats by splitting each line at the first ": ", keeping
    // the rest as the value, quotes included.
    const read = (doc: string) =>
      Object.fromEntries(
        doc.split("\n").slice(1, -1).map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]),
      );
    const q = new Queue({ clock: new ManualClock() });
    assert.equal(read(statsTubeYaml(q.statsTube("default")!)).name, "default");
    const job = read(statsJobYaml({ ...JOB, tube: "emails" }));
    assert.equal(job.tube, "emails");
  });

  it("stats-job has 14 keys in wire order", () => {
    const y = statsJobYaml(JOB);
    assert.equal(
      y,
      "---\nid: 7\ntube: t\nstate: ready\npri: 1\nage: 2\ndelay: 3\nttr: 4\ntime-left: 0\nfile: 0\n" +
        "reserves: 5\ntimeouts: 6\nreleases: 7\nburies: 8\nkicks: 9\n",
    );
  });

  it("stats-tube has 14 keys in wire order", () => {
    const q = new Queue({ clock: new ManualClock() });
    const keys = statsTubeYaml(q.statsTube("default")!).split("\n").slice(1, -1).map((l) => l.split(":")[0]);
    assert.deepEqual(keys, [...TUBE_KEYS]);
  });

  it("stats has 51 keys in 1.12's wire order with real values", () => {
    const clock = new ManualClock();
    const q = new Queue({ clock });
    const host = {
      pid: 42,
      hostname: "h",
      os: "#1 SMP",
      platform: "x86_64",
      cpu: () => ({ user: 1_500_000, system: 7 }),
    };
    clock.advance(3500);
    const facts = { host, id: "0123456789abcdef", version: "1.12", startedAt: 1000 };
    const y = statsYaml(q.stats(), new Counters(), facts, q.maxJobSize, clock.now());
    const lines = y.split("\n").slice(1, -1);
    assert.equal(lines.length, 51);
    assert.deepEqual(lines.map((l) => l.slice(0, l.indexOf(":"))), [...STATS_KEYS]);
    const map = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]));
    assert.equal(map["rusage-utime"], "1.500000");
    assert.equal(map["rusage-stime"], "0.000007");
    assert.equal(map.uptime, "3");
    assert.equal(map.pid, "42");
    assert.equal(map.version, '"1.12"');
    assert.equal(map.os, '"#1 SMP"', "an os starting with # would read as a comment");
    assert.equal(map.hostname, "h");
    assert.equal(map.platform, "x86_64");
    assert.equal(map.draining, "false");
    assert.equal(map["binlog-max-size"], "10485760");
  });
});
