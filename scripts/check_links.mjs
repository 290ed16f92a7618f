// Every relative link in the project's Markdown resolves: for each `](path)` or
// `](path#anchor)` (and `](#anchor)`) in README.md, docs/*.md and the READMEs beside the
// code, the file exists, and an anchor names a heading of that file (GitHub's slugs).
// Links to other sites are not fetched. Exit 1 with one line per broken link.
//   node scripts/check_links.mjs [FILE.md ...]
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");

function defaultFiles() {
  const files = ["README.md"];
  for (const dir of ["docs", "bench", "core", "protocol", "adapters", "packaging"]) walk(join(ROOT, dir), files);
  return files.filter((f) => existsSync(join(ROOT, f)));
}
function walk(dir, out) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith(".md")) out.push(relative(ROOT, p));
  }
}

/** The text outside fenced code blocks and inline code spans. */
function prose(text) {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  const text = readFileSync(file, "utf8").replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const m of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const files = process.argv.length > 2 ? process.argv.slice(2) : defaultFiles();
const problems = [];
let checked = 0;
for (const file of files) {
  const path = resolve(ROOT, file);
  const lines = prose(readFileSync(path, "utf8"));
  for (const m of lines.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
    checked++;
    const [pathPart, anchor] = target.split("#", 2);
    const dest = pathPart === "" ? path : resolve(dirname(path), decodeURIComponent(pathPart));
    if (!existsSync(dest)) {
      problems.push(`${file}: ${target}: no such file ${relative(ROOT, dest)}`);
      continue;
    }
    if (anchor !== undefined && anchor !== "") {
      if (!dest.endsWith(".md")) problems.push(`${file}: ${target}: an anchor into a file that is not Markdown`);
      else if (!anchors(dest).has(decodeURIComponent(anchor))) {
        problems.push(`${file}: ${target}: no heading #${anchor} in ${relative(ROOT, dest)}`);
      }
    }
  }
}
for (const p of problems) console.error(p);
if (problems.length > 0) process.exit(1);
console.log(`check_links: ${checked} relative links in ${files.length} files resolve`);
