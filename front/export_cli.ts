// `tubeway export-binlog -b DIR OUT` (server.ts hands over argv after `export-binlog`):
// the jobs of a stopped tubeway's log directory as a beanstalkd 1.12 binlog directory
// (core/memory/beanstalkd_log/export.ts), its lines on stdout, problems on stderr.
import process from "node:process";
import { mkdirSync } from "node:fs";
import { EXPORT_USAGE, exportBinlog, parseExportArgs } from "../core/memory/beanstalkd_log/export.ts";
import { nodeFiles } from "../adapters/files_node.ts";

/** `tubeway export-binlog -b DIR OUT`: exit 0 done, 5 usage, 10 DIR locked, 1 other trouble. */
export function exportCommand(args: string[]): never {
  const parsed = parseExportArgs(args);
  if (parsed.kind === "help") {
    process.stdout.write(EXPORT_USAGE);
    process.exit(0);
  }
  if (parsed.kind === "error") {
    console.error(`tubeway: export-binlog: ${parsed.message}`);
    process.stderr.write(EXPORT_USAGE);
    process.exit(5);
  }
  // a one-shot command for a person or a script: plain lines, as its usage errors
  function quit(message: string, code: number): never {
    console.error(`tubeway: export-binlog: ${message}`);
    process.exit(code);
  }
  try {
    mkdirSync(parsed.out, { recursive: true });
  } catch (e) {
    quit(`cannot create ${parsed.out}: ${(e as Error).message}`, 1);
  }
  const r = exportBinlog(parsed.dir, parsed.out, nodeFiles(), (m) => console.error(`tubeway: ${m}`), Date.now());
  if (r.kind === "failed") quit(r.message, r.locked ? 10 : 1);
  for (const line of r.lines) console.log(line);
  process.exit(0);
}
