// docs/library.md's examples run as written, on this runtime: each TypeScript block
// (its import of ../mod.ts pointed at this checkout's mod.ts), under Deno type-checked (with the
// repository's compiler options) and with exactly the permissions the page gives after it and
// never a prompt, and under Bun as is.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, DENO, ROOT, RUNTIME } from "../harness/paths.ts";

const PAGE = readFileSync(join(ROOT, "docs", "library.md"), "utf8");

/** What each block prints, in the page's order. */
const PRINTS = [
  "INSERTED 1\r\nRESERVED 1 5\r\nhello\r\n\n",
  "INSERTED 1\r\n\nFOUND 1 4\r\nkept\r\n\n",
];

/** Each ```ts block with the `deno run ... app.ts` line the page gives after it. */
function examples(): { code: string; denoFlags: string[] }[] {
  const out = [];
  for (const m of PAGE.matchAll(/```ts\n([\s\S]*?)```([\s\S]*?)(?=```ts|$)/g)) {
    const run = /`deno run ((?:--[\w-]+(?:=\S+)? )+)app\.ts`/.exec(m[2]!);
    assert.ok(run, `no "deno run ... app.ts" after the block:\n${m[1]}`);
    out.push({ code: m[1]!, denoFlags: run[1]!.trim().split(" ") });
  }
  return out;
}

describe(`docs/library.md's examples (${RUNTIME})`, () => {
  const blocks = examples();

  it("has the examples this test knows the output of", () => {
    assert.equal(blocks.length, PRINTS.length);
  });

  blocks.forEach(({ code, denoFlags }, i) => {
    it(`example ${i + 1} runs and prints what its comments say`, { timeout: 60_000 }, () => {
      const dir = mkdtempSync(join(tmpdir(), "tubeway-libdoc-"));
      try {
        const file = join(dir, "app.ts");
        assert.match(code, /from "\.\.\/mod\.ts";/);
        writeFileSync(file, code.replace('from "../mod.ts";', `from ${JSON.stringify(join(ROOT, "mod.ts"))};`));
        const argv = RUNTIME === "bun"
          ? [BUN, "run", file]
          : [DENO, "run", "--check", `--config=${join(ROOT, "deno.json")}`, "--no-prompt", ...denoFlags, file];
        const r = spawnSync(argv[0]!, argv.slice(1), { cwd: dir, encoding: "utf8", timeout: 50_000 });
        assert.equal(r.status, 0, `${argv.join(" ")}:\n${r.stdout}${r.stderr}`);
        assert.equal(r.stdout, PRINTS[i]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
