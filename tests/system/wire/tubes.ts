// The wire suite's tests of use, watch, ignore and their lists; when tubes are created and removed.
import assert from "node:assert/strict";
import { eventually, list, putId, statsJob, statsTube, tubeName } from "../../harness/wire_checks.ts";
import type { WireContext } from "./context.ts";

/** Register them, in this order. */
export function tubeTests({ it, session, q }: WireContext): void {
  it("use and list-tube-used; tube name rules", () =>
    session(async (c) => {
      const w = await c.dial();
      assert.equal(await w.cmd("list-tube-used"), "USING default\r\n");
      const t = tubeName("use");
      assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`);
      assert.equal(await w.cmd("list-tube-used"), `USING ${t}\r\n`);
      const id = await putId(w, "in-used-tube");
      assert.equal((await statsJob(w, id)).str("tube"), q(t));
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      const odd = "Az09-+/;.$_()";
      assert.equal(await w.cmd(`use ${odd}`), `USING ${odd}\r\n`);
      const n200 = "n".repeat(200);
      assert.equal(await w.cmd(`use ${n200}`), `USING ${n200}\r\n`);
      for (
        const bad of ["n".repeat(201), "-lead", "a*b", "a b", "", " two", "trail ", "caf\xe9", "a\tb"]
      ) {
        assert.equal(await w.cmd(`use ${bad}`), "BAD_FORMAT\r\n", `use ${JSON.stringify(bad)}`);
      }
      assert.equal(await w.cmd("use"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("list-tube-used"), `USING ${n200}\r\n`, "a bad use changes nothing");
      assert.equal(await w.cmd("list-tube-used x"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("use default"), "USING default\r\n");
    }));

  it("watch, ignore, list-tubes-watched (order after removal), NOT_IGNORED", () =>
    session(async (c) => {
      const w = await c.dial();
      const [a, b, t3] = [tubeName("wa"), tubeName("wb"), tubeName("wc")];
      assert.equal(await w.cmd("list-tubes-watched"), list("default"));
      assert.equal(await w.cmd(`watch ${a}`), "WATCHING 2\r\n");
      assert.equal(await w.cmd(`watch ${a}`), "WATCHING 2\r\n", "watching twice counts once");
      assert.equal(await w.cmd(`watch ${b}`), "WATCHING 3\r\n");
      assert.equal(await w.cmd(`watch ${t3}`), "WATCHING 4\r\n");
      assert.equal(await w.cmd("list-tubes-watched"), list("default", a, b, t3));
      assert.equal(await w.cmd(`ignore ${a}`), "WATCHING 3\r\n");
      // Removal moves the last entry into the freed slot (1.12's multiset).
      assert.equal(await w.cmd("list-tubes-watched"), list("default", t3, b));
      assert.equal(await w.cmd(`ignore ${tubeName("never")}`), "WATCHING 3\r\n", "ignoring an unwatched tube");
      assert.equal(await w.cmd("ignore default"), "WATCHING 2\r\n");
      assert.equal(await w.cmd(`ignore ${b}`), "WATCHING 1\r\n");
      assert.equal(await w.cmd(`ignore ${t3}`), "NOT_IGNORED\r\n");
      assert.equal(await w.cmd("list-tubes-watched"), list(t3));
      assert.equal(await w.cmd("watch -x"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("ignore a*"), "BAD_FORMAT\r\n");
      assert.equal(await w.cmd("watch"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("ignore"), "UNKNOWN_COMMAND\r\n");
      assert.equal(await w.cmd("list-tubes-watched "), "BAD_FORMAT\r\n");
    }));

  it("tubes are created by use/watch and removed when nothing references them", () =>
    session(async (c) => {
      const obs = await c.dial();
      const w = await c.dial();
      const tubes = async () => (await obs.cmd("list-tubes")).split("\n").slice(1, -1).map((l) => l.slice(2));
      const [u, v, j, p] = [tubeName("life-use"), tubeName("life-watch"), tubeName("life-job"), tubeName("life-p")];
      assert.ok(!(await tubes()).includes(u));
      assert.equal(await obs.cmd(`stats-tube ${u}`), "NOT_FOUND\r\n", "stats-tube does not create");
      assert.equal(await obs.cmd(`pause-tube ${u} 10`), "NOT_FOUND\r\n", "pause-tube does not create");
      assert.equal(await obs.cmd(`ignore ${u}`), "WATCHING 1\r\n", "ignore does not create");
      assert.ok(!(await tubes()).includes(u));
      await w.cmd(`use ${u}`);
      assert.ok((await tubes()).includes(u), "use creates");
      await w.cmd("use default");
      assert.ok(!(await tubes()).includes(u), "unused tube removed");
      await w.cmd(`watch ${v}`);
      assert.ok((await tubes()).includes(v), "watch creates");
      assert.equal((await statsTube(obs, v)).num("current-watching"), 1);
      await w.cmd(`ignore ${v}`);
      assert.ok(!(await tubes()).includes(v), "unwatched tube removed");
      await w.cmd(`use ${j}`);
      const id = await putId(w, "keeps the tube");
      await w.cmd("use default");
      assert.ok((await tubes()).includes(j), "a job keeps its tube");
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      assert.ok(!(await tubes()).includes(j), "tube removed with its last job");
      await w.cmd(`use ${p}`);
      assert.equal(await obs.cmd(`pause-tube ${p} 100`), "PAUSED\r\n");
      await w.cmd("use default");
      assert.ok(!(await tubes()).includes(p), "a pause does not keep a tube");
      await w.cmd(`use ${p}`);
      assert.equal((await statsTube(obs, p)).num("pause"), 0, "the pause went with the tube");
      // A closing connection drops its references too.
      w.close();
      await eventually("tube of a closed connection removed", tubes, (ts) => !ts.includes(p));
      assert.ok((await tubes()).includes("default"), "default is never removed");
    }));
}
