// The protocol fuzzer (tests/harness/fuzz.ts) against the server under this file's
// runtime, as a process: mutated commands, bodies of the wrong length, NULs, huge
// numbers, over-long lines, resets, half-closes and mid-body disconnects. After every
// batch the process is alive, under its memory cap, a control client's reserved job is
// intact, and a fresh client is answered. (Issue 7: 0 crashes, 0 hangs.)
//
// Bounded here (a few seconds). The long run: `deno task fuzz` (10^6 inputs on each
// runtime); TUBEWAY_FUZZ_INPUTS and TUBEWAY_FUZZ_SEED override count and seed.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { BEANSTALKD, startProcess } from "../harness/targets.ts";
import { fuzz } from "../harness/fuzz.ts";

const INPUTS = Number(process.env.TUBEWAY_FUZZ_INPUTS ?? 10_000);
const SEED = Number(process.env.TUBEWAY_FUZZ_SEED ?? (RUNTIME === "bun" ? 7 : 11));
/** The server is killed (and the test fails) if its RSS passes this. */
const RSS_CAP_BYTES = 1024 * 2 ** 20;

/** TUBEWAY_FUZZ_REFERENCE=1: fuzz beanstalkd 1.12 instead, with the same inputs. */
const REFERENCE = process.env.TUBEWAY_FUZZ_REFERENCE === "1";
const SERVER = REFERENCE ? [BEANSTALKD ?? "beanstalkd"] : RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const NAME = REFERENCE ? "beanstalkd" : RUNTIME;

describe(`fuzzing the ${NAME} server`, () => {
  it(`${INPUTS} fuzzed inputs (seed ${SEED}): no crash, no hang, the control client's job intact`, async () => {
    const r = await startProcess(SERVER, []);
    let peak = 0;
    try {
      const t0 = Date.now();
      // the server's own lines say why it closed a connection (a drop, an error), when it did
      const withLog = (e: unknown) => {
        throw new Error(`${e instanceof Error ? e.message : String(e)}\nserver output:\n${r.output().slice(-4000)}`);
      };
      const res = await fuzz(r.addr, {
        seed: SEED,
        inputs: INPUTS,
        parallel: 16,
        perConnection: 60,
        afterBatch: (batch) => {
          const c = r.child!;
          assert.ok(c.exitCode === null && c.signalCode === null, `server died in batch ${batch}:\n${r.output()}`);
          const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${c.pid}/status`, "utf8"));
          const rss = Number(m?.[1]) * 1024;
          peak = Math.max(peak, rss);
          if (rss > RSS_CAP_BYTES) {
            c.kill("SIGKILL");
            assert.fail(`server RSS ${rss >> 20} MiB passed the cap in batch ${batch}`);
          }
        },
      }).catch(withLog);
      const s = (Date.now() - t0) / 1000;
      console.log(
        `fuzz ${NAME}: ${res.inputs} inputs, ${res.connections} connections, ${res.batches} batches in ` +
          `${s.toFixed(1)} s; endings ${JSON.stringify(res.endings)}; peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`,
      );
      assert.equal(res.inputs, INPUTS);
    } finally {
      await r.stop();
    }
  });
});
