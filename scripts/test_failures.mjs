// Usage: bun scripts/test_failures.mjs REPORT.xml
// Prints each failed test of a JUnit report (bun test --reporter=junit) with the start
// of its message: scripts/bun_test.sh runs it after a failed run, so that the end of the
// output says why each test failed, not only which.
import { readFileSync } from "node:fs";

/** Lines of a failure's text printed at most (the rest is in the log above). */
const MAX_LINES = 40;

const xml = (() => {
  try {
    return readFileSync(process.argv[2], "utf8");
  } catch (e) {
    console.error(`(no test report to read: ${e.message})`);
    process.exit(0);
  }
})();

const entities = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
const decode = (s) =>
  s.replace(
    /&(#x[0-9a-f]+|#\d+|\w+);/gi,
    (m, e) =>
      e[0] !== "#"
        ? entities[e] ?? m
        : String.fromCodePoint(e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : Number(e.slice(1))),
  );
const attr = (tag, name) => {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? decode(m[1]) : "";
};

const failed = [];
for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
  const inner = m[3] ?? "";
  const f = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(inner);
  if (!f) continue;
  const text = decode(f[3] ?? "") || attr(f[2], "message");
  failed.push({ name: `${attr(m[1], "file")}: ${attr(m[1], "classname")} > ${attr(m[1], "name")}`, text });
}
if (failed.length === 0) {
  console.error("(the test report names no failed test: see the errors above)");
} else {
  console.error(`\nWhy each failed (${failed.length}):`);
  for (const { name, text } of failed) {
    const lines = text.trimEnd().split("\n");
    console.error(`\n- ${name}`);
    for (const l of lines.slice(0, MAX_LINES)) console.error(`    ${l}`);
    if (lines.length > MAX_LINES) console.error(`    ... ${lines.length - MAX_LINES} more lines (see above)`);
  }
}
