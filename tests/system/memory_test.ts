// Server memory and responsiveness under hostile and numerous clients (issue 7,
// items 2-4), measured on the server process from outside (/proc/PID/status VmRSS),
// with a cap that kills the server if a scenario goes wrong. Every scenario is bounded
// in count and time.
//
// Short variants run in npm test. TUBEWAY_SOAK=1 (deno task soak) runs the long ones:
// 1,000 never-reading clients for 20 s, an endless line for 10 s. Both open 10,000
// connections, the count: with fewer, the fixed part of a runtime's growth
// (V8's young generation on Deno) counts for more per connection (Deno at 4,000:
// 9.5-10 KB each, a bare Deno.listen server 8.6 KB). TUBEWAY_MEMORY_REFERENCE=1
// runs the same scenarios against beanstalkd 1.12, for the figures beside ours.
// Latency limits here are generous (a loaded 2-core CI box); the figures printed are
// what docs/reliability.md reports.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { BUN_SERVER, DENO, DENO_SERVER, ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { BEANSTALKD, type Running, startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { DENO_V8_FLAGS } from "../../adapters/deno_flags.ts";
import { endlessLine, leave, manyConnections, peekFlood, Prober, putJob, RssWatch, settled } from "../harness/load.ts";

const SOAK = process.env.TUBEWAY_SOAK === "1";
const REFERENCE = process.env.TUBEWAY_MEMORY_REFERENCE === "1";
const NAME = REFERENCE ? "beanstalkd" : RUNTIME;
const SERVER = REFERENCE ? [BEANSTALKD ?? "beanstalkd"] : RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const BARE_DENO_SERVER = [
  DENO,
  "run",
  `--v8-flags=${DENO_V8_FLAGS}`,
  "--allow-net",
  join(ROOT, "tests/harness/bare_deno_server.ts"),
];
const MiB = 2 ** 20;
const CAP = 3 * 1024 * MiB;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const mib = (b: number) => `${(b / MiB).toFixed(1)} MiB`;

/** Start the server (argv, by default the one under test), watch its RSS, run body, always stop it. */
async function withServer(body: (r: Running, watch: RssWatch) => Promise<void>, argv = SERVER): Promise<void> {
  const r = await startProcess(argv, []);
  const watch = new RssWatch(r.child!.pid!, CAP);
  try {
    await body(r, watch);
    assert.ok(!watch.capped, `server passed the ${mib(CAP)} cap and was killed`);
    assert.equal(r.child!.exitCode, null, `server exited:\n${r.output()}`);
  } finally {
    watch.stop();
    await r.stop();
  }
}

/** The server counts n connections besides the one asking. */
async function countConnections(r: Running, n: number): Promise<void> {
  const w = await dial(r.addr);
  const m = /current-connections: (\d+)/.exec(await w.cmd("stats"));
  w.close();
  assert.equal(Number(m?.[1]), n + 1);
}

describe(`memory and latency under hostile clients: ${NAME} server`, {
  skip: skipUnless(!REFERENCE || BEANSTALKD !== undefined, "beanstalkd not installed"),
}, () => {
  it("one client pipelining 4,000 peeks of a 60 KB job, never reading: bounded, and given back", async () => {
    await withServer(async (r, watch) => {
      const pid = r.child!.pid!;
      const id = await putJob(r.addr, 60_000);
      const start = await settled(pid, 1000);
      const probe = await Prober.start(r.addr);
      const socks = await peekFlood(r.addr, id, 1, 4000);
      await sleep(2000);
      const during = watch.sample();
      const worst = await probe.stop();
      await leave(socks);
      const after = await settled(pid);
      console.log(
        `${NAME}: 1 peek flooder: start ${mib(start)}, during ${mib(during)} (+${mib(during - start)}), ` +
          `peak ${mib(watch.peak)}, after leaving ${mib(after)}; others answered within ${worst} ms`,
      );
      assert.equal(probe.failure, undefined);
      assert.ok(watch.peak - start <= 16 * MiB, `grew by ${mib(watch.peak - start)} (target 16 MiB)`);
      assert.ok(after - start <= 32 * MiB, `${mib(after - start)} above the start after the client left`);
    });
  });

  const flooders = SOAK ? 1000 : 100;
  const floodMs = SOAK ? 20_000 : 3000;
  it(`${flooders} such clients for ${floodMs / 1000} s: RSS growth <= 128 MiB, every other client answered`, async () => {
    await withServer(async (r, watch) => {
      const pid = r.child!.pid!;
      const id = await putJob(r.addr, 60_000);
      const start = await settled(pid, 1000);
      const probe = await Prober.start(r.addr, 50);
      const socks = await peekFlood(r.addr, id, flooders, 4000);
      await sleep(floodMs);
      const worst = await probe.stop();
      const fresh = await dial(r.addr);
      const t0 = Date.now();
      assert.equal(await fresh.cmd("list-tube-used", 10_000), "USING default\r\n");
      const freshMs = Date.now() - t0;
      fresh.close();
      await leave(socks, 1000);
      const after = await settled(pid);
      console.log(
        `${NAME}: ${flooders} peek flooders, ${floodMs / 1000} s: start ${mib(start)}, peak ${mib(watch.peak)} ` +
          `(+${mib(watch.peak - start)}), after leaving ${mib(after)}; others answered within ${worst} ms, ` +
          `a fresh client in ${freshMs} ms`,
      );
      assert.equal(probe.failure, undefined);
      assert.ok(watch.peak - start <= 128 * MiB, `grew by ${mib(watch.peak - start)} (target 128 MiB)`);
      assert.ok(worst < 2000, `another client waited ${worst} ms (target 2 s)`);
      // Issue 21: others' worst wait within 2x beanstalkd's in the same test (1.12: 35 ms on
      // the VM of 2026-11-26, 2-13 ms when it was quiet). Bun 12-27 ms (quiet) since a turn is one
      // batch and pipelines in a long poll batch wait for a turn (adapters/bun.ts), 58-74 ms before,
      // 221-281 ms before sliced turns; Deno 15-79 ms. 150 ms: a shared CI box. The long run
      // only: 100 flooders for 3 s say little.
      if (SOAK && !REFERENCE) assert.ok(worst < 150, `another client waited ${worst} ms (target 150 ms)`);
    });
  });

  const lineMs = SOAK ? 10_000 : 2000;
  it(`an endless line at full speed for ${lineMs / 1000} s: others answered quickly`, async () => {
    await withServer(async (r, watch) => {
      const probe = await Prober.start(r.addr, 10);
      const sent = await endlessLine(r.addr, lineMs);
      const worst = await probe.stop();
      console.log(
        `${NAME}: endless line, ${mib(sent)} in ${lineMs / 1000} s: others answered within ${worst} ms ` +
          `(p99 ${probe.p99} ms, ${probe.count} round trips); peak RSS ${mib(watch.peak)}`,
      );
      assert.equal(probe.failure, undefined);
      assert.ok(probe.count > lineMs / 100, `only ${probe.count} round trips`);
      assert.ok(worst < 50, `another client waited ${worst} ms (target 50 ms)`);
      // The garbage is read at a pace (Connection: DISCARD_PAUSE_MS): read flat out, Bun
      // answered others' round trips in 11-16 ms at the 99th percentile (1.12: 1 ms).
      assert.ok(probe.p99 < 10, `99th percentile of others' round trips ${probe.p99} ms`);
    });
  });

  const conns = 10_000;
  /** RSS growth per connection of the server started from argv, with `conns` connections open and served. */
  async function perConnection(argv: string[], check?: (r: Running) => Promise<void>): Promise<number> {
    let per = 0;
    await withServer(async (r) => {
      const pid = r.child!.pid!;
      const start = await settled(pid, 1000);
      const socks = await manyConnections(r.addr, conns);
      const open = await settled(pid);
      per = (open - start) / conns;
      await check?.(r);
      await leave(socks);
    }, argv);
    return per;
  }
  const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;

  it(`${conns} open connections: all served, <= 8 KB each`, async () => {
    // Each side holds one fd per connection (Deno and Bun raise the soft limit to the hard one at start).
    const fds = Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1] ?? 0);
    assert.ok(fds >= conns + 500, `this test needs ulimit -n >= ${conns + 500} (hard limit); it is ${fds}`);
    const ours = await perConnection(SERVER, (r) => countConnections(r, conns));
    // Deno's own share, for the figures: a bare Deno.listen server with the same V8 flags.
    const bare = NAME === "deno"
      ? ` (a bare Deno.listen server: ${kb(await perConnection([...BARE_DENO_SERVER]))} each)`
      : "";
    console.log(`${NAME}: ${conns} connections: ${kb(ours)} each${bare}`);
    assert.ok(ours <= 8 * 1024, `${kb(ours)} per connection (target 8 KB)`);
  });
});
