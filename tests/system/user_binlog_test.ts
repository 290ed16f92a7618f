// -u USER with -b DIR: the log directory must be writable by the user the server
// becomes, or every put fails later, at the first new log file (EACCES: the directory
// was opened as root). 1.12 opens its log after the user switch and exits 10 with
// "failed to lock wal dir"; tubeway checks after the switch and refuses the same way.
// (Issue 7, item 5.) Needs root, and the unprivileged user `nobody`.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];

const nobody = (() => {
  try {
    const f = readFileSync("/etc/passwd", "utf8").split("\n").map((l) => l.split(":")).find((l) => l[0] === "nobody");
    return f ? { uid: Number(f[2]), gid: Number(f[3]) } : undefined;
  } catch {
    return undefined;
  }
})();
const canSwitch = process.getuid?.() === 0 && nobody !== undefined;

describe("-u USER with -b DIR", { skip: skipUnless(canSwitch, "needs root and a user named nobody") }, () => {
  it("a log dir the user cannot write: refuses to start, exit 10, failed to lock wal dir", () => {
    const dir = mkdtempSync(join(tmpdir(), "tubeway-u-")); // 0700, owned by root
    try {
      const [cmd, ...args] = SERVER;
      const r = spawnSync(cmd!, [...args, "-u", "nobody", "-b", dir, "-l", "127.0.0.1", "-p", "0"], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 30_000,
      });
      assert.equal(r.status, 10, `exit ${r.status} ${r.signal ?? ""}: ${r.stderr}`);
      assert.match(r.stderr, /failed to lock wal dir/);
      assert.match(r.stderr, /nobody/, "the message names the user");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a log dir the user owns: starts, and puts keep working across new log files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tubeway-u-"));
    chownSync(dir, nobody!.uid, nobody!.gid);
    // -s 10000: a new log file every few dozen puts, each created as nobody.
    const s = await startProcess(SERVER, ["-u", "nobody", "-b", dir, "-s", "10000"]);
    try {
      const w = await dial(s.addr);
      const body = "x".repeat(500);
      for (let i = 1; i <= 100; i++) assert.equal(await w.put(body), `INSERTED ${i}\r\n`, `put ${i}`);
      w.close();
      const logs = readdirSync(dir).filter((f) => /^tubeway\.\d+$/.test(f));
      assert.ok(logs.length >= 3, `expected several log files, found ${logs.join(", ")}`);
    } finally {
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
