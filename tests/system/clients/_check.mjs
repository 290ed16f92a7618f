// Shared helpers for the Node client scripts in this folder: argument parsing, a
// step-by-step checker that names the command that went wrong, a hard time limit,
// and a tiny parser for the flat YAML that beanstalkd's stats commands return.
//
// A script calls run(clientName, async (c, host, port) => { ... }). Every check
// failure or unexpected error prints "<client>: FAIL at <step>: <detail>" and
// exits 1; success prints "<client>: ok (<n> checks)" and exits 0.

import { readFileSync } from "node:fs";
import { inspect, isDeepStrictEqual } from "node:util";

/** Fails the script with a message naming the step. */
export class Mismatch extends Error {}

export class Checker {
  constructor(client) {
    this.client = client;
    this.current = "(start)";
    this.count = 0;
  }

  /** Name the command being exercised; failures report it. */
  step(name) {
    this.current = name;
  }

  fail(detail) {
    throw new Mismatch(detail);
  }

  /** Deep-equal check: `what` describes the value. */
  eq(what, got, want) {
    this.count++;
    if (!isDeepStrictEqual(got, want)) {
      this.fail(`${what}: expected ${inspect(want)}, got ${inspect(got)}`);
    }
  }

  ok(what, cond, got) {
    this.count++;
    if (!cond) this.fail(`${what}${got === undefined ? "" : `: got ${inspect(got)}`}`);
  }

  /** Check that a stats map has all `keys`. */
  hasKeys(what, obj, keys) {
    this.ok(`${what} is an object`, obj !== null && typeof obj === "object", obj);
    for (const k of keys) {
      this.count++;
      if (!(k in obj)) this.fail(`${what}: missing key ${JSON.stringify(k)} (keys: ${Object.keys(obj).join(", ")})`);
    }
  }

  /** Check several fields of a stats map; values are compared as strings. */
  fields(what, obj, want) {
    this.ok(`${what} is an object`, obj !== null && typeof obj === "object", obj);
    for (const [k, v] of Object.entries(want)) {
      this.count++;
      if (!(k in obj)) this.fail(`${what}: missing key ${JSON.stringify(k)}`);
      if (String(obj[k]) !== String(v)) {
        this.fail(`${what}: ${k} expected ${inspect(v)}, got ${inspect(obj[k])}`);
      }
    }
  }

  /** The fields scenario.json expects of the stats-job or stats-tube reply at the current step. */
  want() {
    const fields = SCENARIO.fields[this.current];
    if (!fields) throw new Error(`scenario.json has no fields for step ${inspect(this.current)}`);
    return fields;
  }

  /** Expect `fn` to reject/throw; `match` tests the error text. */
  async rejects(what, fn, match) {
    this.count++;
    let value;
    try {
      value = await fn();
    } catch (e) {
      const text = String(e?.message ?? e);
      if (match && !match.test(text)) this.fail(`${what}: expected an error matching ${match}, got ${inspect(text)}`);
      return;
    }
    this.fail(`${what}: expected an error, got ${inspect(value)}`);
  }
}

const readJson = (path) => JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8"));
const KEYS = readJson("../../harness/stats_keys.json");
/** What every client script expects, by step (the same file serves pheanstalk.php and beaneater.rb). */
const SCENARIO = readJson("./scenario.json");

/** Keys that `stats` must report: all of beanstalkd 1.12's. */
export const STATS_KEYS = KEYS.stats;
/** Keys that `stats-job` must report. */
export const STATS_JOB_KEYS = KEYS["stats-job"];
/** Keys that `stats-tube` must report. */
export const STATS_TUBE_KEYS = KEYS["stats-tube"];

/** `stats` at the end, as scenario.json says it grew from `before` (the first `stats`). */
export function grown(before) {
  return Object.fromEntries(Object.entries(SCENARIO.grown).map(([k, d]) => [k, Number(before[k]) + d]));
}

/**
 * Parse beanstalkd's flat YAML ("---\nkey: value\n..." or "---\n- item\n...").
 * Values stay strings, with surrounding double quotes removed.
 */
export function parseYaml(text) {
  const lines = String(text).split("\n").filter((l) => l !== "" && l !== "---");
  if (lines.length && lines.every((l) => l.startsWith("- "))) return lines.map((l) => l.slice(2));
  const out = {};
  for (const l of lines) {
    const m = /^([^:]+):\s?(.*)$/.exec(l);
    if (!m) throw new Mismatch(`cannot parse YAML line ${inspect(l)} in ${inspect(text)}`);
    let v = m[2];
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
    out[m[1]] = v;
  }
  return out;
}

/** Parse HOST PORT from argv, run `main`, and exit with a clear verdict. */
export function run(client, main, limitMs = 30000) {
  const [host, portText] = process.argv.slice(2);
  const port = Number(portText);
  if (!host || !Number.isInteger(port) || port <= 0) {
    console.error(`usage: node ${process.argv[1]} HOST PORT`);
    process.exit(2);
  }
  const c = new Checker(client);
  const timer = setTimeout(() => {
    console.error(`${client}: FAIL at ${c.current}: no answer within ${limitMs} ms`);
    process.exit(1);
  }, limitMs);
  main(c, host, port).then(
    () => {
      clearTimeout(timer);
      console.log(`${client}: ok (${c.count} checks) against ${host}:${port}`);
      process.exit(0);
    },
    (e) => {
      clearTimeout(timer);
      const detail = e instanceof Mismatch ? e.message : `unexpected error: ${e?.stack ?? inspect(e)}`;
      console.error(`${client}: FAIL at ${c.current}: ${detail}`);
      process.exit(1);
    },
  );
}
