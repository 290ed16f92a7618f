// Files over node:fs, which Deno and Bun both provide, so one implementation serves
// both runtimes. The files themselves (synchronous appends, fsync off the event loop,
// preallocation) are adapters/append_file_node.ts.
//
// The directory lock. beanstalkd holds an fcntl lock on DIR/lock; node:fs has no
// fcntl/flock, and Deno's FsFile.lock has no Bun equivalent, so we use a lock FILE,
// DIR/tubeway.lock (DIR/lock is beanstalkd's, and earlier tubeway releases'):
//   * It is created atomically with its full content: written to a private temp
//     name, then link(2)ed to DIR/tubeway.lock, which fails with EEXIST when a lock exists.
//     So a lock file is never seen half-written.
//   * It holds {pid, host, boot, started, token}. A lock is stale (and is broken)
//     only when it was written on this host and either the machine has rebooted
//     since (Linux boot_id differs), or its pid no longer exists (kill(pid, 0) gives
//     ESRCH), or its pid is ours but `started` (performance.timeOrigin) is not ours,
//     i.e. a previous process that happened to get our pid.
//   * A lock from another host (a shared or container volume), or one we cannot
//     parse, is never broken: we refuse to start and the message names the file to
//     remove.
//   * beanstalkd's DIR/lock: a running beanstalkd holds an fcntl write lock on it.
//     JavaScript has no fcntl, but Linux lists every POSIX lock in /proc/locks with
//     the file's device and inode, so we refuse to start when a WRITE lock there is
//     on that file's inode (dev compared too), naming the holder's pid. A lock file
//     that no process holds (beanstalkd stopped or crashed) does not stop us. Where
//     /proc/locks cannot be read (not Linux) we cannot tell, say so, and go on.
//     An earlier tubeway release's lock (our JSON in DIR/lock) is honoured as above.
//     Limit: beanstalkd started after this check (on a directory we already use) is
//     not stopped by our lock file, which it does not know.
// Known limits: a dead holder's pid reused by an unrelated live process on the same
// boot keeps the lock held (the message says what to remove); and two servers
// breaking the same stale lock in the same instant are resolved by re-reading the
// lock after taking it, which narrows but does not close that race.
import * as fs from "node:fs";
import { hostname } from "node:os";
import process from "node:process";
import type { DirLock, Files } from "../core/files.ts";
import { errorCode, joinPath } from "../core/files.ts";
import { NodeAppendFile, Spares } from "./append_file_node.ts";

interface LockInfo {
  pid: number;
  host: string;
  boot: string;
  started: number;
  token: string;
}

function bootId(): string {
  try {
    return fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "";
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errorCode(e) !== "ESRCH";
  }
}

function readLock(path: string): LockInfo | undefined {
  try {
    const v = JSON.parse(fs.readFileSync(path, "utf8")) as Partial<LockInfo>;
    if (
      typeof v.pid === "number" && typeof v.host === "string" && typeof v.boot === "string" &&
      typeof v.started === "number" && typeof v.token === "string"
    ) return v as LockInfo;
  } catch {
    // unreadable or not ours
  }
  return undefined;
}

function isStale(h: LockInfo, me: LockInfo): boolean {
  if (h.host !== me.host) return false;
  if (h.boot !== "" && me.boot !== "" && h.boot !== me.boot) return true;
  if (h.pid === me.pid) return h.started !== me.started;
  return !pidAlive(h.pid);
}

function lockError(dir: string, why: string): Error {
  return new Error(`failed to lock wal dir ${dir}: ${why}`);
}

/**
 * The pid holding a POSIX (fcntl) write lock on `path`, per /proc/locks; undefined
 * when none does; "unknown" when /proc/locks cannot be read. Lines look like
 * `1: POSIX  ADVISORY  WRITE 4242 fe:00:2148096 0 EOF` (major:minor in hex).
 */
export function fcntlWriteLockHolder(path: string, procLocks = "/proc/locks"): number | undefined | "unknown" {
  let text: string;
  let st: fs.BigIntStats;
  try {
    st = fs.statSync(path, { bigint: true });
  } catch {
    return undefined;
  }
  try {
    text = fs.readFileSync(procLocks, "utf8");
  } catch {
    return "unknown";
  }
  // Linux's dev_t encoding (new_encode_dev)
  const major = ((st.dev >> 8n) & 0xfffn) | ((st.dev >> 32n) & ~0xfffn);
  const minor = (st.dev & 0xffn) | ((st.dev >> 12n) & ~0xffn);
  for (const line of text.split("\n")) {
    const m = /^\d+:\s+(?:->\s+)?(?:POSIX|OFDLCK)\s+\S+\s+WRITE\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (!m || BigInt(m[4]!) !== st.ino) continue;
    if (BigInt(`0x${m[2]}`) === major && BigInt(`0x${m[3]}`) === minor) return Number(m[1]);
  }
  return undefined;
}

/** Whether DIR/lock (beanstalkd's, or an earlier tubeway's) is held; why, or undefined. */
function foreignLock(dir: string, me: LockInfo): { held?: string; note?: string } {
  const path = joinPath(dir, "lock");
  if (!fs.existsSync(path)) return {};
  const old = readLock(path);
  if (old !== undefined) {
    return isStale(old, me) ? {} : {
      held: `locked by pid ${old.pid} on ${old.host} (an earlier tubeway; remove ${path} if that process is gone)`,
    };
  }
  const pid = fcntlWriteLockHolder(path);
  if (pid === "unknown") {
    return { note: `cannot tell whether a beanstalkd holds ${path} (no /proc/locks); make sure it is stopped` };
  }
  return pid === undefined ? {} : { held: `${path} is locked by a running beanstalkd (pid ${pid}); stop it first` };
}

function takeLock(dir: string): DirLock {
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (e) {
    throw lockError(dir, errorCode(e) === "ENOENT" ? "no such directory" : String(e));
  }
  if (!st.isDirectory()) throw lockError(dir, "not a directory");
  const path = joinPath(dir, "tubeway.lock");
  const me: LockInfo = {
    pid: process.pid,
    host: hostname(),
    boot: bootId(),
    started: performance.timeOrigin,
    token: `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`,
  };
  const foreign = foreignLock(dir, me);
  if (foreign.held) throw lockError(dir, foreign.held);
  const notes = foreign.note ? [foreign.note] : [];
  const temp = joinPath(dir, `tubeway.lock.${me.token}`);
  fs.writeFileSync(temp, JSON.stringify(me) + "\n", { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        fs.linkSync(temp, path);
      } catch (e) {
        if (errorCode(e) !== "EEXIST") throw lockError(dir, String(e));
        const holder = readLock(path);
        if (holder === undefined) {
          throw lockError(dir, `${path} exists and is not a tubeway lock; remove it if no server uses ${dir}`);
        }
        if (!isStale(holder, me)) {
          throw lockError(
            dir,
            `locked by pid ${holder.pid} on ${holder.host} (remove ${path} if that process is not a tubeway server)`,
          );
        }
        breakStaleLock(path, holder);
        continue;
      }
      if (readLock(path)?.token !== me.token) throw lockError(dir, "lost a race for the lock");
      return {
        notes,
        release() {
          if (readLock(path)?.token === me.token) fs.unlinkSync(path);
        },
      };
    }
    throw lockError(dir, "lock keeps reappearing");
  } finally {
    fs.unlinkSync(temp);
  }
}

/** Move the stale lock aside; if what we moved turns out to be a fresh lock, put it back. */
function breakStaleLock(path: string, stale: LockInfo): void {
  const aside = `${path}.stale.${Math.random().toString(36).slice(2)}`;
  try {
    fs.renameSync(path, aside);
  } catch (e) {
    if (errorCode(e) === "ENOENT") return;
    throw e;
  }
  if (readLock(aside)?.token !== stale.token) {
    try {
      fs.linkSync(aside, path);
    } catch {
      // someone else holds it now; our link attempt will report that
    }
  }
  fs.unlinkSync(aside);
}

/**
 * node:fs-backed Files for the real server. The files it opens with preallocated zero
 * blocks give their zero tails back to each other when the disk is full: use one for all
 * the files of a log.
 */
export function nodeFiles(): Files {
  const spares = new Spares();
  return {
    list(dir) {
      return fs.readdirSync(dir);
    },
    read(path) {
      const b = fs.readFileSync(path);
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    },
    open(path, mode, preallocate) {
      // not O_APPEND: records go to positions inside preallocated blocks (append_file_node.ts)
      const { O_CREAT, O_EXCL, O_WRONLY } = fs.constants;
      const fd = fs.openSync(path, O_WRONLY | O_CREAT | (mode === "new" ? O_EXCL : 0), 0o600);
      return new NodeAppendFile(path, fd, spares, preallocate);
    },
    unlink(path) {
      fs.unlinkSync(path);
    },
    rename(from, to) {
      fs.renameSync(from, to);
    },
    syncDir(dir) {
      return new Promise((resolve) => {
        let fd: number;
        try {
          fd = fs.openSync(dir, "r");
        } catch {
          resolve(); // best effort: some platforms cannot open a directory
          return;
        }
        fs.fsync(fd, () => {
          // EINVAL/EISDIR on platforms without directory fsync: nothing more to do
          fs.close(fd, () => resolve());
        });
      });
    },
    syncDirNow(dir) {
      let fd: number;
      try {
        fd = fs.openSync(dir, "r");
      } catch {
        return; // best effort, as syncDir
      }
      try {
        fs.fsyncSync(fd);
      } catch {
        // EINVAL/EISDIR on platforms without directory fsync: nothing more to do
      } finally {
        fs.closeSync(fd);
      }
    },
    lock: takeLock,
  };
}
