// Keeps the benchmark from rotting: a --quick run (a few seconds, tiny counts) must
// exit 0 and print its table. Its figures mean nothing and are not checked;
// benchmarks never decide pass/fail by speed.
import { it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { BUN, ROOT } from "../harness/paths.ts";
import { BEANSTALKD } from "../harness/targets.ts";

it("bench/main.ts --quick runs every workload on every target and checks every reply", { timeout: 120_000 }, () => {
  const targets = ["deno", "bun", ...(BEANSTALKD ? ["beanstalkd"] : [])].join(",");
  const r = spawnSync(BUN, ["run", join(ROOT, "bench", "main.ts"), "--quick", "--targets", targets], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 110_000,
  });
  const out = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, out);
  for (const row of ["put-1", "put-50x16", "rd-50x16", "e2e-50", "mix-50", "mem-1m", "conns-10k", "tubes-10k"]) {
    for (const target of ["deno", "bun"]) {
      assert.match(out, new RegExp(`^${row}\\b[^\\n]*?\\s${target}\\s`, "m"), `no ${row} row for ${target}:\n${out}`);
    }
  }
  assert.doesNotMatch(out, /FAILED/, out);
});
