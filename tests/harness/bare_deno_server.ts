// The least a Deno server can hold per connection: Deno.listen, and per connection one
// pending 64-byte read that answers every read with "USING default". memory_test.ts
// measures it beside tubeway, to tell Deno's own cost per connection from ours.
//   deno run --allow-net tests/harness/bare_deno_server.ts -l 127.0.0.1 -p PORT
const at = (flag: string) => Deno.args[Deno.args.indexOf(flag) + 1];
const listener = Deno.listen({ hostname: at("-l") ?? "127.0.0.1", port: Number(at("-p")) });
const reply = new TextEncoder().encode("USING default\r\n");

async function serve(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64);
  try {
    while ((await conn.read(buf)) !== null) await conn.write(reply);
  } catch { /* reset */ }
  try {
    conn.close();
  } catch { /* closed */ }
}

for await (const conn of listener) serve(conn);
