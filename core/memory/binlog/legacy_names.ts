// Earlier tubeway releases named their log files binlog.N, as beanstalkd does. A
// beanstalkd started on such a directory deletes the binlog.N files it cannot read,
// so the log now lives in tubeway.N. At start (with the directory locked) every
// binlog.N that begins with tubeway's magic is renamed to tubeway.N, keeping its N:
// the renamed files are then replayed like any other. beanstalkd's own binlog.N
// files do not begin with that magic and are never touched here.
import type { Files } from "../../files.ts";
import { errorText, joinPath } from "../../files.ts";
import { FILE_MAGIC, LOG_NAME_PREFIX } from "./codec.ts";

const LEGACY = /^binlog\.([1-9][0-9]{0,15})$/;

function hasMagic(b: Uint8Array): boolean {
  return b.length >= FILE_MAGIC.length && FILE_MAGIC.every((x, i) => b[i] === x);
}

/**
 * Rename tubeway's own binlog.N files in `dir` to tubeway.N. Returns how many were
 * renamed; trouble is logged, never thrown (such a file is then left where it is).
 */
export function migrateLegacyNames(dir: string, files: Files, log: (msg: string) => void): number {
  const names = files.list(dir);
  let moved = 0;
  for (const name of names) {
    const m = LEGACY.exec(name);
    if (!m) continue;
    const from = joinPath(dir, name);
    const to = joinPath(dir, LOG_NAME_PREFIX + m[1]);
    try {
      if (!hasMagic(files.read(from))) continue;
      if (names.includes(LOG_NAME_PREFIX + m[1])) {
        log(`${from}: a tubeway log file, but ${to} exists too; left as it is`);
        continue;
      }
      files.rename(from, to);
      moved++;
    } catch (e) {
      log(`${from}: cannot rename to ${to}: ${errorText(e)}`);
    }
  }
  if (moved > 0) log(`binlog: renamed ${moved} log files of an earlier tubeway from binlog.N to ${LOG_NAME_PREFIX}N`);
  return moved;
}
