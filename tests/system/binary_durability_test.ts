// The write-ahead log in the single-file executable (bun build --compile): what it
// acknowledges survives kill -9, including a restart by the other runtime's server.
import { after, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binary, bunServer, denoServer, type Running } from "../harness/targets.ts";
import { RUNTIME } from "../harness/paths.ts";
import { dial } from "../harness/wire.ts";

const dir = mkdtempSync(join(tmpdir(), "tubeway-binlog-bin-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function killed(s: Running) {
  await new Promise<void>((resolve) => {
    s.child!.once("exit", () => resolve());
    s.child!.kill("SIGKILL");
  });
}

it(
  "the compiled binary's log survives kill -9 and is read by the runtime's own server",
  { timeout: 120_000 },
  async () => {
    const first = await binary.start(["-b", dir, "-f", "0"]);
    const w = await dial(first.addr);
    assert.equal(await w.cmd("use bin"), "USING bin\r\n");
    assert.equal(await w.put("kept", 7), "INSERTED 1\r\n");
    assert.equal(await w.put("buried"), "INSERTED 2\r\n");
    assert.equal(await w.put("gone"), "INSERTED 3\r\n");
    assert.equal(await w.cmd("reserve-job 2"), "RESERVED 2 6\r\nburied\r\n");
    assert.equal(await w.cmd("bury 2 9"), "BURIED\r\n");
    assert.equal(await w.cmd("delete 3"), "DELETED\r\n");
    await killed(first);
    w.close();

    const second = await (RUNTIME === "bun" ? bunServer : denoServer).start(["-b", dir]);
    try {
      const r = await dial(second.addr);
      assert.equal(await r.cmd("peek 1"), "FOUND 1 4\r\nkept\r\n");
      assert.match(await r.cmd("stats-job 1"), /\ntube: bin\nstate: ready\npri: 7\n/);
      assert.match(await r.cmd("stats-job 2"), /\nstate: buried\npri: 9\n/);
      assert.equal(await r.cmd("peek 3"), "NOT_FOUND\r\n");
      assert.match(await r.put("new"), /^INSERTED (\d+)\r\n$/);
      r.close();
    } finally {
      await second.stop();
    }
  },
);
