// Fails when shared code names a runtime or reaches the OS, or anything imports from a
// registry this project cannot reach. core/ and protocol/ must run anywhere: only
// server.ts and adapters/ may say `Deno.` or `Bun.` or import node: I/O modules (fs, os,
// net, process, ...); core/ and protocol/ get those capabilities injected. node:util
// (parseArgs) and node:buffer are pure and allowed.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const problems = [];
/** node: modules that do no I/O, so core/ and protocol/ may use them. */
const ALLOWED_NODE = new Set(["util", "buffer"]);

function walk(dir, visit) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".") || name === "dist") continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, visit);
    else if (p.endsWith(".ts")) visit(p);
  }
}

for (const dir of ["core", "protocol"]) {
  walk(join(root, dir), (p) => {
    readFileSync(p, "utf8").split("\n").forEach((line, i) => {
      // Comments too: a comment that names Deno.x or Bun.x in core/ or protocol/ reads as a
      // dependency on that runtime (say "the runtime's listener" instead).
      if (/\b(Deno|Bun)\./.test(line)) {
        problems.push(`${p.slice(root.length)}:${i + 1}: names a runtime: ${line.trim()}`);
      }
      for (const m of line.matchAll(/(?:from|import)\s*\(?\s*["']node:([\w/]+)["']/g)) {
        if (!ALLOWED_NODE.has(m[1])) {
          problems.push(
            `${p.slice(root.length)}:${i + 1}: imports node:${m[1]} (inject it from adapters/): ${line.trim()}`,
          );
        }
      }
    });
  });
}
walk(root, (p) => {
  readFileSync(p, "utf8").split("\n").forEach((line, i) => {
    if (/from\s+["'](jsr:|https?:)/.test(line) || /import\(\s*["'](jsr:|https?:)/.test(line)) {
      problems.push(`${p.slice(root.length)}:${i + 1}: imports from an unreachable registry: ${line.trim()}`);
    }
  });
});

if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("portable: core/ and protocol/ name no runtime and import no node: I/O module; no jsr:/https: imports");
