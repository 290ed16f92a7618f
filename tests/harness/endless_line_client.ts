// The endless-line client of tests/harness/load.ts, in a process of its own: it sends a
// line without CRLF at full speed to HOST:PORT for MS milliseconds and prints the bytes
// sent. Apart, because a client flooding at 1 GB/s keeps its own event loop busy, and a
// prober sharing that loop would time the flooder, not the server.
//   deno run --allow-net tests/harness/endless_line_client.ts HOST PORT MS   (or bun run)
import { connect } from "node:net";
import process from "node:process";

const [host, port, ms] = process.argv.slice(2);
const s = connect(Number(port), host!);
s.on("error", () => {});
s.on("data", () => {});
await new Promise((r) => s.once("connect", r));
const chunk = Buffer.alloc(64 * 1024, "x".charCodeAt(0));
const end = Date.now() + Number(ms);
let sent = 0;
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));
while (Date.now() < end && !s.destroyed) {
  sent += chunk.length;
  if (!s.write(chunk)) {
    await Promise.race([new Promise((r) => s.once("drain", r)), sleep(Math.max(1, end - Date.now()))]);
  }
}
s.destroy();
console.log(sent);
process.exit(0);
