// A throwaway PostgreSQL cluster for the tests of the --pg engine and the bench
// (BENCH_PG_URL=auto): initdb in a temp dir,
// pg_ctl start on a free 127.0.0.1 port, stopped and removed at the end. PostgreSQL
// refuses to run as root, so as root the cluster belongs to the `postgres` user that
// Debian's package creates (runuser); as any other user, to that user. Durable as in
// production: fsync and synchronous_commit on. A cluster whose maker was killed (no hook
// of its ran) is stopped and removed when the next one is made.
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, which } from "./machine.ts";

/** Debian's versioned server binaries, newest first; else initdb and pg_ctl on PATH. */
function pgBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) {
    const dir = join(root, v, "bin");
    if (existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  const initdb = which("initdb");
  return initdb && which("pg_ctl") ? initdb.slice(0, initdb.lastIndexOf("/")) : undefined;
}

/** Where initdb and pg_ctl are, or undefined when PostgreSQL is not installed. */
export const PG_BIN = pgBin();

export const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** uid and gid of the `postgres` user, from /etc/passwd. */
export function postgresUser(): { uid: number; gid: number } | undefined {
  try {
    const line = execFileSync("getent", ["passwd", "postgres"], { encoding: "utf8" }).trim();
    const f = line.split(":");
    return { uid: Number(f[2]), gid: Number(f[3]) };
  } catch {
    return undefined;
  }
}

/** A running throwaway cluster. */
export interface Postgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust authentication, local only). */
  url: string;
  port: number;
  /** The server's log so far (for failure messages). */
  log(): string;
  /** Stop it (fast shutdown) and remove its directory. */
  stop(): void;
}

function run(argv: string[]): { ok: boolean; out: string } {
  const [cmd, ...args] = isRoot ? ["runuser", "-u", "postgres", "--", ...argv] : argv;
  const r = spawnSync(cmd!, args, { encoding: "utf8", timeout: 60_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}

/** initdb + pg_ctl start on a free port; throws with the tools' output when either fails. */
export async function startPostgres(): Promise<Postgres> {
  if (!PG_BIN) throw new Error("PostgreSQL is not installed (apt-get install -y postgresql)");
  const { dir, data, logFile } = clusterDir();
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  const init = run([join(PG_BIN, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  if (!init.ok) {
    cleanup();
    throw new Error(`initdb failed:\n${init.out}`);
  }
  const port = await freePort();
  const opts = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=on",
    "-c synchronous_commit=on",
    "-c max_connections=200",
  ].join(" ");
  const start = run([join(PG_BIN, "pg_ctl"), "-D", data, "-o", opts, "-l", logFile, "-w", "-t", "60", "start"]);
  const log = () => {
    try {
      return execFileSync("cat", [logFile], { encoding: "utf8" });
    } catch {
      return "";
    }
  };
  if (!start.ok) {
    const out = `${start.out}\n${log()}`;
    cleanup();
    throw new Error(`pg_ctl start failed:\n${out}`);
  }
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    log,
    stop() {
      if (stopped) return;
      stopped = true;
      run([join(PG_BIN, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"]);
      cleanup();
    },
  };
}

let shared: Promise<Postgres> | undefined;
let users = 0;

/**
 * The cluster of this test process, started by the first user and stopped when the
 * last one lets go (each user uses its own --pg-schema): servers started one after the
 * other, or several at once, share one cluster, and nothing is left running however
 * the test file ends its hooks.
 */
export async function acquirePostgres(): Promise<{ pg: Postgres; release: () => void }> {
  users++;
  shared ??= startPostgres();
  let pg: Postgres;
  try {
    pg = await shared;
  } catch (e) {
    if (--users === 0) shared = undefined;
    throw e;
  }
  let released = false;
  return {
    pg,
    release: () => {
      if (released) return;
      released = true;
      if (--users === 0) {
        shared = undefined;
        pg.stop();
      }
    },
  };
}

let schemas = 0;
/** A schema name no other test of this process uses. */
export function uniqueSchema(prefix = "t"): string {
  return `${prefix}_${process.pid}_${++schemas}`;
}

/** A throwaway cluster whose server a test stops, starts, restarts, kills and promotes. */
export interface ControlledPostgres extends Postgres {
  /** `pg_ctl restart -m fast` (waits until it accepts connections again). */
  restart(): void;
  /** `pg_ctl stop -m fast`: down until resume(); the data stays. */
  halt(): void;
  /** `pg_ctl start` after halt(). */
  resume(): void;
  /** SIGKILL to the postmaster and every backend at once, as if its machine died. */
  kill9(): void;
  /** `pg_ctl promote`: a standby becomes a primary (waits until it is one). */
  promote(): void;
  /** One statement through psql; its rows as `a|b` lines. Throws with psql's output when it fails. */
  psql(sql: string): string;
}

interface ClusterDirs {
  dir: string;
  data: string;
  logFile: string;
}

/** Beside a cluster's data dir: the pid of the process that made it. */
const OWNER = "owner";

/** Whether process `pid` is running (as any user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

/**
 * Stop and remove the clusters whose maker is gone: a test process killed by a timeout
 * or by hand, a bench stopped with SIGKILL. Left running, each keeps a postmaster and its
 * memory until the machine restarts. A cluster of a live process, or without an owner
 * file (one being made, or made by an older version), is left alone.
 */
export function reapOrphans(): string[] {
  const reaped: string[] = [];
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith("tubeway-pg-")) continue;
    const dir = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(dir, OWNER), "utf8"));
    } catch {
      continue;
    }
    if (!(owner > 0) || alive(owner)) continue;
    try {
      if (PG_BIN && existsSync(join(dir, "data", "postmaster.pid"))) {
        run([join(PG_BIN, "pg_ctl"), "-D", join(dir, "data"), "-m", "immediate", "-w", "stop"]);
      }
      rmSync(dir, { recursive: true, force: true });
      reaped.push(dir);
    } catch {
      // another user's, most likely: not ours to remove, and no reason not to make a new one
    }
  }
  return reaped;
}

/** The postgres user's temp dir with a data dir, or the tools' output. */
function clusterDir(): ClusterDirs {
  reapOrphans();
  const dir = mkdtempSync(join(tmpdir(), "tubeway-pg-"));
  writeFileSync(join(dir, OWNER), String(process.pid));
  if (isRoot) {
    const u = postgresUser();
    if (!u) throw new Error("no `postgres` user to run PostgreSQL as (it refuses to run as root)");
    chownSync(dir, u.uid, u.gid);
  }
  chmodSync(dir, 0o700);
  return { dir, data: join(dir, "data"), logFile: join(dir, "log") };
}

/** pg_ctl start on `port` with `settings` (-c name=value) besides the usual ones. */
function controlled(d: ClusterDirs, port: number, settings: string[]): ControlledPostgres {
  const bin = PG_BIN!;
  const opts = [
    `-p ${port}`,
    `-k ${d.dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=on",
    "-c synchronous_commit=on",
    "-c max_connections=200",
    ...settings.map((s) => `-c ${s}`),
  ].join(" ");
  const log = () => {
    try {
      return execFileSync("cat", [d.logFile], { encoding: "utf8" });
    } catch {
      return "";
    }
  };
  const ctl = (...args: string[]) => {
    const r = run([join(bin, "pg_ctl"), "-D", d.data, ...args]);
    if (!r.ok) throw new Error(`pg_ctl ${args.join(" ")} failed:\n${r.out}\n${log()}`);
  };
  const start = () => ctl("-o", opts, "-l", d.logFile, "-w", "-t", "60", "start");
  const pids = (): number[] => {
    try {
      const main = Number(readFileSync(join(d.data, "postmaster.pid"), "utf8").split("\n")[0]);
      const kids = spawnSync("pgrep", ["-P", String(main)], { encoding: "utf8" }).stdout ?? "";
      return [main, ...kids.split("\n").filter((l) => l.trim() !== "").map(Number)];
    } catch {
      return [];
    }
  };
  let stopped = false;
  try {
    start();
  } catch (e) {
    // pg_ctl may give up waiting on a busy machine while the server goes on starting
    run([join(bin, "pg_ctl"), "-D", d.data, "-m", "immediate", "-w", "stop"]);
    throw e;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    log,
    restart: () => ctl("-o", opts, "-l", d.logFile, "-m", "fast", "-w", "-t", "60", "restart"),
    halt: () => ctl("-m", "fast", "-w", "stop"),
    resume: start,
    kill9: () => {
      for (const pid of pids()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch { /* gone already */ }
      }
    },
    promote: () => ctl("-w", "-t", "60", "promote"),
    psql: (sql) => {
      const r = run([join(bin, "psql"), "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-Atc", sql]);
      if (!r.ok) throw new Error(`psql failed: ${r.out}`);
      return r.out.trim();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      run([join(bin, "pg_ctl"), "-D", d.data, "-m", "immediate", "-w", "stop"]);
      for (const pid of pids()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch { /* gone already */ }
      }
      rmSync(d.dir, { recursive: true, force: true });
    },
  };
}

/** initdb + pg_ctl start on a free port, with controls (restart, halt, kill9) for the test. */
export async function startControlledPostgres(settings: string[] = []): Promise<ControlledPostgres> {
  if (!PG_BIN) throw new Error("PostgreSQL is not installed (apt-get install -y postgresql)");
  const d = clusterDir();
  try {
    const init = run([join(PG_BIN, "initdb"), "-D", d.data, "-A", "trust", "-U", "postgres", "--no-sync"]);
    if (!init.ok) throw new Error(`initdb failed:\n${init.out}`);
    return controlled(d, await freePort(), settings);
  } catch (e) {
    rmSync(d.dir, { recursive: true, force: true });
    throw e;
  }
}

/** A primary and its synchronous streaming standby (every commit acknowledged is on both). */
export interface ReplicatedPostgres {
  primary: ControlledPostgres;
  standby: ControlledPostgres;
  /** Both hosts, primary first, with target_session_attrs=read-write. */
  url: string;
  /** Stop both and remove their directories. */
  stop(): void;
}

/**
 * A primary (synchronous_standby_names names the standby, so a COMMIT returns only once
 * the standby has the WAL) and a standby made by `pg_basebackup -R`, streaming; resolves
 * when the standby is attached as synchronous.
 */
export async function startReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const primary = await startControlledPostgres(["synchronous_standby_names=standby1", "wal_level=replica"]);
  let standby: ControlledPostgres | undefined;
  try {
    const d = clusterDir();
    try {
      const base = run([
        join(PG_BIN!, "pg_basebackup"),
        ...["-D", d.data, "-R", "-X", "stream", "-c", "fast", "--no-sync"],
        ...["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres"],
      ]);
      if (!base.ok) throw new Error(`pg_basebackup failed:\n${base.out}`);
      // cluster_name is the standby's application_name, which synchronous_standby_names names
      standby = controlled(d, await freePort(), ["cluster_name=standby1", "hot_standby=on"]);
    } catch (e) {
      rmSync(d.dir, { recursive: true, force: true });
      throw e;
    }
    const deadline = Date.now() + 30_000;
    while (primary.psql("select sync_state from pg_stat_replication") !== "sync") {
      if (Date.now() > deadline) throw new Error(`the standby did not become synchronous:\n${standby.log()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (e) {
    standby?.stop();
    primary.stop();
    throw e;
  }
  const s = standby;
  return {
    primary,
    standby: s,
    url: `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${s.port}/postgres?target_session_attrs=read-write`,
    stop() {
      s.stop();
      primary.stop();
    },
  };
}
