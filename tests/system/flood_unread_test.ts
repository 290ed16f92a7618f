// Clients that keep writing and never read (issue 21, section 1): connections that each
// write `peek <id>` of a 60 KB job continuously, for the whole scenario, and never read
// a byte. The server stops running their commands once 64 KiB of replies wait; it must
// also stop holding their input: its RSS (from /proc/PID/status, outside) stays within
// a fixed bound, another client keeps getting answers, and what a client made the
// server hold is given back once it leaves.
//
// The flooders are a process of their own (tests/harness/flood_unread_client.ts, always
// on Deno, whose sockets read nothing unless asked), and so is the prober: the test
// process's own garbage collection stays out of the figures.
//
// npm test: 200 flooders for 5 s, one for 5 s. TUBEWAY_SOAK=1 (npm run soak): the
// issue's shape, 1,000 flooders and one for 20 s.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { type Running, startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { Prober, putJob, RssWatch, settled, UnreadFlood } from "../harness/load.ts";

const SOAK = process.env.TUBEWAY_SOAK === "1";
const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const MiB = 2 ** 20;
/** Past this the server is killed: the flood is not allowed to take the machine. */
const CAP = 2 * 1024 * MiB;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const mib = (b: number) => `${(b / MiB).toFixed(1)} MiB`;

/** Start the server, watch its RSS, run body, always stop it. */
async function withServer(body: (r: Running, watch: RssWatch) => Promise<void>): Promise<void> {
  const r = await startProcess(SERVER, []);
  const watch = new RssWatch(r.child!.pid!, CAP);
  try {
    await body(r, watch);
    assert.ok(!watch.capped, `server passed the ${mib(CAP)} cap and was killed:\n${r.output()}`);
    assert.equal(r.child!.exitCode, null, `server exited:\n${r.output()}`);
  } finally {
    watch.stop();
    await r.stop();
  }
}

interface Figures {
  start: number;
  peak: number;
  after: number;
  worst: number;
  p99: number;
  sent: number;
  closedByServer: number;
}

/** `clients` flooders for floodMs against a fresh server; the figures, printed. */
async function flood(clients: number, floodMs: number): Promise<Figures> {
  let f: Figures | undefined;
  await withServer(async (r, watch) => {
    const pid = r.child!.pid!;
    const id = await putJob(r.addr, 60_000);
    const start = await settled(pid, 1000);
    watch.peak = start;
    const probe = await Prober.start(r.addr, 50);
    const fl = await UnreadFlood.start(r.addr, id, clients);
    await sleep(floodMs);
    const worst = await probe.stop();
    const fresh = await dial(r.addr);
    assert.equal(await fresh.cmd("list-tube-used", 10_000), "USING default\r\n");
    fresh.close();
    const { sent, closedByServer } = await fl.stop();
    await sleep(500);
    const after = await settled(pid);
    f = { start, peak: watch.peak, after, worst, p99: probe.p99, sent, closedByServer };
    console.log(
      `${RUNTIME}: ${clients} unread flooder(s), ${floodMs / 1000} s: start ${mib(start)}, peak ${mib(watch.peak)} ` +
        `(+${mib(watch.peak - start)}), after leaving ${mib(after)} (+${mib(after - start)}); ` +
        `they sent ${mib(sent)}, ${closedByServer} closed by the server; ` +
        `others answered within ${worst} ms (p99 ${probe.p99} ms)`,
    );
    assert.equal(probe.failure, undefined, `the prober failed: ${probe.failure}`);
  });
  return f!;
}

describe(`clients that flood and never read: ${RUNTIME} server`, () => {
  const many = SOAK ? 1000 : 200;
  const manyMs = SOAK ? 10_000 : 5000;
  it(`${many} clients flooding peeks for ${manyMs / 1000} s, never reading: RSS growth <= 128 MiB`, async () => {
    const f = await flood(many, manyMs);
    assert.ok(f.peak - f.start <= 128 * MiB, `grew by ${mib(f.peak - f.start)} (target 128 MiB)`);
    assert.ok(f.worst < 2000, `another client waited ${f.worst} ms (target 2 s)`);
  });

  const oneMs = SOAK ? 20_000 : 5000;
  it(`one client flooding peeks for ${oneMs / 1000} s: RSS growth <= 16 MiB, given back after it leaves`, async () => {
    const f = await flood(1, oneMs);
    assert.ok(f.peak - f.start <= 16 * MiB, `grew by ${mib(f.peak - f.start)} (target 16 MiB)`);
    assert.ok(f.after - f.start <= 4 * MiB, `${mib(f.after - f.start)} still held after it left (target 4 MiB)`);
  });
});
