// The wire suite's tests of what real time does: delays, TTR expiry, DEADLINE_SOON, timeouts, a 1 s pause, uptime
// (concurrently, so a target takes seconds, not tens).
import assert from "node:assert/strict";
import type { Wire } from "../../harness/wire.ts";
import {
  jobReply,
  onlyTube,
  putId,
  sleep,
  stats,
  statsJob,
  statsTube,
  timed,
  watchOnly,
} from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function timingTests({ it, session, v112 }: WireContext): void {
  it("timing: delay, TTR expiry, DEADLINE_SOON (ttr 1 and 2), TIMED_OUT, pause 1 s, uptime", () =>
    session(async (c) => {
      const obs = await c.dial();
      const s0 = await stats(obs);
      /** A connection using and watching (only) a fresh tube. */
      const onTube = async (prefix: string): Promise<[Wire, string]> => {
        const w = await c.dial();
        const t = await onlyTube(w, prefix);
        return [w, t];
      };

      const delayed = async () => {
        const [w] = await onTube("delay");
        const t0 = Date.now();
        const id = await putId(w, "later", 0, 1);
        const sj = await statsJob(w, id);
        assert.equal(sj.str("state"), "delayed");
        assert.ok(sj.num("time-left") <= 1);
        assert.equal(await w.cmd("peek-ready"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("reserve-with-timeout 5", 6000), jobReply("RESERVED", id, "later"));
        const ms = Date.now() - t0;
        assert.ok(ms >= 900 && ms < 3000, `delayed job became ready after ${ms} ms`);
        assert.equal((await statsJob(w, id)).num("delay"), 1);
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      };

      const ttrExpiry = async () => {
        const [holder, t] = await onTube("ttr");
        const id = await putId(holder, "slow", 0, 0, 1);
        assert.equal(await holder.cmd("reserve"), jobReply("RESERVED", id, "slow"));
        const t0 = Date.now();
        const other = await c.dial();
        await watchOnly(other, t);
        const got = other.cmd("reserve-with-timeout 5", 6000);
        if (v112) {
          // 1.12's TTR race (spec §4.4, issues #262/#380) can leave the job reserved
          // until its holder sends any command; nudge it. tubeway must not need this.
          await sleep(1500);
          assert.equal(await holder.cmd("list-tube-used"), `USING ${t}\r\n`);
        }
        assert.equal(await got, jobReply("RESERVED", id, "slow"));
        const ms = Date.now() - t0;
        assert.ok(ms >= 700 && ms < 3000, `TTR 1 expired after ${ms} ms`);
        const sj = await statsJob(other, id);
        assert.equal(sj.num("timeouts"), 1);
        assert.equal(sj.num("reserves"), 2);
        assert.equal(sj.num("releases"), 0);
        assert.equal(await holder.cmd(`delete ${id}`), "NOT_FOUND\r\n", "no longer the holder's");
        assert.equal(await other.cmd(`delete ${id}`), "DELETED\r\n");
      };

      const deadlineSoonTtr1 = async () => {
        const [w] = await onTube("ds1");
        const id = await putId(w, "ttr1", 0, 0, 1);
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "ttr1"));
        const [r, ms] = await timed(w.cmd("reserve-with-timeout 5"));
        assert.equal(r, "DEADLINE_SOON\r\n");
        assert.ok(ms < 500, `ttr 1: DEADLINE_SOON after ${ms} ms, expected at once`);
        assert.equal((await statsJob(w, id)).str("state"), "reserved", "DEADLINE_SOON leaves the job reserved");
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      };

      const deadlineSoonTtr2 = async () => {
        const [w] = await onTube("ds2");
        const id = await putId(w, "ttr2", 0, 0, 2);
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "ttr2"));
        const [r, ms] = await timed(w.cmd("reserve"));
        assert.equal(r, "DEADLINE_SOON\r\n");
        assert.ok(ms >= 700 && ms < 1900, `ttr 2: DEADLINE_SOON after ${ms} ms, expected about 1 s`);
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      };

      const timedOut = async () => {
        const [w] = await onTube("to");
        const [r, ms] = await timed(w.cmd("reserve-with-timeout 1"));
        assert.equal(r, "TIMED_OUT\r\n");
        assert.ok(ms >= 900 && ms < 3000, `reserve-with-timeout 1 answered after ${ms} ms`);
      };

      const pausedOneSecond = async () => {
        const [w, t] = await onTube("p1");
        const id = await putId(w, "paused");
        assert.equal(await w.cmd(`pause-tube ${t} 1`), "PAUSED\r\n");
        const [r, ms] = await timed(w.cmd("reserve", 5000));
        assert.equal(r, jobReply("RESERVED", id, "paused"));
        assert.ok(ms >= 800 && ms < 3000, `pause 1: reserved after ${ms} ms`);
        const st = await statsTube(w, t);
        assert.equal(st.num("pause"), 0, "an expired pause reads 0");
        assert.equal(st.num("pause-time-left"), 0);
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      };

      await Promise.all([
        delayed(),
        ttrExpiry(),
        deadlineSoonTtr1(),
        deadlineSoonTtr2(),
        timedOut(),
        pausedOneSecond(),
      ]);
      const s1 = await stats(obs);
      assert.equal(s1.num("job-timeouts") - s0.num("job-timeouts"), 1, "exactly one TTR expiry");
      assert.ok(s1.num("uptime") > s0.num("uptime"), `uptime ${s0.num("uptime")} -> ${s1.num("uptime")}`);
    }));
}
