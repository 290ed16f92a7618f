// Fails when files under adapters/, core/ and protocol/ import each other in a cycle,
// break the layering, or (the seam rule) protocol/ reaches into core's queue internals.
//
// Every way one file can name another counts: `import ... from`, `import type`,
// `export ... from` (type-only too), side-effect `import "./x.ts"`, and dynamic
// `import("./x.ts")` with a string-literal specifier (also `typeof import(...)` in a
// type). A cycle of types or of lazy loads is still two files that cannot be read apart.
//
// Layering is one way: adapters/ -> protocol/ -> core/. core/ imports neither protocol/
// nor adapters/; protocol/ does not import adapters/.
//
// Usage: node scripts/check_cycles.mjs [--root DIR] [--no-seam]
//   --root DIR  check DIR/adapters, DIR/core and DIR/protocol (default: this repository)
//   --no-seam   skip the seam rule (for a tree that does not satisfy it yet)
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The seam rule: no file under protocol/ may import any of these (paths relative to
 * the root; `*` is any run of name characters, `**` anything below a folder). The
 * protocol talks to the queue through its seam, not through its parts.
 */
const SEAM_FORBIDDEN_FOR_PROTOCOL = [
  "core/memory/queue.ts",
  "core/queue_*.ts",
  "core/memory/model.ts",
  "core/memory/heap.ts",
  "core/memory/waits.ts",
  "core/memory/tubes.ts",
  "core/memory/job_table.ts",
  "core/memory/records.ts",
  "core/memory/store.ts",
  "core/memory/extensions.ts",
  "core/memory/extras.ts",
  "core/memory/schedule.ts",
  "core/memory/stats.ts",
  "core/memory/wal.ts",
  "core/memory/log_turn.ts",
  "core/memory/binlog/**",
  "core/memory/beanstalkd_log/**",
];

/** The folders walked. */
const DIRS = ["adapters", "core", "protocol"];
/** The layering: which folders each one may not import. */
const LAYERING = { core: ["protocol", "adapters"], protocol: ["adapters"], adapters: [] };

function usage(msg) {
  console.error(`${msg}\nusage: node scripts/check_cycles.mjs [--root DIR] [--no-seam]`);
  process.exit(2);
}

let root = resolve(fileURLToPath(new URL("..", import.meta.url)));
let seam = true;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--no-seam") seam = false;
  else if (argv[i] === "--root") {
    if (argv[i + 1] === undefined) usage("--root needs a folder");
    root = resolve(argv[++i]);
  } else usage(`unknown argument: ${argv[i]}`);
}

/** A glob of SEAM_FORBIDDEN_FOR_PROTOCOL as a RegExp over a root-relative, /-separated path. */
function globRegExp(glob) {
  const re = glob.split(/(\*\*|\*)/).map((part) =>
    part === "**" ? ".*" : part === "*" ? "[^/]*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
  );
  return new RegExp(`^${re.join("")}$`);
}
const SEAM = SEAM_FORBIDDEN_FOR_PROTOCOL.map((g) => ({ glob: g, re: globRegExp(g) }));

const files = [];
function walk(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith(".ts")) files.push(p);
  }
}
for (const dir of DIRS) walk(join(root, dir));
const known = new Set(files);
/** Root-relative with / separators, as messages and globs spell paths. */
const rel = (p) => relative(root, p).split(sep).join("/");
const top = (p) => rel(p).split("/")[0];

/**
 * Splits TypeScript source into tokens, enough to find imports: comments dropped,
 * strings and substitution-free template literals kept whole (kind "str"), a regex
 * literal skipped (told from division by the token before it), identifiers, and
 * single-character punctuation.
 */
function tokenize(src) {
  const out = [];
  /** One entry per open brace: true when it opened a template's `${`. */
  const braces = [];
  const REGEX_AFTER_WORD = new Set([
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "instanceof",
    "new",
    "delete",
    "void",
    "throw",
    "yield",
    "await",
    "of",
  ]);
  let i = 0;
  let line = 1;
  const n = src.length;
  /** Reads a template's text from i up to its closing backtick or the next `${`. */
  function templateText() {
    let s = "";
    while (i < n) {
      const c = src[i];
      if (c === "\\") {
        s += src.slice(i, i + 2);
        i += 2;
      } else if (c === "`") {
        i++;
        return { s, open: false };
      } else if (c === "$" && src[i + 1] === "{") {
        i += 2;
        braces.push(true);
        return { s, open: true };
      } else {
        if (c === "\n") line++;
        s += c;
        i++;
      }
    }
    return { s, open: false };
  }
  while (i < n) {
    const c = src[i];
    if (c === "\n") {
      line++;
      i++;
    } else if (/\s/.test(c)) i++;
    else if (c === "/" && src[i + 1] === "/") {
      while (i < n && src[i] !== "\n") i++;
    } else if (c === "/" && src[i + 1] === "*") {
      const e = src.indexOf("*/", i + 2);
      const stop = e < 0 ? n : e + 2;
      for (let k = i; k < stop; k++) if (src[k] === "\n") line++;
      i = stop;
    } else if (c === '"' || c === "'") {
      let s = "";
      i++;
      while (i < n && src[i] !== c && src[i] !== "\n") {
        if (src[i] === "\\") s += src[i++];
        s += src[i++];
      }
      i++;
      out.push({ kind: "str", v: s, line });
    } else if (c === "`") {
      const at = line;
      i++;
      const t = templateText();
      out.push({ kind: t.open ? "tmpl" : "str", v: t.s, line: at });
    } else if (c === "}" && braces.length && braces[braces.length - 1]) {
      braces.pop();
      i++;
      templateText(); // the rest of a template with substitutions: not a specifier
    } else if (/[A-Za-z_$\u0080-\uffff]/.test(c)) {
      let e = i + 1;
      while (e < n && /[\w$\u0080-\uffff]/.test(src[e])) e++;
      out.push({ kind: "id", v: src.slice(i, e), line });
      i = e;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      let e = i + 1;
      while (e < n && /[\w.]/.test(src[e])) e++;
      out.push({ kind: "num", v: src.slice(i, e), line });
      i = e;
    } else if (c === "/") {
      const prev = out[out.length - 1];
      const regex = !prev ||
        (prev.kind === "p" && !")]}".includes(prev.v)) ||
        (prev.kind === "id" && REGEX_AFTER_WORD.has(prev.v));
      if (regex) {
        let inClass = false;
        i++;
        while (i < n && src[i] !== "\n") {
          const d = src[i];
          if (d === "\\") i++;
          else if (d === "[") inClass = true;
          else if (d === "]") inClass = false;
          else if (d === "/" && !inClass) break;
          i++;
        }
        i++;
        while (i < n && /\w/.test(src[i])) i++; // flags
        out.push({ kind: "re", v: "", line });
      } else {
        out.push({ kind: "p", v: c, line });
        i++;
      }
    } else {
      if (c === "{") braces.push(false);
      else if (c === "}") braces.pop();
      out.push({ kind: "p", v: c, line });
      i++;
    }
  }
  return out;
}

/** The relative specifiers a file's source names, each with how and on which line. */
function importsOf(src) {
  const t = tokenize(src);
  const found = [];
  const is = (k, kind, v) => t[k] !== undefined && t[k].kind === kind && (v === undefined || t[k].v === v);
  /** From t[k] on: an import/export clause, then `from "x"`; pushes x. */
  function clauseFrom(k, how, line) {
    while (k < t.length) {
      if (is(k, "p", "{")) {
        let depth = 0;
        for (; k < t.length; k++) {
          if (is(k, "p", "{")) depth++;
          else if (is(k, "p", "}") && --depth === 0) break;
        }
        k++;
      } else if (is(k, "id", "from") && is(k + 1, "str")) {
        found.push({ spec: t[k + 1].v, how, line });
        return;
      } else if (is(k, "id") || is(k, "p", "*") || is(k, "p", ",")) k++;
      else return;
    }
  }
  for (let k = 0; k < t.length; k++) {
    if (t[k].kind !== "id" || (k > 0 && is(k - 1, "p", "."))) continue;
    const line = t[k].line;
    if (t[k].v === "import") {
      if (is(k + 1, "p", "(")) {
        if (is(k + 2, "str") && (is(k + 3, "p", ")") || is(k + 3, "p", ","))) {
          found.push({ spec: t[k + 2].v, how: "import()", line });
        }
      } else if (is(k + 1, "str")) found.push({ spec: t[k + 1].v, how: "side-effect import", line });
      else if (!is(k + 1, "p", ".")) {
        const typeOnly = is(k + 1, "id", "type") && !is(k + 2, "id", "from") && !is(k + 2, "p", ",");
        clauseFrom(k + 1, typeOnly ? "import type" : "import", line);
      }
    } else if (t[k].v === "export") {
      const typeOnly = is(k + 1, "id", "type");
      const j = typeOnly ? k + 2 : k + 1;
      if (is(j, "p", "{") || is(j, "p", "*")) clauseFrom(j, typeOnly ? "export type from" : "export from", line);
    }
  }
  return found;
}

/** file -> [{ to, how, line }] for the imports that name walked files. */
const edges = new Map();
for (const f of files) {
  const deps = [];
  for (const imp of importsOf(readFileSync(f, "utf8"))) {
    if (!/^\.{1,2}\//.test(imp.spec)) continue;
    const to = resolve(dirname(f), imp.spec);
    if (known.has(to)) deps.push({ to, how: imp.how, line: imp.line });
  }
  edges.set(f, deps);
}

const problems = [];

// Cycles: depth-first, reporting each back edge's cycle once (as a set of edges).
const seen = new Set();
const state = new Map(); // 1: on the stack, 2: done
const stack = []; // [file, edge taken out of it]
function visit(f) {
  state.set(f, 1);
  for (const e of edges.get(f)) {
    stack.push([f, e]);
    if (state.get(e.to) === 1) {
      const at = stack.findIndex(([g]) => g === e.to);
      const loop = stack.slice(at);
      const key = loop.map(([g, x]) => `${g}>${x.to}`).sort().join("|");
      if (!seen.has(key)) {
        seen.add(key);
        const path = loop.map(([g, x]) => `${rel(g)} -(${x.how}, line ${x.line})->`).join(" ");
        problems.push(`import cycle: ${path} ${rel(e.to)}`);
      }
    } else if (!state.has(e.to)) visit(e.to);
    stack.pop();
  }
  state.set(f, 2);
}
for (const f of files) if (!state.has(f)) visit(f);

for (const f of files) {
  for (const e of edges.get(f)) {
    const from = top(f);
    const to = top(e.to);
    if (LAYERING[from].includes(to)) {
      problems.push(
        `${rel(f)}:${e.line} imports ${rel(e.to)} (${e.how}): ${from}/ must not depend on ${to}/ ` +
          "(layering: adapters/ -> protocol/ -> core/)",
      );
    }
    if (seam && from === "protocol") {
      const hit = SEAM.find((s) => s.re.test(rel(e.to)));
      if (hit) {
        problems.push(
          `${rel(f)}:${e.line} imports ${rel(e.to)} (${e.how}): seam rule, protocol/ must not import ${hit.glob}`,
        );
      }
    }
  }
}

if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(
  `cycles: none among ${files.length} files in adapters/, core/ and protocol/ (static, type-only, side-effect and ` +
    "dynamic imports); layering adapters/ -> protocol/ -> core/ holds; " +
    (seam ? "seam: protocol/ imports none of core's queue internals" : "seam rule skipped (--no-seam)"),
);
