// Lists what a reader cannot hold: files over 450 lines and functions over 80 lines, in the
// shipped code (mod.ts, server.ts, core/, protocol/, adapters/, front/) and, with --all,
// in bench/, scripts/ and tests/ too. Functions are found by deno lint's AST (the plugin
// beside this file). A report, not a gate: it always exits 0.
//   node scripts/sizes.mjs [--all]
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

const FILE_LIMIT = 450;
const root = resolve(new URL("..", import.meta.url).pathname);
const dirs = ["core", "protocol", "adapters", "front"];
if (process.argv.includes("--all")) dirs.push("bench", "scripts", "tests");

const files = ["mod.ts", "server.ts"];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.(ts|mjs)$/.test(name)) files.push(relative(root, p));
  }
};
for (const dir of dirs) walk(join(root, dir));

console.log(`files over ${FILE_LIMIT} lines:`);
for (const file of files) {
  const lines = readFileSync(join(root, file), "utf8").replace(/\n$/, "").split("\n").length;
  if (lines > FILE_LIMIT) console.log(`  ${file} ${lines}`);
}

const scratch = mkdtempSync(join(tmpdir(), "sizes-"));
const config = join(scratch, "deno.json");
const plugin = join(root, "scripts/sizes_plugin.ts");
writeFileSync(config, JSON.stringify({ lint: { plugins: [plugin], rules: { tags: [] } } }));
let out;
try {
  out = execFileSync("sh", [join(root, "scripts/run.sh"), "deno", "lint", "--json", "--config", config, ...files], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
} catch (e) {
  out = e.stdout; // deno lint exits 1 when it reports anything
} finally {
  rmSync(scratch, { recursive: true });
}
console.log("functions over 80 lines:");
for (const d of JSON.parse(out).diagnostics) {
  const [name, lines] = d.message.split(" ");
  console.log(`  ${relative(root, new URL(d.filename).pathname)}:${d.range.start.line} ${name} ${lines}`);
}
