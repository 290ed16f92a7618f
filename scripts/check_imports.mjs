// The import rules of the tree, checked on every file that can name another: the rooms
// below, which room may import which, and no cycle anywhere.
//
//   core/*.ts      the seam and what every engine shares: imports only core/*.ts
//   core/memory/   the in-memory engine   } each imports core/*.ts and itself only:
//   core/pg/       the PostgreSQL engine  } neither engine imports the other
//   protocol/      bytes <-> commands: imports core/*.ts and itself, never an engine
//   adapters/      runtime capabilities: may serve protocol/ and bind an engine's
//                  interfaces (a driver for core/pg/sql.ts), never front/
//   front/         flags, the assembly of a service, migrate: the one place that knows
//                  both engines; imported only by server.ts and mod.ts
//   bench/         the benchmark: imports nothing of tests/ (a helper both need lives
//                  where both may use it)
//
// Every way one file can name another counts: `import ... from`, `import type`,
// `export ... from` (type-only too), side-effect `import "./x.ts"`, and dynamic
// `import("./x.ts")` with a string-literal specifier (also `typeof import(...)` in a
// type). A cycle of types or of lazy loads is still two files that cannot be read apart.
// Comments and strings are not imports (a JSDoc example may import ../mod.ts).
//
// Usage: node scripts/check_imports.mjs [--root DIR]
//   --root DIR  check the tree under DIR (default: this repository)
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The room of a root-relative, /-separated path; undefined for files no rule covers. */
function roomOf(path) {
  if (path === "mod.ts" || path === "server.ts") return "top";
  const [first, second] = path.split("/");
  if (first === "core") {
    if (second === "memory" || second === "pg") return second;
    return path.split("/").length === 2 ? "core" : undefined;
  }
  if (["protocol", "adapters", "front", "bench", "tests"].includes(first)) return first;
  return undefined;
}

/** The name of each room in messages. */
const ROOM_NAME = {
  core: "core's shared files (core/*.ts)",
  memory: "the in-memory engine (core/memory/)",
  pg: "the PostgreSQL engine (core/pg/)",
  protocol: "protocol/",
  adapters: "adapters/",
  front: "front/",
  bench: "bench/",
  tests: "tests/",
  top: "mod.ts and server.ts",
};

/**
 * The rules: for each room, the rooms it must not import, and why (the message). A room
 * not listed may import anything; its own room is always allowed.
 */
const RULES = {
  core: {
    memory: "core's shared files import no engine",
    pg: "core's shared files import no engine",
    protocol: "core/ must not depend on protocol/",
    adapters: "core/ must not depend on adapters/",
    front: "nothing in core/ imports the front",
    top: "core/ must not depend on mod.ts or server.ts",
  },
  memory: {
    pg: "neither engine imports the other",
    protocol: "an engine must not depend on protocol/",
    adapters: "an engine must not depend on adapters/ (capabilities are injected)",
    front: "nothing in core/ imports the front",
    top: "core/ must not depend on mod.ts or server.ts",
  },
  pg: {
    memory: "neither engine imports the other",
    protocol: "an engine must not depend on protocol/",
    adapters: "an engine must not depend on adapters/ (capabilities are injected)",
    front: "nothing in core/ imports the front",
    top: "core/ must not depend on mod.ts or server.ts",
  },
  protocol: {
    memory: "protocol/ imports no engine: it talks to core/engine.ts",
    pg: "protocol/ imports no engine: it talks to core/engine.ts",
    adapters: "protocol/ must not depend on adapters/",
    front: "nothing in protocol/ imports the front",
    top: "protocol/ must not depend on mod.ts or server.ts",
  },
  adapters: {
    front: "adapters/ keeps runtime capabilities: it does not import the front",
    top: "adapters/ must not depend on mod.ts or server.ts",
  },
  front: {
    top: "front/ must not depend on mod.ts or server.ts",
  },
  bench: {
    tests: "bench/ imports nothing from tests/",
  },
};

/** The folders and files walked. */
const WALKED = ["adapters", "core", "protocol", "front", "bench", "tests", "mod.ts", "server.ts"];

function usage(msg) {
  console.error(`${msg}\nusage: node scripts/check_imports.mjs [--root DIR]`);
  process.exit(2);
}

let root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--root") {
    if (argv[i + 1] === undefined) usage("--root needs a folder");
    root = resolve(argv[++i]);
  } else usage(`unknown argument: ${argv[i]}`);
}

const files = [];
function walk(p) {
  if (!existsSync(p)) return;
  if (statSync(p).isDirectory()) {
    for (const name of readdirSync(p).sort()) {
      if (name !== "node_modules" && !name.startsWith(".")) walk(join(p, name));
    }
  } else if (/\.(ts|mjs)$/.test(p)) files.push(p);
}
for (const p of WALKED) walk(join(root, p));
const known = new Set(files);
/** Root-relative with / separators, as messages spell paths. */
const rel = (p) => relative(root, p).split(sep).join("/");

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
  const from = roomOf(rel(f));
  for (const e of edges.get(f)) {
    const to = roomOf(rel(e.to));
    const why = from !== to && RULES[from]?.[to];
    if (why) {
      problems.push(
        `${rel(f)}:${e.line} imports ${rel(e.to)} (${e.how}): ${why} (${ROOM_NAME[from]} -> ${ROOM_NAME[to]})`,
      );
    }
  }
}

if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(
  `imports: no cycle among ${files.length} files (static, type-only, side-effect and dynamic imports); ` +
    "protocol/ imports no engine, neither engine the other, core's shared files no engine, core/ and " +
    "protocol/ not the front, bench/ nothing of tests/",
);
