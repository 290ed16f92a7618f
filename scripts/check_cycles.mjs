// Fails when files under core/ and protocol/ import each other in a cycle (type-only
// imports included: a cycle of types is still two files that cannot be read apart).
// Layering is one way: adapters/ -> protocol/ -> core/.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(new URL("..", import.meta.url).pathname);
const files = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith(".ts")) files.push(p);
  }
}
for (const dir of ["core", "protocol"]) walk(join(root, dir));

/** file -> the files under core/ and protocol/ it imports. */
const edges = new Map();
for (const f of files) {
  const src = readFileSync(f, "utf8");
  const deps = [];
  for (const m of src.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const target = resolve(dirname(f), m[1]);
    if (files.includes(target)) deps.push(target);
  }
  edges.set(f, deps);
}

const problems = [];
const state = new Map(); // 1: on the stack, 2: done
const stack = [];
function visit(f) {
  state.set(f, 1);
  stack.push(f);
  for (const d of edges.get(f)) {
    if (state.get(d) === 1) {
      const cycle = stack.slice(stack.indexOf(d)).concat(d).map((p) => relative(root, p));
      problems.push(`import cycle: ${cycle.join(" -> ")}`);
    } else if (!state.has(d)) visit(d);
  }
  stack.pop();
  state.set(f, 2);
}
for (const f of files) if (!state.has(f)) visit(f);
for (const f of files.filter((p) => relative(root, p).startsWith("core"))) {
  for (const d of edges.get(f)) {
    if (relative(root, d).startsWith("protocol")) {
      problems.push(`${relative(root, f)} imports ${relative(root, d)}: core/ must not depend on protocol/`);
    }
  }
}

if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`cycles: none among ${files.length} files in core/ and protocol/; core/ imports nothing from protocol/`);
