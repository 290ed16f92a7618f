// The binlog over the real file system (node:fs), in a temporary directory: the
// same module must behave the same under Deno and Bun, lock included.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { openBinlog, WalOpenError } from "../../core/memory/binlog/open.ts";
import { fcntlWriteLockHolder, nodeFiles } from "../../adapters/files_node.ts";
import type { JobRecord } from "../../core/memory/wal.ts";
import { BUN, DENO, ROOT, RUNTIME } from "../harness/paths.ts";
import { ok } from "../harness/binlog_fixture.ts";
import { jobRecord } from "../harness/job_record.ts";
import { recordSpans } from "../harness/binlog_dir.ts";

const base = fs.mkdtempSync(join(tmpdir(), "tubeway-binlog-"));
after(() => fs.rmSync(base, { recursive: true, force: true }));
let n = 0;

function freshDir(): string {
  const d = join(base, `d${n++}`);
  fs.mkdirSync(d);
  return d;
}

function open(dir: string, logs: string[] = [], durableAcks = false) {
  return openBinlog(
    { dir, fsyncMs: 0, durableAcks, maxFileSize: 4096, maxJobSize: 65535, log: (m) => logs.push(m) },
    nodeFiles(),
    { now: () => Date.now() },
    () => undefined,
  );
}

function job(id: number, text: string): JobRecord {
  return jobRecord(id, { pri: 1, createdAtMs: 1_700_000_000_000, body: new TextEncoder().encode(text + "\r\n") });
}

function writeLock(dir: string, v: Record<string, unknown>, name = "tubeway.lock"): void {
  fs.writeFileSync(join(dir, name), JSON.stringify(v));
}

function bootId(): string {
  try {
    return fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "";
  }
}

describe("binlog on the real file system", () => {
  test("write, close, reopen", async () => {
    const dir = freshDir();
    const logs: string[] = [];
    const { wal, recovered } = open(dir, logs, true);
    assert.deepEqual(recovered.jobs, []);
    for (let i = 1; i <= 30; i++) assert.equal(wal.put(job(i, `job ${i} ${"x".repeat(200)}`)), true);
    assert.equal(wal.update({ ...job(3, ""), state: "buried", buries: 1 }), true);
    assert.equal(wal.update({ ...job(4, ""), state: "deleted" }), true);
    assert.equal(await ok(wal.synced()), true);
    assert.ok(wal.stats().currentIndex > 1, "rotated at -s 4096");
    wal.close();
    assert.equal(fs.existsSync(join(dir, "tubeway.lock")), false, "lock released");
    const again = open(dir, logs);
    assert.equal(again.recovered.jobs.length, 29);
    assert.deepEqual(again.recovered.jobs.at(-1)?.id, 3);
    assert.equal(again.recovered.jobs.at(-1)?.state, "buried");
    assert.deepEqual(logs, []);
    const names = fs.readdirSync(dir).sort();
    assert.ok(names.includes("ballast") && names.includes("tubeway.lock"));
    assert.ok(names.every((x) => /^(tubeway\.\d+|ids\.\d+|ballast|tubeway\.lock)$/.test(x)), names.join(","));
    again.wal.close();
  });

  test("put/delete churn: files removed while an fsync runs on them do not fail that fsync", async () => {
    const dir = freshDir();
    const logs: string[] = [];
    const { wal } = openBinlog(
      { dir, fsyncMs: 0, durableAcks: false, maxFileSize: 4096, maxJobSize: 65535, log: (m) => logs.push(m) },
      nodeFiles(),
      { now: () => Date.now() },
      () => undefined,
    );
    // the first id reservation reaches ids.N with the first round; from then on dead files go at once
    assert.equal(wal.put(job(1, "first")), true);
    assert.equal(wal.update({ ...job(1, ""), state: "deleted" }), true);
    await new Promise((r) => setTimeout(r, 50));
    let peak = 0;
    for (let i = 2; i <= 4001; i += 16) {
      for (let k = i; k < i + 16; k++) assert.equal(wal.put(job(k, `job ${k} ${"x".repeat(120)}`)), true);
      for (let k = i; k < i + 16; k++) assert.equal(wal.update({ ...job(k, ""), state: "deleted" }), true);
      await new Promise((r) => setImmediate(r));
      peak = Math.max(peak, wal.usage().bytes);
    }
    // a failed fsync would have rewritten the live jobs (a checkpoint)
    assert.deepEqual(logs, []);
    assert.equal(wal.stats().recordsMigrated, 0);
    assert.ok(peak <= 3 * 4096, `peak ${peak} bytes`);
    wal.close();
  });

  test("preallocation: zero blocks ahead of the data, a chunk at a time up to the limit; size() is the data", () => {
    const path = join(freshDir(), "f");
    const h = nodeFiles().open(path, "new", { chunk: 8192, limit: 20000 });
    const onDisk = () => fs.statSync(path).size;
    h.append(new Uint8Array(100).fill(1));
    assert.deepEqual([h.size(), onDisk()], [100, 8192]);
    h.append(new Uint8Array(9000).fill(2));
    assert.deepEqual([h.size(), onDisk()], [9100, 16384], "a chunk past the old end, to a block boundary");
    h.append(new Uint8Array(4000).fill(3));
    assert.deepEqual([h.size(), onDisk()], [13100, 16384], "into the zero blocks");
    h.append(new Uint8Array(4000).fill(3));
    assert.deepEqual([h.size(), onDisk()], [17100, 20480], "no further than the limit (rounded up to a block)");
    h.append(new Uint8Array(15000).fill(4));
    assert.deepEqual([h.size(), onDisk()], [32100, 32100], "past the limit: a plain append");
    h.truncate(9100);
    assert.deepEqual([h.size(), onDisk()], [9100, 9100]);
    h.append(new Uint8Array(10).fill(5));
    assert.deepEqual([h.size(), onDisk()], [9110, 20480]);
    h.close();
    const b = fs.readFileSync(path);
    assert.equal(b.length, 9110, "close cuts the zero tail off");
    assert.deepEqual([b[0], b[99], b[100], b[9099], b[9100], b[9109]], [1, 1, 2, 2, 5, 5]);
  });

  test("-f 0: the current file is preallocated; a crash leaves a zero tail that recovery reads quietly", async () => {
    const dir = freshDir();
    const opts = { dir, fsyncMs: 0, durableAcks: true, maxFileSize: 1 << 20, maxJobSize: 65535 };
    const logs: string[] = [];
    const { wal } = openBinlog({ ...opts, log: (m) => logs.push(m) }, nodeFiles(), { now: () => Date.now() }, () => {
      return undefined;
    });
    for (let i = 1; i <= 30; i++) assert.equal(wal.put(job(i, `job ${i} ${"x".repeat(200)}`)), true);
    assert.equal(await ok(wal.synced()), true);
    const current = join(dir, `tubeway.${wal.stats().currentIndex}`);
    const held = fs.readFileSync(current);
    const data = recordSpans(current).at(-1)!.end;
    assert.ok(held.length % 4096 === 0 && held.length >= data + 4096, `${held.length} bytes on disk, ${data} of data`);
    assert.ok(held.subarray(data).every((x) => x === 0), "zeros after the data");
    // kill -9 now: what is in the files is what the next start reads
    const crashed = freshDir();
    for (const name of fs.readdirSync(dir)) {
      if (/^(tubeway|ids)\.\d+$/.test(name)) fs.copyFileSync(join(dir, name), join(crashed, name));
    }
    const afterCrash: string[] = [];
    const r = open(crashed, afterCrash, true);
    assert.equal(r.recovered.jobs.length, 30);
    assert.deepEqual(afterCrash, [], "no damage reported");
    r.wal.close();
    wal.close();
    assert.equal(fs.statSync(current).size, data, "close cuts the zero tail off");
    assert.deepEqual(logs, []);
  });

  test("a second open in the same process fails; after close it works", () => {
    const dir = freshDir();
    const first = open(dir);
    assert.throws(() => open(dir), (e: unknown) => {
      assert.ok(e instanceof WalOpenError);
      assert.equal(
        e.message,
        `failed to lock wal dir ${dir}: locked by pid ${process.pid} on ${hostname()} ` +
          `(remove ${dir}/tubeway.lock if that process is not a tubeway server)`,
      );
      return true;
    });
    first.wal.close();
    open(dir).wal.close();
  });

  test("a lock held by another live process is respected", async () => {
    const dir = freshDir();
    const script = join(base, "hold.ts");
    fs.writeFileSync(
      script,
      `import { openBinlog } from ${JSON.stringify(join(ROOT, "core/memory/binlog/open.ts"))};
import { nodeFiles } from ${JSON.stringify(join(ROOT, "adapters/files_node.ts"))};
const { wal } = openBinlog({ dir: ${JSON.stringify(dir)}, fsyncMs: 0, durableAcks: false,
  maxFileSize: 4096, maxJobSize: 100, log: () => {} }, nodeFiles(), { now: () => Date.now() }, () => undefined);
console.log("held");
process.stdin.on("data", () => {}); process.stdin.on("end", () => { wal.close(); process.exit(0); });
`,
    );
    const args = RUNTIME === "bun" ? [BUN, "run", script] : [DENO, "run", "-A", script];
    const child = spawn(args[0]!, args.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => d.toString().includes("held") && resolve());
      child.on("exit", (code) => reject(new Error(`holder exited ${code}`)));
    });
    assert.throws(() => open(dir), new RegExp(`locked by pid ${child.pid} `));
    child.stdin!.end();
    await new Promise((r) => child.on("exit", r));
    open(dir).wal.close();
  });

  test("stale locks are broken: dead pid, earlier boot, our pid from an earlier process", async () => {
    const dead = spawn(process.execPath, ["--version"]);
    await new Promise((r) => dead.on("exit", r));
    const boot = bootId();
    const cases: Record<string, unknown>[] = [
      { pid: dead.pid, host: hostname(), boot, started: 1, token: "t1" },
      { pid: process.pid, host: hostname(), boot, started: 1, token: "t2" },
    ];
    if (boot) cases.push({ pid: process.ppid, host: hostname(), boot: "another-boot", started: 1, token: "t3" });
    for (const lock of cases) {
      const dir = freshDir();
      writeLock(dir, lock);
      open(dir).wal.close();
      assert.equal(fs.existsSync(join(dir, "tubeway.lock")), false);
    }
  });

  test("locks from another host, or not ours at all, are never broken", () => {
    const other = freshDir();
    writeLock(other, { pid: 1, host: "elsewhere", boot: "", started: 1, token: "t" });
    assert.throws(() => open(other), /locked by pid 1 on elsewhere/);
    const notOurs = freshDir();
    fs.writeFileSync(join(notOurs, "tubeway.lock"), "");
    assert.throws(() => open(notOurs), /tubeway.lock exists and is not a tubeway lock/);
  });

  test("beanstalkd's lock file, held by no process, does not stop the start and is left alone", () => {
    const dir = freshDir();
    fs.writeFileSync(join(dir, "lock"), "", { mode: 0o600 }); // what a stopped beanstalkd leaves behind
    open(dir).wal.close();
    assert.equal(fs.readFileSync(join(dir, "lock"), "utf8"), "");
  });

  test("an earlier tubeway's lock in DIR/lock is honoured while its process lives", () => {
    const dir = freshDir();
    writeLock(dir, { pid: process.ppid, host: hostname(), boot: bootId(), started: 1, token: "old" }, "lock");
    assert.throws(() => open(dir), new RegExp(`locked by pid ${process.ppid} .*\\(an earlier tubeway; remove`));
  });

  test("/proc/locks: a POSIX write lock on the file's device and inode names its holder", () => {
    const dir = freshDir();
    const lock = join(dir, "lock");
    fs.writeFileSync(lock, "");
    const st = fs.statSync(lock, { bigint: true });
    const major = ((st.dev >> 8n) & 0xfffn).toString(16).padStart(2, "0");
    const minor = (st.dev & 0xffn).toString(16).padStart(2, "0");
    const table = join(dir, "locks");
    const write = (lines: string[]) => fs.writeFileSync(table, lines.join("\n") + "\n");
    write([
      `1: POSIX  ADVISORY  READ 11 ${major}:${minor}:${st.ino} 0 EOF`,
      `2: FLOCK  ADVISORY  WRITE 12 ${major}:${minor}:${st.ino} 0 EOF`,
      `3: POSIX  ADVISORY  WRITE 13 ${major}:${minor}:${st.ino + 1n} 0 EOF`,
      `4: POSIX  ADVISORY  WRITE 14 ff:ff:${st.ino} 0 EOF`,
    ]);
    assert.equal(fcntlWriteLockHolder(lock, table), undefined, "read locks, flocks, other files are not it");
    write([`5: POSIX  ADVISORY  WRITE 4242 ${major}:${minor}:${st.ino} 0 EOF`]);
    assert.equal(fcntlWriteLockHolder(lock, table), 4242);
    assert.equal(fcntlWriteLockHolder(lock, join(dir, "missing")), "unknown");
    assert.equal(fcntlWriteLockHolder(join(dir, "no-lock"), table), undefined);
  });

  test("a missing directory is a clear error", () => {
    assert.throws(() => open(join(base, "missing")), /^WalOpenError|failed to lock wal dir .*: no such directory$/);
  });
});
