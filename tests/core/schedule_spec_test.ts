// A schedule's spec (core/schedule_spec.ts): what is well-formed, the due times of
// intervals and of cron expressions (UTC, croner), and the one due time a late run takes.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { dueAt, parseSpec } from "../../core/schedule_spec.ts";

const utc = (s: string) => Date.parse(s) / 1000;

describe("parseSpec", () => {
  test("reads every:<seconds> and cron fields joined by _, and nicknames", () => {
    for (const ok of ["every:1", "every:60", "every:4294967295", "every:007", "0_9_*_*_1-5", "*/5_*_*_*_*"]) {
      assert.ok(parseSpec(ok), ok);
    }
    for (const ok of ["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"]) {
      assert.ok(parseSpec(ok), ok);
    }
    assert.ok(parseSpec("0_0_1,15_JAN-MAR_MON"));
    assert.ok(parseSpec("0_12_L_*_*"), "croner's last day of the month");
  });

  test("refuses what is malformed or never due", () => {
    for (
      const bad of [
        "",
        "every:",
        "every:0",
        "every:-5",
        "every:+5",
        "every:4294967296",
        "every:1.5",
        "every:5s",
        "61_*_*_*_*", // minute out of range
        "*_24_*_*_*",
        "*_*_*_*", // four fields
        "*_*_*_*_*_*", // six: seconds are not taken
        "*__*_*_*_*",
        "*_*_*_*_*_",
        "0 9 * * 1-5", // spaces
        "0_0_30_2_*", // February 30th never comes
        "@reboot",
        "@every",
        "*/0_*_*_*_*",
        "x".repeat(201),
        "0_9_*_*_1-5;",
      ]
    ) assert.equal(parseSpec(bad), undefined, JSON.stringify(bad));
  });
});

describe("due times", () => {
  test("every:N is due at the multiples of N since the epoch", () => {
    const s = parseSpec("every:60")!;
    assert.equal(s.next(utc("2026-03-01T10:00:00Z")), utc("2026-03-01T10:01:00Z"), "strictly after");
    assert.equal(s.next(utc("2026-03-01T10:00:59Z")), utc("2026-03-01T10:01:00Z"));
    assert.equal(s.last(utc("2026-03-01T10:00:59Z")), utc("2026-03-01T10:00:00Z"));
    assert.equal(s.last(utc("2026-03-01T10:01:00Z")), utc("2026-03-01T10:01:00Z"), "at or before");
  });

  test("cron is read in UTC whatever the local time zone, minutes only", () => {
    const s = parseSpec("30_9_*_*_1-5")!;
    // 2026-03-06 is a Friday
    assert.equal(s.next(utc("2026-03-06T09:30:00Z")), utc("2026-03-09T09:30:00Z"));
    assert.equal(s.next(utc("2026-03-06T09:29:59Z")), utc("2026-03-06T09:30:00Z"));
    assert.equal(s.last(utc("2026-03-08T12:00:00Z")), utc("2026-03-06T09:30:00Z"));
    assert.equal(parseSpec("@daily")!.next(utc("2026-03-06T09:30:00Z")), utc("2026-03-07T00:00:00Z"));
  });

  test("a day of month and a day of week both given match either (Vixie cron)", () => {
    const s = parseSpec("0_0_13_*_5")!; // the 13th, or a Friday
    assert.equal(s.next(utc("2026-03-01T00:00:00Z")), utc("2026-03-06T00:00:00Z"));
    assert.equal(s.next(utc("2026-03-12T00:00:00Z")), utc("2026-03-13T00:00:00Z"));
  });

  test("dueAt: the latest due time since the last run, so missed runs make one", () => {
    const s = parseSpec("every:10")!;
    assert.equal(dueAt(s, 100, 109), undefined);
    assert.equal(dueAt(s, 100, 110), 110);
    assert.equal(dueAt(s, 100, 175), 170, "six missed, one run for the latest");
    assert.equal(dueAt(s, 105, 109), undefined, "set at 105: the first due time is 110");
  });
});
