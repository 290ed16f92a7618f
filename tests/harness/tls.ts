// TLS for tests: certificates made on the spot with openssl (a CA, a server certificate
// for 127.0.0.1, a client certificate from that CA, and one from a CA the server does not
// trust), and a TLS client speaking the beanstalkd protocol through the Wire helper.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import assert from "node:assert/strict";
import { which } from "../../scripts/machine.ts";
import { type Wire, wireWhen } from "./wire.ts";

export const OPENSSL = which("/usr/bin/openssl") ?? which("openssl");

/** Paths of the PEM files makeCerts() wrote. */
export interface Certs {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** Signed by a CA the server was not given: must be refused under --tls-ca. */
  strangerCert: string;
  strangerKey: string;
}

function openssl(dir: string, ...args: string[]): void {
  const r = spawnSync(OPENSSL!, args, { cwd: dir, encoding: "utf8", timeout: 30_000 });
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${r.stderr}`);
}

/** A CA and a certificate it signed; EC P-256 keys, X.509 v3 (rustls, Deno's TLS, refuses v1). */
function issue(dir: string, name: string, ca: string | undefined, subject: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    dir,
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  );
  const signer = ca ? ["-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial"] : ["-signkey", `${name}.key`];
  openssl(
    dir,
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    ...signer,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  );
}

const CA_EXT = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n";

/** Make a fresh set of certificates in a new temporary directory. */
export function makeCerts(): Certs {
  const dir = mkdtempSync(join(tmpdir(), "tubeway-tls-"));
  issue(dir, "ca", undefined, "/CN=tubeway test CA", CA_EXT);
  issue(dir, "stranger-ca", undefined, "/CN=some other CA", CA_EXT);
  issue(
    dir,
    "server",
    "ca",
    "/CN=localhost",
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
  );
  issue(dir, "client", "ca", "/CN=worker-1", "extendedKeyUsage=clientAuth\n");
  issue(dir, "stranger", "stranger-ca", "/CN=intruder", "extendedKeyUsage=clientAuth\n");
  const p = (f: string) => join(dir, f);
  return {
    dir,
    ca: p("ca.crt"),
    serverCert: p("server.crt"),
    serverKey: p("server.key"),
    clientCert: p("client.crt"),
    clientKey: p("client.key"),
    strangerCert: p("stranger.crt"),
    strangerKey: p("stranger.key"),
  };
}

/** The server flags for these certificates: TLS beside the plain port on tlsPort when given, mTLS when asked. */
export function tlsFlags(c: Certs, opts: { tlsPort?: number; mtls?: boolean } = {}): string[] {
  return [
    ...(opts.tlsPort !== undefined ? ["--tls", `127.0.0.1:${opts.tlsPort}`] : []),
    ...["--tls-cert", c.serverCert, "--tls-key", c.serverKey],
    ...(opts.mtls ? ["--tls-ca", c.ca] : []),
  ];
}

export interface TlsDialOptions {
  /** The CA that signed the server's certificate (the client verifies the server). */
  ca: string;
  /** A client certificate and key to present, for mTLS. */
  cert?: string;
  key?: string;
  timeoutMs?: number;
}

/** Open a TLS connection (server verified against opts.ca) and wrap it in a Wire. */
export function dialTls(addr: { host: string; port: number }, opts: TlsDialOptions): Promise<Wire> {
  const sock = connect({
    host: addr.host,
    port: addr.port,
    ca: readFileSync(opts.ca),
    servername: "localhost",
    ...(opts.cert && opts.key ? { cert: readFileSync(opts.cert), key: readFileSync(opts.key) } : {}),
  });
  return wireWhen(sock, "secureConnect", opts.timeoutMs ?? 5000);
}

/**
 * Whether a TLS client is turned away: its handshake fails, or (TLS 1.3, where the
 * server checks the client's certificate after the client has finished) its first
 * command gets no reply because the server closed the connection.
 */
export async function refused(addr: { host: string; port: number }, opts: TlsDialOptions): Promise<boolean> {
  let w: Wire;
  try {
    w = await dialTls(addr, opts);
  } catch {
    return true;
  }
  try {
    await w.cmd("list-tube-used");
    return false;
  } catch {
    return true;
  } finally {
    w.close();
  }
}

/** The first bytes of a TLS ClientHello (record header, handshake header, version), then nothing. */
export const HALF_CLIENT_HELLO = new Uint8Array([
  0x16,
  0x03,
  0x01,
  0x00,
  0xc8,
  0x01,
  0x00,
  0x00,
  0xc4,
  0x03,
  0x03,
  1,
  2,
  3,
]);

/** A number from a stats reply. */
export function stat(yaml: string, key: string): number {
  const m = new RegExp(`\\n${key}: (\\d+)\\n`).exec(yaml);
  assert.ok(m, `no ${key} in ${yaml}`);
  return Number(m[1]);
}

/** put, reserve, delete through w: the round trip that shows a client is served. */
export async function roundTrip(w: Wire, body: string): Promise<void> {
  const put = await w.put(body);
  assert.match(put, /^INSERTED \d+\r\n$/);
  const id = put.split(" ")[1]!.trim();
  assert.equal(await w.cmd("reserve-with-timeout 0"), `RESERVED ${id} ${body.length}\r\n${body}\r\n`);
  assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
}
