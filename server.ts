// The tubeway executable: flags -> Config, listen on Deno or Bun, signals, logs, exit
// codes. Everything else lives in core/ and protocol/.
//
//   deno run --allow-net --allow-read --allow-write --allow-env --allow-sys server.ts -p 11300
//   bun run server.ts -p 11300
import process from "node:process";
import { closeSync, existsSync, lstatSync, openSync, readFileSync, unlinkSync } from "node:fs";
import { type Config, HTTP_TOKEN_ENV, parseConfig, PG_URL_ENV, type TlsConfig, USAGE } from "./front/config.ts";
import { createLogger, type Logger } from "./core/log.ts";
import { VERSION } from "./core/version.ts";
import {
  formatAddress,
  Listeners,
  listenFailure,
  type Listening,
  runtimeLabel,
  type TlsMaterial,
} from "./adapters/listen.ts";
import { loadTls } from "./front/tls_files.ts";
import { type Opened, openService, WalOpenError } from "./front/open.ts";
import { openPgService, PgOpenError } from "./front/open_pg.ts";
import { pgTarget } from "./adapters/pg_client.ts";
import { serveHttp } from "./adapters/http.ts";
import { httpHandler } from "./protocol/http/handler.ts";
import type { Service } from "./protocol/service.ts";
import { migrateCommand } from "./front/migrate_cli.ts";
import { exportCommand } from "./front/export_cli.ts";

/** beanstalkd's prefix for usage errors, which keep its exact wording (scripts match them). */
const PREFIX = "tubeway";

/** Exit code when a --tls-cert/--tls-key/--tls-ca file cannot be used (sysexits' EX_CONFIG). */
const EXIT_TLS_FILES = 78;

/** Exit code when --pg's database cannot be used at start (sysexits' EX_UNAVAILABLE). */
const EXIT_PG_UNAVAILABLE = 69;

/** Log the cause and exit: a startup failure after the flags were understood. */
type Fail = (message: string, code: number) => never;

/** 1.12 replaces a stale UNIX socket file, and refuses to touch any other file. */
function prepareUnixPath(path: string, log: Logger, fail: Fail): void {
  if (Buffer.byteLength(path) > 107) fail(`socket path too long: ${path}`, 111);
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) fail(`cannot listen on ${path}: another file already exists in the given path`, 111);
  log.warn("removing existing local socket to replace it", { path });
  unlinkSync(path);
}

/** The C library's words for the errors a switch of user meets (each runtime words them its own way). */
const STRERROR: Record<string, string> = { EPERM: "Operation not permitted", EINVAL: "Invalid argument" };
const strerror = (e: unknown) => STRERROR[(e as { code?: string })?.code ?? ""] ?? (e as Error)?.message ?? String(e);

/**
 * -u USER: the user's uid and primary gid, then setgid + setuid, as 1.12's su() does,
 * with its words and exit codes: 32 when the user database cannot be read, 33 for no
 * such user, 34 when setgid or setuid fails.
 */
function becomeUser(user: string, fail: Fail): void {
  const p = process as unknown as { setuid?: (id: number) => void; setgid?: (id: number) => void };
  if (!p.setuid || !p.setgid) fail(`-u: this runtime cannot change user; run tubeway as ${user} instead`, 34);
  let entry: string[] | undefined;
  try {
    entry = readFileSync("/etc/passwd", "utf8").split("\n").map((l) => l.split(":")).find((f) => f[0] === user);
  } catch (e) {
    fail(`getpwnam("${user}"): ${strerror(e)}`, 32);
  }
  if (!entry || entry.length < 4) fail(`getpwnam("${user}"): no such user`, 33);
  const uid = Number(entry[2]);
  const gid = Number(entry[3]);
  try {
    p.setgid(gid);
  } catch (e) {
    fail(`setgid(${gid} "${user}"): ${strerror(e)}`, 34);
  }
  try {
    p.setuid(uid);
  } catch (e) {
    fail(`setuid(${uid} "${user}"): ${strerror(e)}`, 34);
  }
}

/**
 * After -u: the log was opened as root, but every new log file is created as the
 * user. Create and remove a probe file now, so that a directory the user cannot write
 * stops the server at startup (1.12 opens its log after the switch and exits 10)
 * instead of failing every put at the first new log file.
 */
function checkWritable(dir: string, user: string, fail: Fail): void {
  const probe = `${dir}/.tubeway-probe-${process.pid}`;
  try {
    closeSync(openSync(probe, "wx"));
    unlinkSync(probe);
  } catch (e) {
    fail(`failed to lock wal dir ${dir}: not writable as ${user}: ${(e as Error).message ?? e}`, 10);
  }
}

/**
 * An environment variable, or undefined when Deno runs without --allow-env (it cannot
 * then see a socket systemd passes; README says so: socket activation needs --allow-env).
 */
function envVar(name: string): string | undefined {
  try {
    return process.env[name];
  } catch {
    return undefined;
  }
}

/** Deno ignores process.on() for SIGUSR1 (the process dies of it), so use its own API there. */
function onSignal(signal: "SIGTERM" | "SIGINT" | "SIGUSR1", handler: () => void): void {
  if ("Deno" in globalThis) Deno.addSignalListener(signal, handler);
  else process.on(signal, handler);
}

/** The flags as a Config; -h, -v and usage errors print and exit here. */
function configOrExit(args: string[]): Config {
  const env = Object.fromEntries(
    [HTTP_TOKEN_ENV, PG_URL_ENV, "LISTEN_FDS", "LISTEN_PID"].map((name) => [name, envVar(name)]),
  );
  const parsed = parseConfig(args, env, process.pid);
  switch (parsed.kind) {
    case "help":
      process.stderr.write(USAGE);
      return process.exit(0);
    case "version":
      console.log(`tubeway ${VERSION} (beanstalkd 1.12 protocol)`);
      return process.exit(0);
    case "error":
      console.error(`${PREFIX}: ${parsed.message}`);
      if (parsed.usage) process.stderr.write(USAGE);
      return process.exit(parsed.exitCode);
  }
  return parsed.config;
}

/** The --tls-* files, read now (exit 78 when they cannot be used). */
function tlsOrFail(files: TlsConfig, log: Logger, fail: Fail): TlsMaterial {
  const loaded = loadTls(files);
  if (!loaded.ok) fail(loaded.error, EXIT_TLS_FILES);
  for (const w of loaded.warnings) log.warn(w);
  return loaded.material;
}

/** The service on its engine, with a beanstalkd directory's jobs imported (exit 10 or 69 when it cannot be). */
async function openOrFail(config: Config, log: Logger, fail: Fail): Promise<Opened> {
  let opened: Opened;
  try {
    const how = {
      logWal: (m: string) => log.warn(m),
      log: (l: string) => log.info(l),
      error: (l: string) => log.error(l),
    };
    opened = config.pg ? await openPgService({ ...config, pg: config.pg }, how) : openService(config, how);
  } catch (e) {
    if (e instanceof WalOpenError) fail(e.message, 10);
    if (e instanceof PgOpenError) fail(e.message, EXIT_PG_UNAVAILABLE);
    throw e;
  }
  // a directory beanstalkd wrote: its jobs come over once, on disk before anything is served
  const importFailed = await opened.imported;
  if (importFailed !== undefined) fail(importFailed, 10);
  return opened;
}

/** What serves: set as each is bound, so that a signal meanwhile closes what there is. */
interface Served {
  listening?: Listening;
  tlsListening?: Listening;
  http?: Awaited<ReturnType<typeof serveHttp>>;
}

/** SIGTERM and SIGINT stop the server cleanly; SIGUSR1 drains it. */
async function onSignals(config: Config, log: Logger, opened: Opened, served: Served): Promise<void> {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (config.verbose > 0) log.info(`${signal}: shutting down`);
    served.listening?.close();
    served.tlsListening?.close();
    void served.http?.close();
    opened.close();
    // --pg: let the turns under way commit and the lease end (bounded: a dead database must not hold us).
    const closed = opened.closed?.() ?? Promise.resolve();
    void Promise.race([closed, new Promise((r) => setTimeout(r, 3000))]).then(() => process.exit(0));
  };
  onSignal("SIGTERM", () => stop("SIGTERM"));
  onSignal("SIGINT", () => stop("SIGINT"));
  const closeInspector = "Deno" in globalThis
    ? (await import("./adapters/deno_inspector.ts")).keepInspectorShut()
    : () => {};
  onSignal("SIGUSR1", () => {
    closeInspector();
    if (config.verbose > 0) log.info("SIGUSR1: entering drain mode");
    opened.service.drain();
  });
}

/** Bind the protocol's listeners and the HTTP side port (exit 111 when one cannot be); the -l/-p one. */
async function serve(served: Served, svc: Service, config: Config, tls: TlsMaterial | undefined, fail: Fail) {
  // Without --tls, the -l/-p listener itself is the TLS one (see TlsConfig.listen).
  const tlsBeside = config.tls?.listen;
  const listeners = new Listeners();
  let listening: Listening;
  try {
    listening = served.listening = await listeners.listen(svc, config.listen, { tls: tlsBeside ? undefined : tls });
  } catch (e) {
    fail(`cannot listen on ${(e as Error).message ?? e}`, 111);
  }
  if (tlsBeside) {
    try {
      served.tlsListening = await listeners.listen(svc, tlsBeside, { tls });
    } catch (e) {
      fail(`cannot listen for TLS on ${(e as Error).message ?? e}`, 111);
    }
  }
  if (config.http) {
    // bound before -u drops privileges, like the protocol port
    try {
      served.http = await serveHttp(httpHandler(svc, { token: config.httpToken, version: VERSION }), config.http);
    } catch (e) {
      fail(`cannot listen on --http ${await listenFailure(config.http, e)}`, 111);
    }
  }
  for (const l of [served.listening, served.tlsListening]) {
    l?.failed.then((e) => fail(`listener failed, no new clients can connect: ${e.message}`, 1));
  }
  return listening;
}

/** -V's `listening` line: where and how the server serves. */
function logListening(log: Logger, config: Config, tls: TlsMaterial | undefined, listening: Listening, served: Served) {
  const tlsBeside = config.tls?.listen;
  const plain = tls && !tlsBeside ? undefined : listening.address;
  const secure = served.tlsListening?.address ?? (tls ? listening.address : undefined);
  const http = served.http;
  log.info("listening", {
    plain: plain ? formatAddress(plain) : "off",
    tls: secure ? formatAddress(secure) : "off",
    "client-certs": tls?.ca !== undefined ? "required" : undefined,
    // only with --http, so the line stays as it was without it
    http: http ? formatAddress(http.address) : undefined,
    "http-actions": http ? (config.httpToken ? "token" : "off") : undefined,
    runtime: runtimeLabel(),
    binlog: config.binlogDir ?? "off",
    pg: config.pg ? `${pgTarget(config.pg.url || undefined)} schema ${config.pg.schema}` : undefined,
    fsync: config.binlogDir === undefined
      ? undefined
      : config.fsyncMs === "never"
      ? "never"
      : config.fsyncMs === 0
      ? "always"
      : `${config.fsyncMs}ms`,
    "log-format": config.logFormat,
    pid: process.pid,
  });
}

async function main(args: string[]): Promise<void> {
  if (args[0] === "export-binlog") exportCommand(args.slice(1));
  if (args[0] === "migrate") await migrateCommand(args.slice(1));
  const config = configOrExit(args);
  const log = createLogger({
    format: config.logFormat,
    now: () => Date.now(),
    out: (l) => console.log(l),
    err: (l) => console.error(l),
  });
  const fail: Fail = (message, code) => {
    log.error(message, { exit: code });
    process.exit(code);
  };
  for (const w of config.warnings) log.warn(w);
  const tls = config.tls ? tlsOrFail(config.tls, log, fail) : undefined;
  const opened = await openOrFail(config, log, fail);
  if ("path" in config.listen) prepareUnixPath(config.listen.path, log, fail);
  const served: Served = {};
  await onSignals(config, log, opened, served);
  const listening = await serve(served, opened.service, config, tls, fail);
  if (config.verbose > 0) logListening(log, config, tls, listening, served);
  if (config.user) {
    becomeUser(config.user, fail);
    if (config.binlogDir !== undefined) checkWritable(config.binlogDir, config.user, fail);
  }
  if (config.verbose > 0 && config.binlogDir !== undefined) log.info(`binlog: ${opened.recoveredJobs} jobs recovered`);
}

const args = "Deno" in globalThis ? Deno.args : process.argv.slice(2);
await main(args);
