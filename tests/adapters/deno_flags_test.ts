// Every Deno launch of tubeway users get carries the V8 flags of adapters/deno_flags.ts:
// deno.json cannot import them, so this holds its tasks to the same words.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DENO_V8_FLAGS } from "../../adapters/deno_flags.ts";
import { DENO_SERVER, ROOT, serveTaskArgv } from "../harness/paths.ts";

const tasks: Record<string, string> = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).tasks;
const flag = `--v8-flags=${DENO_V8_FLAGS}`;

describe("tubeway's V8 flags on every Deno launch", () => {
  it("deno task serve (npm start) and deno task compile (the binary) carry them", () => {
    assert.ok(tasks.serve?.split(" ").includes(flag), `serve task: ${tasks.serve}`);
    assert.ok(tasks.compile?.split(" ").includes(flag), `compile task: ${tasks.compile}`);
    assert.ok(serveTaskArgv().includes(flag));
  });

  it("the tests run the Deno server as the serve task does", () => {
    assert.ok(DENO_SERVER.includes(flag));
    assert.equal(DENO_SERVER.at(-1), serveTaskArgv().at(-1));
  });
});
