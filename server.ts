// The tubeway executable: flags -> Config, listen on Deno or Bun, signals, logs, exit
// codes. Everything else lives in core/ and protocol/.
//
//   deno run --allow-net --allow-read --allow-write --allow-env --allow-sys server.ts -p 11300
//   bun run server.ts -p 11300
import process from "node:process";
import { existsSync, lstatSync, readFileSync, unlinkSync } from "node:fs";
import { type Config, parseConfig, USAGE } from "./core/config.ts";
import { VERSION } from "./core/version.ts";
import { listen } from "./adapters/listen.ts";
import { WalOpenError } from "./core/binlog/binlog.ts";
import { type Opened, openService } from "./adapters/open.ts";

const PREFIX = "tubeway";

function fail(message: string, code: number): never {
  console.error(`${PREFIX}: ${message}`);
  process.exit(code);
}

/** 1.12 replaces a stale UNIX socket file, and refuses to touch any other file. */
function prepareUnixPath(path: string): void {
  if (Buffer.byteLength(path) > 107) fail(`socket path too long: ${path}`, 111);
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) fail("another file already exists in the given path", 111);
  console.error(`${PREFIX}: removing existing local socket to replace it`);
  unlinkSync(path);
}

/** -u USER: the user's uid and primary gid, then setgid + setuid, as 1.12 does (exit 32/33/34 on failure). */
function becomeUser(user: string): void {
  const p = process as unknown as { setuid?: (id: number) => void; setgid?: (id: number) => void };
  if (!p.setuid || !p.setgid) fail(`-u: this runtime cannot change user; run tubeway as ${user} instead`, 32);
  let entry: string[] | undefined;
  try {
    entry = readFileSync("/etc/passwd", "utf8").split("\n").map((l) => l.split(":")).find((f) => f[0] === user);
  } catch { /* no passwd file: reported below */ }
  if (!entry || entry.length < 4) fail(`getpwnam("${user}"): no such user`, 32);
  const uid = Number(entry[2]);
  const gid = Number(entry[3]);
  try {
    p.setgid(gid);
  } catch (e) {
    fail(`setgid(${gid}): ${e}`, 33);
  }
  try {
    p.setuid(uid);
  } catch (e) {
    fail(`setuid(${uid}): ${e}`, 34);
  }
}

/** Deno ignores process.on() for SIGUSR1 (the process dies of it), so use its own API there. */
function onSignal(signal: "SIGTERM" | "SIGINT" | "SIGUSR1", handler: () => void): void {
  if ("Deno" in globalThis) Deno.addSignalListener(signal, handler);
  else process.on(signal, handler);
}

async function main(args: string[]): Promise<void> {
  const parsed = parseConfig(args);
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
  const config: Config = parsed.config;
  for (const w of config.warnings) console.error(`${PREFIX}: ${w}`);

  if (config.verbose > 0) console.log(`pid ${process.pid}`);
  let opened: Opened;
  try {
    opened = openService(config, { logWal: (m) => console.error(`${PREFIX}: ${m}`) });
  } catch (e) {
    if (e instanceof WalOpenError) fail(e.message, 10);
    throw e;
  }
  const svc = opened.service;
  if ("path" in config.listen) prepareUnixPath(config.listen.path);
  let listening: Awaited<ReturnType<typeof listen>> | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (config.verbose > 0) console.log(`${signal}: shutting down`);
    listening?.close();
    opened.close();
    process.exit(0);
  };
  onSignal("SIGTERM", () => stop("SIGTERM"));
  onSignal("SIGINT", () => stop("SIGINT"));
  onSignal("SIGUSR1", () => {
    if (config.verbose > 0) console.log("SIGUSR1: entering drain mode");
    svc.drain();
  });

  try {
    listening = await listen(svc, config.listen);
  } catch (e) {
    fail(`cannot listen on ${JSON.stringify(config.listen)}: ${(e as Error).message ?? e}`, 111);
  }
  if (config.verbose > 0) {
    const a = listening.address;
    console.log("path" in a ? `bind ${a.path}` : `bind ${a.host.includes(":") ? `[${a.host}]` : a.host}:${a.port}`);
  }
  if (config.user) becomeUser(config.user);
  if (config.verbose > 0 && config.binlogDir !== undefined) {
    console.log(`binlog: ${opened.recoveredJobs} jobs recovered`);
  }
}

const args = "Deno" in globalThis ? Deno.args : process.argv.slice(2);
await main(args);
