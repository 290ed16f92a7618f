// scripts/postgres.ts: a throwaway cluster whose maker was killed (a test process past
// its timeout, or stopped by hand: no hook of its ran) is stopped and removed when the
// next one is made, so that postmasters do not pile up across runs.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, DENO, ROOT, RUNTIME } from "../harness/paths.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";
import { accepts } from "../harness/wire.ts";
import { reapOrphans, startPostgres } from "../../scripts/postgres.ts";

/** The throwaway cluster whose server listens on `port` (postmaster.pid's fourth line). */
function clusterOn(port: number): string | undefined {
  return readdirSync(tmpdir()).filter((n) => n.startsWith("tubeway-pg-")).map((n) => join(tmpdir(), n)).find((d) => {
    try {
      return readFileSync(join(d, "data", "postmaster.pid"), "utf8").split("\n")[3] === String(port);
    } catch {
      return false;
    }
  });
}

describe("throwaway PostgreSQL clusters", { skip: skipWithoutPostgres }, () => {
  it("one whose maker was killed is stopped and removed when the next is made", { timeout: 120_000 }, async () => {
    const [cmd, ...args] = RUNTIME === "bun" ? [BUN, "run"] : [DENO, "run", "-A"];
    const child = spawn(cmd!, [...args, join(ROOT, "tests/harness/pg_orphan_child.ts")], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const port = await new Promise<number>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (d) => {
        out += d;
        const m = /^(\d+)\n/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once("exit", (code) => reject(new Error(`the child ended (${code}) before it made its cluster: ${out}`)));
    });
    const dir = clusterOn(port);
    assert.ok(dir, `no cluster listens on ${port}`);
    // its maker alive, a cluster is left alone
    assert.deepEqual(reapOrphans().filter((d) => d === dir), []);
    assert.ok(await accepts(port), "the cluster of a live process was stopped");
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
    assert.ok(await accepts(port), "killed, the child left its cluster running");

    const pg = await startPostgres();
    try {
      assert.equal(existsSync(dir), false, `${dir} is still there`);
      assert.equal(await accepts(port), false, `a server still accepts connections on ${port}`);
    } finally {
      pg.stop();
    }
  });
});
