// The prober of tests/harness/load.ts, in a process of its own: one connection doing a
// round trip (`list-tube-used`) every INTERVAL ms until its stdin closes, then one JSON
// line: {worst, p99, count, failure}. Apart, because the test process carries the heap of
// every scenario before (a thousand flooding sockets): its own garbage collection
// stalled its event loop by up to 37 ms, which an in-process prober then blamed on the
// server.
//   deno run --allow-net tests/harness/prober_client.ts HOST PORT INTERVAL TIMEOUT   (or bun run)
import process from "node:process";
import { dial } from "./wire.ts";

const [host, port, interval, timeout] = process.argv.slice(2);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const w = await dial({ host: host!, port: Number(port) });
let running = true;
let since = 0;
let worst = 0;
let count = 0;
const times: number[] = [];
let failure: string | undefined;
process.stdin.on("data", () => {});
process.stdin.on("end", () => (running = false));
process.stdin.resume();

async function probe(): Promise<void> {
  since = performance.now();
  try {
    const r = await w.cmd("list-tube-used", Number(timeout));
    if (r !== "USING default\r\n") failure = `got ${JSON.stringify(r)}`;
  } catch (e) {
    failure = (e as Error).message;
    since = 0;
    running = false;
    return;
  }
  const took = performance.now() - since;
  worst = Math.max(worst, took);
  times.push(took);
  since = 0;
  count++;
}

await probe(); // connected and answered once: the scenario may start
process.stdout.write("ready\n");
const loop = (async () => {
  while (running) {
    await sleep(Number(interval));
    if (running) await probe();
  }
})();
// Stopped: a round trip still waiting counts for as long as it has waited.
await new Promise<void>((r) => process.stdin.once("end", r));
if (since) worst = Math.max(worst, performance.now() - since);
await Promise.race([loop, sleep(100)]);
times.sort((a, b) => a - b);
const p99 = times.length ? times[Math.floor(0.99 * (times.length - 1))]! : 0;
process.stdout.write(
  JSON.stringify({ worst: Math.round(worst), p99: Math.round(p99 * 10) / 10, count, failure }) + "\n",
);
w.close();
process.exit(0);
