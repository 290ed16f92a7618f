// What psql users expect of a connection URL and the PG* variables beyond what the npm
// package `postgres` reads itself: the password file (PGPASSFILE or ~/.pgpass, the
// `passfile` parameter), PGSSLMODE, and `sslrootcert` / `sslcert` / `sslkey` (or their
// PG* variables) for verify-ca, verify-full and client certificates. The driver would
// send parameters it does not know to the server as settings ("unrecognized
// configuration parameter"), so these are taken out of the URL and given as options.
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** Whether a URL (its part before the host) carries a password. */
export function urlHasPassword(url: string): boolean {
  return /^[a-z]+:\/\/[^@/?]*:[^@/?]*@/i.test(url);
}

/** Parameters of the URL handled here, never sent to the server. */
const LIBPQ_PARAMS = ["sslmode", "sslrootcert", "sslcert", "sslkey", "passfile"] as const;
const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];

/** TLS options as node:tls takes them (the driver merges them into tls.connect()). */
export interface TlsOptions {
  rejectUnauthorized: boolean;
  ca?: string;
  cert?: string;
  key?: string;
  checkServerIdentity?: () => undefined;
}

/** What the driver is given: the URL without the parameters above, and the options they stand for. */
export interface DriverOptions {
  url: string | undefined;
  /** false, a mode the driver knows ("prefer", "require", ...), or TLS options. Absent: the driver's default. */
  ssl?: false | string | TlsOptions;
  /** Where a password is looked up when neither the URL nor PGPASSWORD has one. */
  passfile: string;
}

type Env = Record<string, string | undefined>;

/** Split the URL's query from the rest without parsing the host part (it may list several hosts). */
function splitQuery(url: string): [string, URLSearchParams] {
  const q = url.indexOf("?");
  return q < 0 ? [url, new URLSearchParams()] : [url.slice(0, q), new URLSearchParams(url.slice(q + 1))];
}

/**
 * A URL naming several hosts with every port written out. The driver gives a host
 * without a port the first host's ("db1:5433,db2" would reach db2 on 5433); psql gives
 * it PGPORT or 5432, and so does tubeway.
 */
function portsFilledIn(url: string, env: Env): string {
  const m = /^([a-z]+:\/\/(?:[^@/?#]*@)?)([^/?#]*)(.*)$/is.exec(url);
  if (!m || !m[2]!.includes(",")) return url;
  const hosts = m[2]!.split(",").map((h) =>
    /:\d*$/.test(h.replace(/^\[[^\]]*\]/, "")) ? h : `${h}:${env.PGPORT || 5432}`
  );
  return `${m[1]}${hosts.join(",")}${m[3]}`;
}

/**
 * The driver's URL and options for a URL (or none: the PG* variables alone) and the
 * environment. Throws on an sslmode libpq does not know, or a certificate file that
 * cannot be read (the message names it).
 */
export function driverOptions(url: string | undefined, env: Env = process.env): DriverOptions {
  let params = new URLSearchParams();
  let rest = url;
  if (url !== undefined) {
    [rest, params] = splitQuery(url);
    rest = portsFilledIn(rest, env);
    const left = new URLSearchParams(params);
    for (const k of LIBPQ_PARAMS) left.delete(k);
    const q = left.toString();
    rest = q ? `${rest}?${q}` : rest;
  }
  const get = (k: (typeof LIBPQ_PARAMS)[number]) => params.get(k) ?? env[`PG${k.toUpperCase()}`] ?? undefined;
  const out: DriverOptions = { url: rest, passfile: "" };
  out.passfile = get("passfile") ?? join(env.HOME || homedir(), ".pgpass");

  const mode = get("sslmode");
  if (mode !== undefined && !SSL_MODES.includes(mode)) {
    throw new Error(`invalid sslmode "${mode}" (one of ${SSL_MODES.join(", ")})`);
  }
  const rootcert = get("sslrootcert");
  const cert = get("sslcert");
  const key = get("sslkey");
  const file = (what: string, path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch (e) {
      throw new Error(`cannot read ${what} "${path}": ${e instanceof Error ? e.message : e}`);
    }
  };
  if (mode === "disable") {
    out.ssl = false;
  } else if (mode === "verify-ca" || mode === "verify-full" || (mode === "require" && rootcert !== undefined)) {
    // libpq: require with a root certificate given verifies the chain, as verify-ca does.
    const tls: TlsOptions = { rejectUnauthorized: true };
    if (rootcert !== undefined && rootcert !== "system") tls.ca = file("sslrootcert", rootcert);
    if (mode !== "verify-full") tls.checkServerIdentity = () => undefined;
    out.ssl = tls;
  } else if (mode !== undefined) {
    out.ssl = mode;
  }
  if (cert !== undefined || key !== undefined) {
    if (cert === undefined || key === undefined) throw new Error("sslcert and sslkey go together");
    const tls: TlsOptions = typeof out.ssl === "object" ? out.ssl : { rejectUnauthorized: false };
    tls.cert = file("sslcert", cert);
    tls.key = file("sslkey", key);
    out.ssl = tls;
  }
  return out;
}

/** One field of a password file line: `\:` and `\\` are escapes, `*` matches anything. */
function fields(line: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) cur += line[++i];
    else if (c === ":") {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

/**
 * The password a password file's text gives for a connection, as libpq looks it up:
 * `host:port:database:user:password` lines, `*` for any, the first match wins, `#`
 * comments. `localhost` also matches a UNIX socket path.
 */
export function passwordFrom(
  text: string,
  at: { host: string; port: number; database: string; user: string },
): string | undefined {
  const host = at.host.startsWith("/") ? "localhost" : at.host;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (line === "" || line.startsWith("#")) continue;
    const f = fields(line);
    if (f.length < 5) continue;
    const [h, p, d, u] = f;
    const match = (pat: string | undefined, v: string) => pat === "*" || pat === v;
    if (match(h, host) && match(p, String(at.port)) && match(d, at.database) && match(u, at.user)) {
      return f.slice(4).join(":");
    }
  }
  return undefined;
}

/**
 * The password for the first of `hosts` a password file has one for, or undefined. A
 * file that is missing is no password; one that others may read is ignored, as libpq
 * does, with a warning through `warn`.
 */
export function passwordFromFile(
  path: string,
  hosts: { host: string; port: number }[],
  database: string,
  user: string,
  warn: (line: string) => void,
): string | undefined {
  let text: string;
  try {
    const st = statSync(path);
    if (!st.isFile()) return undefined;
    if ((st.mode & 0o077) !== 0) {
      warn(`password file "${path}" has group or world access; permissions should be u=rw (0600) or less: ignored`);
      return undefined;
    }
    text = readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
  for (const h of hosts) {
    const found = passwordFrom(text, { ...h, database, user });
    if (found !== undefined) return found;
  }
  return undefined;
}
