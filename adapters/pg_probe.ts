// Why a connection that must be encrypted failed. postgres.js asks the server for TLS
// (the SSLRequest message) and, when it answers 'N' (no TLS), starts the TLS handshake
// anyway: the server drops the connection and the runtime reports "Client network
// socket disconnected before secure TLS connection was established". libpq says
// "server does not support SSL, but SSL was required": ask the question again here, to
// say the same.
import { connect } from "node:net";
import process from "node:process";
import { driverOptions } from "./pg_options.ts";
import { pgTarget } from "./pg_client.ts";

/** The SSLRequest message: length 8, code 80877103. */
const SSL_REQUEST = new Uint8Array([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
/** How long a host has to answer it (ms). */
const PROBE_MS = 3000;

/** The server's one-byte answer to SSLRequest ('S' or 'N'), or undefined (no answer, refused, other). */
function askTls(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (answer: string | undefined) => {
      clearTimeout(timer);
      s.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), PROBE_MS);
    s.once("connect", () => s.write(SSL_REQUEST));
    s.once("data", (d: Uint8Array) => done(String.fromCharCode(d[0]!)));
    s.once("error", () => done(undefined));
    s.once("close", () => done(undefined));
  });
}

/**
 * When `url` (with the PG* variables) requires TLS and one of its TCP hosts answers
 * that it has none: "the server at HOST:PORT does not support TLS, and sslmode=M asks
 * for it". Otherwise undefined: the driver's own error says what happened.
 */
export async function tlsRefusal(
  url: string | undefined,
  env: Record<string, string | undefined> = process.env,
): Promise<string | undefined> {
  let ssl;
  try {
    ssl = driverOptions(url, env).ssl;
  } catch {
    return undefined;
  }
  if (ssl === undefined || ssl === false || ssl === "prefer" || ssl === "allow") return undefined;
  const q = url?.indexOf("?") ?? -1;
  const mode = (url && q >= 0 ? new URLSearchParams(url.slice(q + 1)).get("sslmode") : null) ?? env.PGSSLMODE;
  const target = pgTarget(url, env);
  for (const hostPort of target.slice(0, target.lastIndexOf("/")).split(",")) {
    const at = hostPort.lastIndexOf(":");
    const host = hostPort.slice(0, at).replace(/^\[(.*)\]$/, "$1");
    if (host.startsWith("/")) continue; // a UNIX socket directory: no TLS there, and none asked of it
    if (await askTls(host, Number(hostPort.slice(at + 1))) === "N") {
      return `the server at ${hostPort} does not support TLS, and ${mode ? `sslmode=${mode}` : "the URL"} asks for it`;
    }
  }
  return undefined;
}
