// The unread-flood client of tests/system/flood_unread_test.ts, in a process of its own:
// CLIENTS connections to HOST:PORT that each keep writing `peek ID\r\n` for as long as
// the server takes it, and never read a byte, until stdin closes; then they all close
// and it prints one JSON line: {connected, sent, closedByServer}. It prints "ready"
// once every connection is open.
//
// Always run on Deno (the test does so on both runtimes): Deno.connect reads nothing
// unless asked, so the client truly never reads, and its writes simply wait while the
// server does not read. A node:net or Bun socket reads on its own into its buffers.
//   deno run --allow-net tests/harness/flood_unread_client.ts HOST PORT ID CLIENTS
const [host, port, id, clients] = Deno.args;
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

const conns: Deno.Conn[] = [];
for (let i = 0; i < Number(clients); i++) {
  conns.push(await Deno.connect({ hostname: host!, port: Number(port) }));
}

/** Write whole chunks (a partial write is completed), so commands are never cut. */
async function flood(c: Deno.Conn): Promise<void> {
  try {
    while (running) {
      let off = 0;
      while (off < chunk.length) off += await c.write(off === 0 ? chunk : chunk.subarray(off));
      sent += chunk.length;
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
console.log(JSON.stringify({ connected: conns.length, sent, closedByServer }));
Deno.exit(0);
