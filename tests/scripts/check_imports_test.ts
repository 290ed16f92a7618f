// scripts/check_imports.mjs on small made-up trees: each kind of cycle and each rule of
// the rooms is reported (exit 1, the files and the rule named); a clean tree passes.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT } from "../harness/paths.ts";

const SCRIPT = join(ROOT, "scripts", "check_imports.mjs");
const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A temp root holding these files (paths relative to it), adapters/, core/ and protocol/ always present. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "tubeway-cycles-"));
  made.push(dir);
  for (const sub of ["adapters", "core", "protocol"]) mkdirSync(join(dir, sub));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function check(dir: string, ...flags: string[]): { status: number | null; out: string; err: string } {
  const r = spawnSync("node", [SCRIPT, "--root", dir, ...flags], { encoding: "utf8", timeout: 30_000 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

/** Exit 1, and every one of `names` appears in the message. */
function assertReported(r: { status: number | null; err: string }, ...names: Array<string | RegExp>): void {
  assert.equal(r.status, 1, `expected a failure, got ${r.status}: ${r.err}`);
  for (const name of names) {
    if (typeof name === "string") assert.ok(r.err.includes(name), `"${name}" not in: ${r.err}`);
    else assert.match(r.err, name);
  }
}

/** The layers as they should be, with the decoys a plain regex would trip on. */
const CLEAN = {
  "core/c.ts": 'export const c = 1;\n// import { p } from "../protocol/p.ts";\n',
  "core/engine.ts": "export type Engine = { id: number };\n",
  "core/memory/queue.ts": 'import { c } from "../c.ts";\nexport class Queue {}\nexport const q = c;\n',
  "core/pg/engine.ts": 'import type { Engine } from "../engine.ts";\nexport type PgEngine = Engine;\n',
  "front/open.ts":
    'import { Queue } from "../core/memory/queue.ts";\nimport type { PgEngine } from "../core/pg/engine.ts";\nexport const o: [typeof Queue, PgEngine?] = [Queue];\n',
  "mod.ts": 'export { o } from "./front/open.ts";\n',
  "bench/b.ts": 'import { o } from "../mod.ts";\nexport const b = o;\n',
  "tests/t.ts": 'import { b } from "../bench/b.ts";\nimport { o } from "../front/open.ts";\nexport const t = [b, o];\n',
  "protocol/p.ts": [
    'import { c } from "../core/c.ts";',
    'import type { Engine } from "../core/engine.ts";',
    '/* import type { A } from "../adapters/a.ts"; */',
    "const quote = /[\"'`]/;",
    "const text = \"import('../adapters/a.ts')\";",
    'const tpl = `${c} import("./q.ts")`;',
    "export const p = [c, quote, text, tpl] as unknown as typeof CMD_KEYS;",
  ].join("\n"),
  "protocol/q.ts": 'export * from "./p.ts";\nexport type { c } from "../core/c.ts";\n',
  "adapters/a.ts": [
    'import { p } from "../protocol/p.ts";',
    'import "../core/c.ts";',
    'export async function load() {\n  return (await import("./b.ts")).b + p.length;\n}',
  ].join("\n"),
  "adapters/b.ts": 'import type { Queue } from "../core/memory/queue.ts";\nexport const b = 2 as unknown as Queue;\n',
};

describe("check_imports.mjs", () => {
  it("passes a clean tree, comments and strings that look like imports included", () => {
    const r = check(tree(CLEAN));
    assert.equal(r.status, 0, r.err);
    assert.match(r.out, /imports: no cycle among 12 files/);
  });

  it("reports a static cycle", () => {
    const r = check(tree({
      "core/a.ts": 'import { b } from "./b.ts";\nexport const a = b;\n',
      "core/b.ts": 'export { x as b } from "./x/c.ts";\n',
      // A regex holding a backtick, read as a template, would swallow the import after it.
      "core/x/c.ts": 'const tick = /`/;\nimport { a } from "../a.ts";\nexport const x = [a, tick];\n',
    }));
    assertReported(r, /import cycle: core\/a\.ts .*-> core\/x\/c\.ts .*-> core\/a\.ts/, "core/b.ts");
  });

  it("reports a cycle of type-only imports", () => {
    const r = check(tree({
      "protocol/x.ts": 'import type { Y } from "./y.ts";\nexport interface X { y: Y }\n',
      "protocol/y.ts": 'export type { X as Y } from "./x.ts";\n',
    }));
    assertReported(r, /import cycle: protocol\/x\.ts -\(import type, line 1\)-> protocol\/y\.ts -\(export type from/);
  });

  it("reports a cycle through a dynamic import, as adapters/http.ts had one", () => {
    const r = check(tree({
      "adapters/http.ts": [
        "export type Handler = (req: Request) => Promise<Response>;",
        "export async function serve(h: Handler) {",
        '  return (await import("./http_deno.ts")).serveDeno(h);',
        "}",
      ].join("\n"),
      "adapters/http_deno.ts": 'import type { Handler } from "./http.ts";\nexport function serveDeno(h: Handler) {}\n',
    }));
    assertReported(
      r,
      /adapters\/http\.ts -\(import\(\), line 3\)-> adapters\/http_deno\.ts -\(import type, line 1\)->/,
    );
  });

  it("reports a cycle through a side-effect import", () => {
    const r = check(tree({
      "adapters/a.ts": 'import "./b.ts";\n',
      "adapters/b.ts": 'import { a } from "./a.ts";\n',
    }));
    assertReported(r, "side-effect import", "adapters/a.ts", "adapters/b.ts");
  });

  it("reports an engine importing the other, each way", () => {
    const r = check(tree({
      "core/memory/model.ts": 'import type { PgTube } from "../pg/client.ts";\nexport class Tube {}\n',
      "core/pg/client.ts": 'export { Tube as PgTube } from "../memory/model.ts";\n',
    }));
    assertReported(
      r,
      "core/memory/model.ts:1 imports core/pg/client.ts (import type): neither engine imports the other",
      "core/pg/client.ts:1 imports core/memory/model.ts (export from): neither engine imports the other",
    );
  });

  it("reports protocol/ importing an engine (it talks to core/engine.ts), but not core/engine.ts itself", () => {
    const r = check(tree({
      "core/engine.ts": "export type Engine = { id: number };\n",
      "core/memory/queue.ts": "export class Queue {}\n",
      "core/pg/sql.ts": "export type Sql = { q: string };\n",
      "protocol/d.ts":
        'import type { Queue } from "../core/memory/queue.ts";\nimport type { Engine } from "../core/engine.ts";\n',
      "protocol/http/v.ts": 'export const s = () => import("../../core/pg/sql.ts");\n',
    }));
    assertReported(
      r,
      "protocol/d.ts:1 imports core/memory/queue.ts (import type): protocol/ imports no engine",
      "protocol/http/v.ts:1 imports core/pg/sql.ts (import()): protocol/ imports no engine",
    );
    assert.doesNotMatch(r.err, /imports core\/engine\.ts/);
  });

  it("reports core's shared files importing an engine", () => {
    const r = check(tree({
      "core/clients.ts": 'import type { Job } from "./memory/model.ts";\nexport type J = Job;\n',
      "core/memory/model.ts": "export class Job {}\n",
    }));
    assertReported(
      r,
      "core/clients.ts:1 imports core/memory/model.ts (import type): core's shared files import no engine",
    );
  });

  it("reports core/ and protocol/ importing the front, and core/ or protocol/ going up", () => {
    const r = check(tree({
      "front/config.ts": "export const DEFAULT_PORT = 11300;\n",
      "core/log.ts": 'import type { DEFAULT_PORT } from "../front/config.ts";\nexport const l = 1;\n',
      "core/pg/engine.ts": 'import { DEFAULT_PORT } from "../../front/config.ts";\nexport const e = DEFAULT_PORT;\n',
      "core/c.ts": 'import type { P } from "../protocol/p.ts";\nexport const c = 1;\n',
      "core/d.ts": 'export const d = () => import("../adapters/a.ts");\n',
      "protocol/p.ts": 'export type P = number;\nexport const l = () => import("../adapters/a.ts");\n',
      "protocol/q.ts": 'export { DEFAULT_PORT } from "../front/config.ts";\n',
      "adapters/a.ts": 'import "../front/config.ts";\n',
    }));
    assertReported(
      r,
      "core/log.ts:1 imports front/config.ts (import type): nothing in core/ imports the front",
      "core/pg/engine.ts:1 imports front/config.ts (import): nothing in core/ imports the front",
      "protocol/q.ts:1 imports front/config.ts (export from): nothing in protocol/ imports the front",
      "adapters/a.ts:1 imports front/config.ts (side-effect import): adapters/ keeps runtime capabilities",
      "core/c.ts:1 imports protocol/p.ts (import type): core/ must not depend on protocol/",
      "core/d.ts:1 imports adapters/a.ts (import()): core/ must not depend on adapters/",
      "protocol/p.ts:2 imports adapters/a.ts (import()): protocol/ must not depend on adapters/",
    );
    assert.doesNotMatch(r.err, /cycle/);
  });

  it("reports bench/ importing from tests/", () => {
    const r = check(tree({
      "tests/harness/postgres.ts": "export const startPostgres = () => 1;\n",
      "bench/main.ts": 'export const pg = () => import("../tests/harness/postgres.ts");\n',
    }));
    assertReported(
      r,
      "bench/main.ts:1 imports tests/harness/postgres.ts (import()): bench/ imports nothing from tests/",
    );
  });

  it("refuses an unknown argument", () => {
    const r = check(tree({}), "--no-seam");
    assert.equal(r.status, 2);
    assert.match(r.err, /unknown argument: --no-seam/);
  });
});
