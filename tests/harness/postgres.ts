// A throwaway PostgreSQL cluster for the tests of the --pg engine: initdb in a temp dir,
// pg_ctl start on a free 127.0.0.1 port, stopped and removed at the end. PostgreSQL
// refuses to run as root, so as root the cluster belongs to the `postgres` user that
// Debian's package creates (runuser); as any other user, to that user. Durable as in
// production: fsync and synchronous_commit on.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { skipUnless, which } from "./paths.ts";

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

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** The `skip` option for a test that needs PostgreSQL (fails instead under TUBEWAY_REQUIRE_ALL=1). */
export const skipWithoutPostgres = skipUnless(
  PG_BIN !== undefined && (!isRoot || postgresUser() !== undefined),
  "PostgreSQL is not installed (apt-get install -y postgresql)",
);

/** uid and gid of the `postgres` user, from /etc/passwd. */
function postgresUser(): { uid: number; gid: number } | undefined {
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
  const dir = mkdtempSync(join(tmpdir(), "tubeway-pg-"));
  if (isRoot) {
    const u = postgresUser();
    if (!u) throw new Error("no `postgres` user to run PostgreSQL as (it refuses to run as root)");
    chownSync(dir, u.uid, u.gid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, "data");
  const logFile = join(dir, "log");
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
