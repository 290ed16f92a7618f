// The unread-flood client of tests/system/flood_unread_test.ts, in a process of its own:
// CLIENTS connections to TARGET that each keep writing `peek ID\r\n` for as long as the
// server takes it, and never read a byte, until stdin closes; then they all close and it
// prints one JSON line: {sent, closedByServer}. It prints "ready" once every connection
// is open. TARGET is JSON: {"host","port"} for TCP, {"path"} for a UNIX socket,
// {"host","port","ca"} for TLS (the server verified against the CA file).
//
// Always run on Deno (the test does so on both runtimes): Deno.connect reads nothing
// unless asked, so the client truly never reads, and its writes simply wait while the
// server does not read. A node:net or Bun socket reads on its own into its buffers.
//   deno run --allow-net --allow-read --allow-write tests/harness/flood_unread_client.ts TARGET ID CLIENTS
const [targetJson, id, clients] = Deno.args;
const target = JSON.parse(targetJson!) as { host: string; port: number; ca?: string } | { path: string };
/**
 * Written 1 MiB at a time: with big writes the kernel has more queued at each read, and
 * Bun takes up to 512 KB per read (with 64 KiB writes, one such client made Bun grow by
 * 3 MB; with 1 MiB writes by 18 MB, as the client did).
 */
const command = new TextEncoder().encode(`peek ${id}\r\n`);
const chunk = new Uint8Array(Math.floor(2 ** 20 / command.length) * command.length);
for (let i = 0; i < chunk.length; i += command.length) chunk.set(command, i);
let running = true;
let sent = 0;
let closedByServer = 0;

function open(): Promise<Deno.Conn> {
  if ("path" in target) return Deno.connect({ transport: "unix", path: target.path });
  if (target.ca === undefined) return Deno.connect({ hostname: target.host, port: target.port });
  return Deno.connectTls({ hostname: target.host, port: target.port, caCerts: [Deno.readTextFileSync(target.ca)] });
}

const conns: Deno.Conn[] = [];
for (let i = 0; i < Number(clients); i++) conns.push(await open());

/** Write whole chunks (a partial write is completed), so commands are never cut. */
async function flood(c: Deno.Conn): Promise<void> {
  try {
    while (running) {
      let off = 0;
      while (off < chunk.length) {
        const n = await c.write(off === 0 ? chunk : chunk.subarray(off));
        off += n;
        sent += n;
      }
    }
  } catch {
    if (running) closedByServer++; // reset or closed by the server
  }
}

const floods = conns.map(flood);
console.log("ready");
const stdin = Deno.stdin.readable.getReader();
while (!(await stdin.read()).done) { /* until stdin closes */ }
running = false;
for (const c of conns) {
  try {
    c.close(); // pending writes fail; the unread input makes this a reset
  } catch { /* closed already */ }
}
await Promise.all(floods);
console.log(JSON.stringify({ sent, closedByServer }));
Deno.exit(0);
