// The wire-level suite, written once against dial() and registered per target by
// wire_test.ts (and pg_wire_test.ts, socket_activation_wire_test.ts,
// pg_three_nodes_test.ts): every command's happy path and errors, scheduling, timing,
// stats, one file per topic in tests/system/wire/.
//
// One server per target is shared by the tests that do not interfere (each test uses
// its own tube names and reads job ids from the replies); drain mode gets its own
// server. The tests that wait for real time (delay, TTR, pause, timeouts) run their
// scenarios concurrently inside one test, so a target takes about three seconds.
//
// Where tubeway deliberately differs from 1.12 (spec §0, waiter order), the suite
// holds the real beanstalkd (target `beanstalkd`) to the 1.12 answer, so the
// expectations here can themselves be checked against the reference binary.
import { after, before, describe, it as baseIt } from "node:test";
import assert from "node:assert/strict";
import { skipUnless } from "../harness/paths.ts";
import { beanstalkd, type Running, type Target } from "../harness/targets.ts";
import { type Conns, withConns } from "../harness/wire_checks.ts";
import { scalar } from "../../protocol/yaml.ts";
import type { WireContext } from "./wire/context.ts";
import { putPeekTests } from "./wire/put_peek.ts";
import { tubeTests } from "./wire/tubes.ts";
import { reserveTests } from "./wire/reserve.ts";
import { jobCommandTests } from "./wire/job_commands.ts";
import { statsTests } from "./wire/stats.ts";
import { schedulingTests } from "./wire/scheduling.ts";
import { timingTests } from "./wire/timing.ts";
import { drainTests } from "./wire/drain.ts";

/** How a target that is several servers behind one address runs the suite. */
export interface WireSuiteOptions {
  /**
   * Tests (by name) that read a view one server keeps of its own (its pid, its
   * connections, its list of tubes, its waiting clients), each with the reason: every
   * connection of such a test goes to the first of `Running.nodes`, the others running.
   */
  oneNode?: Record<string, string>;
}

/** Register the wire suite for one target. */
export function wireSuite(target: Target, options: WireSuiteOptions = {}): void {
  /** The reference 1.12 binary: held to 1.12's answers where tubeway deliberately differs. */
  const v112 = target === beanstalkd;
  /** A string value as stats/stats-job/stats-tube write it (tubeway quotes only values a YAML reader would misread). */
  const q = (s: string) => (v112 ? s : scalar(s));
  const missing = target.unavailable();

  describe(target.name, { skip: skipUnless(missing === undefined, missing ?? "") }, () => {
    let running: Running | undefined;
    /** Set while a test of options.oneNode runs. */
    let pinned = false;
    const srv = (): Running => {
      assert.ok(running, "server did not start");
      if (!pinned) return running;
      assert.ok(running.nodes?.[0], "a oneNode test needs a target with nodes");
      return running.nodes[0];
    };
    const names: string[] = [];
    const it = (name: string, fn: () => Promise<void>) => {
      names.push(name);
      baseIt(name, async () => {
        pinned = options.oneNode?.[name] !== undefined;
        try {
          await fn();
        } finally {
          pinned = false;
        }
      });
    };
    const session = (body: (c: Conns) => Promise<void>) => withConns(srv, body);

    before(async () => {
      running = await target.start([]);
    });
    after(async () => {
      await running?.stop();
    });

    // One file per topic, in this order (a test may rely on the earlier ones' connections being gone).
    const ctx: WireContext = { target, v112, q, it, session, srv };
    const topics = [putPeekTests, tubeTests, reserveTests, jobCommandTests, statsTests, schedulingTests, timingTests];
    for (const topic of [...topics, drainTests]) topic(ctx);

    if (options.oneNode) {
      baseIt("every test named in oneNode is one of the suite's", () => {
        assert.deepEqual(Object.keys(options.oneNode!).filter((n) => !names.includes(n)), []);
      });
    }
  });
}
