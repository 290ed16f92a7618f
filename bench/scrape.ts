// How long a /metrics scrape takes with many tubes, and whether it stalls the protocol
// port: 10,000 tubes with a ready job each (plus one tube with 100,000 ready jobs, which
// the oldest-ready-job scan walks), scraped repeatedly while a client measures protocol
// round trips; then the same round trips with no scrape running, for comparison.
//
//   deno run -A bench/scrape.ts [deno|bun|CMD...]   (default: deno)
//
// Scrapes with curl (needed on PATH). Prints scrape time (min/median/max), the exposition size, and the protocol round
// trip (median/max) with and without scrapes. On a busy machine, compare within a run.
import { spawn } from "node:child_process";
import { connect, createServer, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { DENO_V8_FLAGS } from "../adapters/deno_flags.ts";

const TUBES = 10_000;
const BIG_TUBE_JOBS = 100_000;
const SCRAPES = 20;
const ROOT = fileURLToPath(new URL("..", import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** A protocol connection that sends bytes and waits for n reply lines (bodies are one line here). */
function client(port: number): Promise<{ run(bytes: string, lines: number): Promise<void>; sock: Socket }> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: "127.0.0.1", port }, () => {
      let seen = 0;
      let want = 0;
      let done: (() => void) | undefined;
      sock.on("data", (d: Buffer) => {
        for (const b of d) if (b === 10) seen++;
        if (done && seen >= want) {
          const f = done;
          done = undefined;
          f();
        }
      });
      resolve({
        sock,
        run(bytes, lines) {
          return new Promise<void>((r) => {
            seen = 0;
            want = lines;
            done = r;
            sock.write(bytes);
          });
        },
      });
    });
    sock.once("error", reject);
  });
}

/** Fetch a URL with curl, discarding the body: total time and size. */
function curl(url: string): Promise<{ seconds: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const p = spawn("curl", ["-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download}", url]);
    let out = "";
    p.stdout.on("data", (d: Buffer) => (out += d));
    p.on("error", reject);
    p.on("exit", () => {
      const [t, n] = out.split(" ").map(Number);
      resolve({ seconds: t!, bytes: n! });
    });
  });
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return {
    min: s[0]!,
    median: s[Math.floor(s.length / 2)]!,
    p99: s[Math.floor(s.length * 0.99)]!,
    max: s[s.length - 1]!,
    over50: s.filter((x) => x > 50).length,
  };
};
const ms = (v: number) => v.toFixed(1) + " ms";

async function main() {
  const which = Deno.args.length ? Deno.args : ["deno"];
  const argv = which[0] === "deno"
    ? [`${ROOT}node_modules/.bin/deno`, "run", `--v8-flags=${DENO_V8_FLAGS}`, "-A", `${ROOT}server.ts`]
    : which[0] === "bun"
    ? [`${ROOT}node_modules/.bin/bun`, "run", `${ROOT}server.ts`]
    : which;
  const port = await freePort();
  const httpPort = await freePort();
  const child = spawn(argv[0]!, [
    ...argv.slice(1),
    "-l",
    "127.0.0.1",
    "-p",
    String(port),
    "--http",
    `127.0.0.1:${httpPort}`,
  ], {
    stdio: "inherit",
  });
  try {
    for (let i = 0;; i++) {
      try {
        await fetch(`http://127.0.0.1:${httpPort}/healthz`).then((r) => r.text());
        break;
      } catch {
        if (i > 400) throw new Error("server did not start");
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const c = await client(port);
    let batch = "";
    for (let i = 0; i < TUBES; i++) batch += `use t${i}\r\nput 0 0 60 1\r\nx\r\n`;
    await c.run(batch, 2 * TUBES);
    batch = "use big\r\n" + "put 0 0 60 1\r\nx\r\n".repeat(BIG_TUBE_JOBS);
    await c.run(batch, BIG_TUBE_JOBS + 1);

    const pinger = await client(port);
    const ping = async (untilDone: () => boolean) => {
      const rtts: number[] = [];
      while (!untilDone()) {
        const t0 = performance.now();
        await pinger.run("list-tube-used\r\n", 1);
        rtts.push(performance.now() - t0);
      }
      return rtts;
    };

    const times: number[] = [];
    let size = 0;
    let scraping = true;
    const during = ping(() => !scraping);
    // curl in its own process, so that receiving megabytes here does not stall the pinger
    for (let i = 0; i < SCRAPES; i++) {
      const out = await curl(`http://127.0.0.1:${httpPort}/metrics`);
      times.push(out.seconds * 1000);
      size = out.bytes;
    }
    scraping = false;
    const rttScrape = await during;
    const quietUntil = performance.now() + 2000;
    const rttQuiet = await ping(() => performance.now() > quietUntil);
    const t = stat(times), a = stat(rttScrape), b = stat(rttQuiet);
    console.log(`server: ${argv.join(" ")}`);
    console.log(`tubes: ${TUBES + 2}, jobs: ${TUBES + BIG_TUBE_JOBS}, exposition: ${(size / 1e6).toFixed(2)} MB`);
    console.log(`scrape (${SCRAPES}x): min ${ms(t.min)}, median ${ms(t.median)}, max ${ms(t.max)}`);
    console.log(
      `protocol round trip while scraping (${a.min ? rttScrape.length : 0}): median ${ms(a.median)}, p99 ${
        ms(a.p99)
      }, max ${ms(a.max)}, ${a.over50} over 50 ms`,
    );
    console.log(
      `protocol round trip, no scrape (${rttQuiet.length}): median ${ms(b.median)}, p99 ${ms(b.p99)}, max ${
        ms(b.max)
      }, ${b.over50} over 50 ms`,
    );
    c.sock.destroy();
    pinger.sock.destroy();
  } finally {
    child.kill("SIGTERM");
  }
}

await main();
