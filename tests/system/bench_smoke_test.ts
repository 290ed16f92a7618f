// Keeps the benchmark from rotting: a --quick run (a few seconds, tiny counts) must
// exit 0 and print its table. Its figures mean nothing and are not checked;
// benchmarks never decide pass/fail by speed.
import { it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { BUN, ROOT } from "../harness/paths.ts";
import { BEANSTALKD } from "../harness/targets.ts";

/** Rows every target of the default run must print (beanstalkd's only when it is installed). */
const EXPECTED: [string, string[]][] = [
  ["deno", [
    "put-1",
    "put-50",
    "put-50x16",
    "put-50x16-16k",
    "rd-50x16",
    "e2e-50",
    "mix-50",
    "mem-1m",
    "conns-10k",
    "tubes-10k",
  ]],
  ["fixed-deno", ["put-1", "put-50", "put-50x16", "put-50x16-16k"]],
  ["deno+b", ["put-50", "put-50x16"]],
  ["deno+bf0", ["put-1", "put-50", "put-50x16"]],
];
const RUNTIMES = ["deno", "bun"];

it(
  "bench/main.ts --quick runs every workload on every default target and checks every reply",
  { timeout: 120_000 },
  () => {
    const r = spawnSync(BUN, ["run", join(ROOT, "bench", "main.ts"), "--quick"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 110_000,
    });
    const out = `${r.stdout}\n${r.stderr}`;
    assert.equal(r.status, 0, out);
    const escape = (s: string) => s.replace(/[+]/g, "\\+");
    for (const [target, rows] of EXPECTED) {
      for (const rt of RUNTIMES) {
        const t = target.replace("deno", rt);
        for (const row of rows) {
          assert.match(out, new RegExp(`^${row}\\b[^\\n]*?\\s${escape(t)}\\s`, "m"), `no ${row} row for ${t}:\n${out}`);
        }
      }
    }
    // tubeway is printed against its runtime's ceiling and beanstalkd in the same mode
    assert.match(out, /×ceil/, out);
    if (BEANSTALKD) assert.match(out, /^put-50\s+bun\+b\s[^\n]*\d\.\d\d×/m, out);
    assert.doesNotMatch(out, /FAILED/, out);
  },
);
