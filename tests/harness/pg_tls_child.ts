// Run by tests/adapters/tls_roots_test.ts in a process of its own: a --pg client with
// sslmode=verify-full against a fake database that, when the SSL request comes, first
// takes the file NODE_EXTRA_CA_CERTS names away (as running out of file descriptors does:
// the runtime can no longer read it) and then accepts the request, so that the driver's
// TLS connect follows. Prints "connect attempted" on stdout when the client got that
// far; the runtime's warnings go to stderr.
import { renameSync } from "node:fs";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { pgClient } from "../../adapters/pg_client.ts";

const ca = process.env.NODE_EXTRA_CA_CERTS!;
const sockets: Socket[] = [];
const server = createServer((sock) => {
  sockets.push(sock);
  sock.once("data", () => {
    renameSync(ca, `${ca}.gone`);
    sock.write("S"); // SSLRequest accepted: the client starts its TLS handshake on this socket now
    setTimeout(finish, 300);
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as AddressInfo).port;
const sql = pgClient(`postgres://tubeway@127.0.0.1:${port}/tubeway?sslmode=verify-full`);
void sql.query("select 1").catch(() => {});

function finish(): void {
  renameSync(`${ca}.gone`, ca);
  console.log("connect attempted");
  for (const s of sockets) s.destroy();
  process.exit(0);
}
setTimeout(() => {
  console.log("no SSL request came");
  process.exit(1);
}, 10_000);
