// Command-line flags -> Config, as a pure function. The flags are beanstalkd's, parsed
// the way it parses them (combined flags like -VFVukr, attached values like -z10,
// later flags override earlier ones); printing and exit codes belong to server.ts.
import type { LogFormat } from "../core/log.ts";
import { DEFAULT_BINLOG_SIZE, DEFAULT_FSYNC_MS } from "../core/memory/binlog/options.ts";
import { DEFAULT_LEASE_MS, DEFAULT_SCHEMA, DEFAULT_WAIT_MS } from "../core/pg/defaults.ts";
import { LONG_OPTIONS, optionTokens, scanFlags } from "./flag_scan.ts";

/** A server configuration, as beanstalkd's flags describe it. */
export interface Config {
  /**
   * TCP host/port, or a UNIX socket path (from -l unix:PATH), or a listening socket
   * inherited from systemd (socket activation: fd 3).
   */
  listen: { host: string; port: number } | { path: string } | { fd: number };
  /** -z BYTES: largest job body. */
  maxJobSize: number;
  /** -V count. */
  verbose: number;
  /** -b DIR: binlog directory; undefined keeps everything in memory. */
  binlogDir: string | undefined;
  /** -f MS: fsync at most every MS ms; "never" for -F. 0 = durable acks (see README). */
  fsyncMs: number | "never";
  /** -s BYTES: binlog file size. */
  binlogSize: number;
  /** -u USER */
  user: string | undefined;
  /** --http HOST:PORT: the side port (metrics, health, dashboard); undefined = none. */
  http: { host: string; port: number } | undefined;
  /** --http-token or TUBEWAY_HTTP_TOKEN: enables the dashboard's write actions. */
  httpToken: string | undefined;
  /** Messages to print before starting (beanstalkd's warnings). */
  warnings: string[];
  /** --tls-cert/--tls-key/--tls-ca/--tls: serve the protocol over TLS; undefined = plain only. */
  tls: TlsConfig | undefined;
  /** --log-format: "text" (one readable line per event) or "json" (one JSON object per line). */
  logFormat: LogFormat;
  /** --pg URL (or TUBEWAY_PG_URL): jobs in PostgreSQL instead of memory; undefined = in memory. */
  pg: PgConfig | undefined;
}

/** The PostgreSQL engine's settings (docs/pg.md). */
export interface PgConfig {
  /** postgres://user:password@host:port/db?sslmode=...; "" = the PG* environment variables alone. */
  url: string;
  /** --pg-schema: the schema of the tables, so that several queues can share a database. */
  schema: string;
  /** --pg-lease: ms a node's lease lasts unrenewed; then any node releases its reservations. */
  leaseMs: number;
  /** --pg-wait: ms a command waits for a database that is away, then answers INTERNAL_ERROR. */
  waitMs: number;
}

/** --log-format: how server.ts writes log lines (see core/log.ts). */
export type { LogFormat };

/** The TLS flags: files (read by server.ts) and where TLS is served. */
export interface TlsConfig {
  /** PEM certificate chain the server presents. */
  certFile: string;
  /** PEM private key of that certificate. */
  keyFile: string;
  /** PEM CA certificates: when set, clients must present a certificate signed by one (mTLS). */
  caFile: string | undefined;
  /**
   * --tls HOST:PORT: TLS on its own address, beside the plain -l/-p listener (the layout of
   * stunnel in front of beanstalkd). Undefined: the -l/-p listener itself speaks TLS only.
   */
  listen: { host: string; port: number } | undefined;
}

/** What the flags asked for: run with a Config, print the version or help, or an error to print. */
export type ParsedArgs =
  | { kind: "run"; config: Config }
  | { kind: "version" }
  | { kind: "help" }
  | { kind: "error"; message: string; exitCode: number; usage: boolean };

export const DEFAULT_PORT = 11300;
export const DEFAULT_MAX_JOB_SIZE = 65535;
export const MAX_JOB_SIZE_LIMIT = 1073741824;

/** The help text (-h), as beanstalkd prints it, with tubeway's name. */
export const USAGE = `Use: tubeway [OPTIONS]
     tubeway export-binlog -b DIR OUT   (jobs of DIR as a beanstalkd binlog in OUT)
     tubeway migrate -b DIR | --to DIR  (jobs of DIR into --pg, or back: migrate -h)

Options:
 -b DIR   write-ahead log directory
 -f MS    fsync at most once every MS milliseconds (default is 50ms);
          use -f0 for "always fsync" (replies wait for the fsync)
 -F       never fsync
 -l ADDR  listen on address (default is 0.0.0.0); unix:PATH for a UNIX socket
 -p PORT  listen on port (default is 11300)
 -u USER  become user and group
 -z BYTES set the maximum job size in bytes (default is 65535);
          max allowed is 1073741824 bytes
 -s BYTES set the size of each write-ahead log file (default is 10485760);
          will be rounded up to a multiple of 4096 bytes
 -v       show version information
 -V       increase verbosity
 -h       show this help

Long options (tubeway's own):
 --tls-cert FILE  serve the protocol over TLS with this PEM certificate chain
 --tls-key FILE   the PEM private key of --tls-cert
 --tls-ca FILE    require client certificates signed by these PEM CA certificates
 --tls HOST:PORT  serve TLS on HOST:PORT beside the plain -l/-p port (default: the
                  -l/-p port itself speaks TLS only)
 --log-format F   text (default) or json: one JSON object per log line
 --http HOST:PORT serve /metrics, /healthz, /readyz and the dashboard over HTTP
                  on HOST:PORT (nothing listens unless given)
 --http-token T   allow the dashboard's write actions to requests that send
                  Authorization: Bearer T (or set TUBEWAY_HTTP_TOKEN)
 --pg URL         keep the jobs in PostgreSQL (postgres://user@host:port/db), shared
                  by every node given the same URL and schema (or set TUBEWAY_PG_URL;
                  PG* variables fill in what the URL leaves out); not with -b
 --pg-schema S    the schema of tubeway's tables (default: tubeway)
 --pg-lease SEC   a node that stops renewing its lease for SEC seconds (default 5)
                  loses its reservations to the other nodes
 --pg-wait SEC    while the database is away (restart, failover), commands wait up
                  to SEC seconds for it, then answer INTERNAL_ERROR (default 5)
`;

/** The environment variable that supplies --http-token (for systemd units: keeps it out of ps). */
export const HTTP_TOKEN_ENV = "TUBEWAY_HTTP_TOKEN";

/** The environment variable that supplies --pg (a URL with a password stays out of ps). */
export const PG_URL_ENV = "TUBEWAY_PG_URL";

function usageError(message: string): ParsedArgs {
  return { kind: "error", message, exitCode: 5, usage: true };
}

/**
 * The first listening fd systemd passed (3), as sd_listen_fds(3) finds it in LISTEN_FDS
 * and LISTEN_PID, or undefined. LISTEN_PID must be our pid: a child that inherited the
 * variables must not take the socket.
 */
function inheritedFd(env: Readonly<Record<string, string | undefined>>, pid: number, warnings: string[]) {
  const fds = env.LISTEN_FDS;
  const forPid = env.LISTEN_PID;
  if (fds === undefined || forPid === undefined) return undefined;
  if (!/^[0-9]+$/.test(forPid) || Number(forPid) !== pid) return undefined;
  const n = /^[0-9]+$/.test(fds) ? Number(fds) : 0;
  if (n < 1) return undefined;
  if (n > 1) warnings.push("inherited more than one listen socket; ignoring all but the first");
  return 3;
}

/** A size flag: one unsigned decimal, nothing else ("invalid size: X" otherwise). */
function size(v: string): number | undefined {
  return /^[0-9]+$/.test(v) && Number(v) <= Number.MAX_SAFE_INTEGER ? Number(v) : undefined;
}

/**
 * Parse beanstalkd's flags (combined like -VFVukr, attached values like -z10, later
 * flags overriding earlier ones) into a Config; never prints or exits. `env` is the
 * process environment: TUBEWAY_HTTP_TOKEN (--http-token wins over it), and systemd's
 * LISTEN_FDS/LISTEN_PID, which apply when LISTEN_PID is `pid`: then the server serves
 * the inherited socket (fd 3), and -l and -p are ignored with 1.12's warning.
 *
 * @example
 * ```ts
 * import { parseConfig } from "../mod.ts";
 *
 * const parsed = parseConfig(["-l", "127.0.0.1", "-p", "11301", "-z", "1024"]);
 * if (parsed.kind === "run") console.log(parsed.config.maxJobSize); // 1024
 * ```
 */
export function parseConfig(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
  pid = 0,
): ParsedArgs {
  const { words, stop } = scanFlags(args);
  const tokens = optionTokens(words);
  if (typeof tokens === "string") return usageError(tokens);
  const r = reading(env, pid);
  for (const t of tokens) {
    if (t.kind === "positional") return usageError(`unknown argument: ${t.value}`);
    if (t.kind !== "option") continue;
    const v = t.value ?? "";
    const problem = LONG_OPTIONS.has(t.name) ? readLong(r, t.name, v) : readShort(r, t.name, v);
    if (problem) return problem;
  }
  if (stop) return stop.kind === "usage" ? usageError(stop.message) : stop;
  return finish(r);
}

/** What the flags said so far (a later flag overrides an earlier one). */
interface Reading {
  readonly config: Config;
  host: string;
  path: string | undefined;
  port: number;
  /** The listening socket systemd passed, if any: then -l and -p are ignored. */
  readonly fd: number | undefined;
  pgUrl: string | undefined;
  pgSchema: string | undefined;
  pgLeaseMs: number | undefined;
  pgWaitMs: number | undefined;
  readonly tls: Partial<Record<"tls-cert" | "tls-key" | "tls-ca" | "tls", string>>;
}

/** The defaults, and what the environment gives. */
function reading(env: Readonly<Record<string, string | undefined>>, pid: number): Reading {
  const config: Config = {
    listen: { host: "0.0.0.0", port: DEFAULT_PORT },
    maxJobSize: DEFAULT_MAX_JOB_SIZE,
    verbose: 0,
    binlogDir: undefined,
    fsyncMs: DEFAULT_FSYNC_MS,
    binlogSize: DEFAULT_BINLOG_SIZE,
    user: undefined,
    http: undefined,
    httpToken: env[HTTP_TOKEN_ENV] || undefined,
    warnings: [],
    tls: undefined,
    logFormat: "text",
    pg: undefined,
  };
  return {
    config,
    host: "0.0.0.0",
    path: undefined,
    port: DEFAULT_PORT,
    fd: inheritedFd(env, pid, config.warnings),
    pgUrl: env[PG_URL_ENV] || undefined,
    pgSchema: undefined,
    pgLeaseMs: undefined,
    pgWaitMs: undefined,
    tls: {},
  };
}

/** One of beanstalkd's flags; an error to answer, or undefined. */
function readShort(r: Reading, name: string, v: string): ParsedArgs | undefined {
  const config = r.config;
  switch (name) {
    case "V":
      config.verbose++;
      break;
    case "F":
      config.fsyncMs = "never";
      break;
    case "c":
    case "n":
      config.warnings.push(`-${name} flag was removed. binlog is always compacted.`);
      break;
    case "b":
      config.binlogDir = v;
      break;
    case "u":
      config.user = v;
      break;
    case "l":
      if (r.fd !== undefined) config.warnings.push(`inherited listen fd; ignoring option: -l ${v}`);
      else if (v.startsWith("unix:")) r.path = v.slice(5);
      else {
        r.host = v;
        r.path = undefined;
      }
      break;
    case "p": {
      const n = /^[0-9]+$/.test(v) ? Number(v) : NaN;
      if (r.fd !== undefined) config.warnings.push(`inherited listen fd; ignoring option: -p ${v}`);
      else if (!(n >= 0 && n <= 65535)) {
        return { kind: "error", message: `invalid port: ${v}`, exitCode: 5, usage: false };
      } else r.port = n;
      break;
    }
    case "z":
    case "s":
    case "f": {
      const n = size(v);
      if (n === undefined) return usageError(`invalid size: ${v}`);
      if (name === "z") {
        config.maxJobSize = n;
        if (n > MAX_JOB_SIZE_LIMIT) {
          config.maxJobSize = MAX_JOB_SIZE_LIMIT;
          config.warnings.push(`maximum job size was set to ${MAX_JOB_SIZE_LIMIT}`);
        }
      } else if (name === "s") config.binlogSize = n;
      else config.fsyncMs = n;
      break;
    }
  }
  return undefined;
}

/** One of tubeway's long options; an error to answer, or undefined. */
function readLong(r: Reading, name: string, v: string): ParsedArgs | undefined {
  switch (name) {
    case "http": {
      const a = parseHostPort(v);
      if (!a) return flagError(`--http wants HOST:PORT (e.g. 127.0.0.1:9100), not ${v}`);
      r.config.http = a;
      break;
    }
    case "http-token":
      if (v === "") return usageError("--http-token must not be empty");
      r.config.httpToken = v;
      break;
    case "tls-cert":
    case "tls-key":
    case "tls-ca":
    case "tls":
      r.tls[name] = v;
      break;
    case "pg":
      r.pgUrl = v;
      break;
    case "pg-schema":
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(v)) {
        return flagError(`--pg-schema wants a lower-case SQL name (letters, digits, _), not ${v}`);
      }
      r.pgSchema = v;
      break;
    case "pg-lease": {
      const n = /^[0-9]+(\.[0-9]+)?$/.test(v) ? Number(v) : NaN;
      if (!(n >= 1 && n <= 3600)) return flagError(`--pg-lease wants seconds from 1 to 3600, not ${v}`);
      r.pgLeaseMs = Math.round(n * 1000);
      break;
    }
    case "pg-wait": {
      const n = /^[0-9]+(\.[0-9]+)?$/.test(v) ? Number(v) : NaN;
      if (!(n >= 0 && n <= 3600)) return flagError(`--pg-wait wants seconds from 0 to 3600, not ${v}`);
      r.pgWaitMs = Math.round(n * 1000);
      break;
    }
    case "log-format":
      if (v !== "text" && v !== "json") return flagError(`--log-format must be text or json, not ${v}`);
      r.config.logFormat = v;
      break;
  }
  return undefined;
}

/** The flags that only make sense together (--pg and its settings, the TLS files, where to listen). */
function finish(r: Reading): ParsedArgs {
  const config = r.config;
  if (r.pgUrl !== undefined) {
    if (config.binlogDir !== undefined) {
      return usageError("-b and --pg cannot be used together: the jobs live in one place");
    }
    config.pg = {
      url: r.pgUrl,
      schema: r.pgSchema ?? DEFAULT_SCHEMA,
      leaseMs: r.pgLeaseMs ?? DEFAULT_LEASE_MS,
      waitMs: r.pgWaitMs ?? DEFAULT_WAIT_MS,
    };
  } else if (r.pgSchema !== undefined || r.pgLeaseMs !== undefined || r.pgWaitMs !== undefined) {
    const flag = r.pgSchema !== undefined ? "--pg-schema" : r.pgLeaseMs !== undefined ? "--pg-lease" : "--pg-wait";
    return usageError(`${flag} needs --pg URL`);
  }
  config.listen = r.fd !== undefined
    ? { fd: r.fd }
    : r.path !== undefined
    ? { path: r.path }
    : { host: r.host, port: r.port };
  const t = tlsConfig(r.tls, "path" in config.listen);
  if (typeof t === "string") return flagError(t);
  config.tls = t;
  return { kind: "run", config };
}

function flagError(message: string): ParsedArgs {
  return { kind: "error", message, exitCode: 5, usage: false };
}

/** HOST:PORT, with [v6]:PORT for IPv6 hosts; undefined when it is not one. */
export function parseHostPort(v: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([^\]]*)\]|([^:]+)):([0-9]+)$/.exec(v);
  const port = Number(m?.[3]);
  if (!m || port > 65535) return undefined;
  return { host: m[1] ?? m[2]!, port };
}

/** The TLS flags, checked together (they only make sense as a set); a string is the error. */
function tlsConfig(
  f: Partial<Record<"tls-cert" | "tls-key" | "tls-ca" | "tls", string>>,
  unixSocket: boolean,
): TlsConfig | undefined | string {
  const given = Object.keys(f);
  if (given.length === 0) return undefined;
  const cert = f["tls-cert"];
  const key = f["tls-key"];
  if (cert === undefined || key === undefined) {
    return `${given.map((n) => `--${n}`).join(", ")} needs both --tls-cert FILE and --tls-key FILE`;
  }
  let listen: TlsConfig["listen"];
  if (f.tls !== undefined) {
    listen = parseHostPort(f.tls);
    if (!listen) return `--tls wants HOST:PORT (e.g. 0.0.0.0:11301), not ${f.tls}`;
  } else if (unixSocket) {
    // Deno cannot speak TLS over a UNIX socket; a local socket needs no TLS anyway.
    return "TLS is served on TCP only: with -l unix:PATH, add --tls HOST:PORT for the TLS listener";
  }
  return { certFile: cert, keyFile: key, caFile: f["tls-ca"], listen };
}
