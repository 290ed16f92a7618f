// Keeps the benchmark from rotting: a --quick run (a few seconds, tiny counts) must
// exit 0 and print its table, with the native generator (bench/native) when a C
// compiler is here, and with the JS fallback when there is none (BENCH_CC empty).
// Its figures mean nothing and are not checked; benchmarks never decide pass/fail by
// speed.
import { it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, ROOT } from "../harness/paths.ts";
import { findCc } from "../../bench/native.ts";
import { BEANSTALKD } from "../harness/targets.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";

/** Rows of each mode of the default run, for beanstalkd (when installed), deno and bun. */
const MODES: [string, string[]][] = [
  ["", [
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
  ["+b", ["put-50", "put-50x16"]],
  ["+bf0", ["put-1", "put-50", "put-50x16", "e2e-50"]],
];
const CEILING_ROWS = ["put-1", "put-50", "put-50x16", "put-50x16-16k"];

it(
  "bench/main.ts --quick runs every workload on every default target and checks every reply",
  { timeout: 120_000 },
  () => {
    const dir = mkdtempSync(join(tmpdir(), "tubeway-bench-smoke-"));
    const json = join(dir, "bench.json");
    const r = spawnSync(BUN, ["run", join(ROOT, "bench", "main.ts"), "--quick", "--json", json], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 110_000,
    });
    const out = `${r.stdout}\n${r.stderr}`;
    assert.equal(r.status, 0, out);
    assert.match(out, findCc() ? /load generator: \d+× native/ : /JS fallback/, out);
    const expect = (target: string, row: string) => {
      const t = target.replace(/[+]/g, "\\+");
      assert.match(out, new RegExp(`^${row}\\b[^\\n]*?\\s${t}\\s`, "m"), `no ${row} row for ${target}:\n${out}`);
    };
    for (const server of ["deno", "bun", ...(BEANSTALKD ? ["beanstalkd"] : [])]) {
      for (const [mode, rows] of MODES) for (const row of rows) expect(server + mode, row);
    }
    for (const ceiling of ["fixed-deno", "fixed-bun"]) for (const row of CEILING_ROWS) expect(ceiling, row);
    // tubeway is compared with its runtime's ceiling and with beanstalkd in the same mode, from the same run
    const rows: { row: string; target: string; ratio?: number; ceilRatio?: number; noLogRatio?: number }[] =
      JSON.parse(readFileSync(json, "utf8")).rows;
    rmSync(dir, { recursive: true, force: true });
    const find = (target: string, row: string) => rows.find((x) => x.target === target && x.row === row)!;
    for (const rt of ["deno", "bun"]) {
      for (const row of CEILING_ROWS) assert.ok(find(rt, row).ceilRatio! > 0, `${rt} ${row} has no ×ceil`);
      assert.ok(find(`${rt}+b`, "put-50").noLogRatio! > 0, `${rt}+b put-50 is not compared with ${rt}`);
      if (BEANSTALKD) assert.ok(find(`${rt}+bf0`, "put-1").ratio! > 0, `${rt}+bf0 put-1 has no ×bstalkd`);
    }
    assert.doesNotMatch(out, /FAILED/, out);
  },
);

it(
  "bench/main.ts --quick falls back to the JS generator when there is no C compiler",
  { timeout: 60_000 },
  () => {
    // the rows that use each of the generator's requests: run, prefill, query, hold/release
    const rows = "put-1,rd-50x16,e2e-50,mix-50,mem-1m,tubes-10k";
    const r = spawnSync(BUN, ["run", join(ROOT, "bench", "main.ts"), "--quick", "--targets", "bun", "--only", rows], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 50_000,
      env: { ...process.env, BENCH_CC: "" },
    });
    const out = `${r.stdout}\n${r.stderr}`;
    assert.equal(r.status, 0, out);
    assert.match(out, /load generator: \d+× bun \(JS fallback\)/, out);
    assert.match(out, /note: load generator: the JS fallback on bun, no native one/, out);
    for (const row of rows.split(",")) assert.match(out, new RegExp(`^${row}\\b[^\\n]*?\\sbun\\s`, "m"), out);
    assert.doesNotMatch(out, /FAILED/, out);
  },
);

it(
  "bench/main.ts --quick runs the PostgreSQL rows: one node, three nodes, pgbench, the sustained windows",
  { timeout: 120_000, skip: skipWithoutPostgres },
  () => {
    const r = spawnSync(
      BUN,
      [
        "run",
        join(ROOT, "bench", "main.ts"),
        "--quick",
        "--targets",
        "bun+pg,deno+pg3,pgbench:2:10",
        "--only",
        "put-50,e2e-50,pg",
        "--seconds",
        "0.4",
        "--window",
        "0.2",
      ],
      { cwd: ROOT, encoding: "utf8", timeout: 110_000, env: { ...process.env, BENCH_PG_URL: "auto" } },
    );
    const out = `${r.stdout}\n${r.stderr}`;
    assert.equal(r.status, 0, out);
    const expect = (target: string, row: string) => {
      const t = target.replace(/[+]/g, "\\+");
      assert.match(out, new RegExp(`^${row}\\s[^\\n]*?\\s${t}\\s`, "m"), `no ${row} row for ${target}:\n${out}`);
    };
    for (const row of ["put-50", "e2e-50", "wake-1"]) expect("bun+pg", row);
    for (const row of ["put-50", "e2e-50", "wake-1", "put-50-sustained 0-0.2s", "e2e-50-sustained 0.2-0.4s"]) {
      expect("deno+pg3", row);
    }
    for (const row of ["put-50", "e2e-50"]) expect("pgbench:2:10", row);
    assert.match(out, /jobs table: live \d+, dead \d+/, out);
    assert.doesNotMatch(out, /FAILED/, out);
  },
);
