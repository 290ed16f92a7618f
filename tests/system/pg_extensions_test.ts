// The extension commands (docs/extensions.md) on a node over PostgreSQL: capabilities
// lists what this engine serves, list-jobs pages with its offset as on the in-memory
// engine, and an extension the engine lacks is UNKNOWN_COMMAND, as on a beanstalkd.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME } from "../harness/paths.ts";
import { bunPgServer, denoPgServer } from "../harness/targets.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";
import { dial } from "../harness/wire.ts";
import { putId } from "./wire_suite.ts";

const target = RUNTIME === "bun" ? bunPgServer : denoPgServer;

describe(`${target.name}: extensions`, { skip: skipWithoutPostgres }, () => {
  it("capabilities lists what it serves; list-jobs pages by offset; the others are unknown", async () => {
    const n = await target.start([]);
    const w = await dial(n.addr);
    try {
      const caps = await w.cmd("capabilities");
      const listed = [...caps.matchAll(/^- (\S+)$/gm)].map((m) => m[1]);
      assert.ok(listed.includes("list-jobs") && listed.includes("ping"), caps);
      assert.ok(!listed.includes("delete-tube") && !listed.includes("put-unique"), caps);
      assert.equal(await w.cmd("delete-tube default"), "UNKNOWN_COMMAND\r\n");
      await w.cmd("use pages");
      const ids = [];
      for (let i = 0; i < 4; i++) ids.push(await putId(w, `job${i}`));
      const page = await w.cmd("list-jobs pages ready 2 1");
      assert.deepEqual([...page.matchAll(/- id: (\d+)/g)].map((m) => Number(m[1])), ids.slice(1, 3), page);
      assert.equal(await w.cmd("ping"), "PONG\r\n", "the connection goes on");
    } finally {
      w.close();
      await n.stop();
    }
  });
});
