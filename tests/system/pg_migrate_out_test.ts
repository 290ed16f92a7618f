// `tubeway migrate --to DIR` when the disk fills part-way: the export fails and takes
// back what it wrote, so DIR is as empty as it was found. A partial log would be
// served by `tubeway -b DIR` as if it were the whole database (every job the write
// did not reach silently gone). The export runs in process over files kept in memory
// whose "disk" holds less than the jobs (tests/harness/files_memory.ts), against a
// schema a real --pg node filled.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { acquirePostgres, type Postgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { MemoryFiles } from "../harness/files_memory.ts";
import { migrateOut } from "../../front/migrate_out.ts";
import { pgClient } from "../../adapters/pg_client.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const JOBS = 200;
const BODY = "x".repeat(1000);

let pg: Postgres | undefined;
let release = () => {};
before(async () => {
  if (skipWithoutPostgres) return;
  ({ pg, release } = await acquirePostgres());
});
after(() => release());

describe(`tubeway migrate --to onto a disk that fills (${RUNTIME})`, { skip: skipWithoutPostgres }, () => {
  it(
    "fails, leaves the directory empty, and the same export succeeds once there is room",
    { timeout: 60_000 },
    async () => {
      const schema = uniqueSchema("out");
      const node = await startProcess(SERVER, ["--pg", pg!.url, "--pg-schema", schema]);
      try {
        const w = await dial(node.addr);
        for (let i = 0; i < JOBS; i++) assert.match(await w.put(BODY), /^INSERTED \d+\r\n$/);
        w.close();
      } finally {
        await node.stop();
      }
      const files = new MemoryFiles(["/out"]);
      files.capacity = (JOBS * BODY.length) / 2;
      const said: string[] = [];
      const sql = pgClient(pg!.url, (l) => said.push(l));
      try {
        const env = { files, sql, target: "test", say: (l: string) => said.push(l), nowWallMs: () => Date.now() };
        const failed = await migrateOut(env, schema, "/out");
        assert.equal(failed.kind, "failed", JSON.stringify(failed));
        assert.deepEqual(files.list("/out"), [], "what the failed export wrote is taken back");
        assert.match(failed.kind === "failed" ? failed.message : "", /removed what it wrote|nothing is left/);
        files.capacity = Infinity;
        const done = await migrateOut(env, schema, "/out");
        assert.equal(done.kind, "done", JSON.stringify(done));
        assert.match(done.kind === "done" ? done.lines[0]! : "", new RegExp(`^exported ${JOBS} jobs \\(${JOBS} ready`));
      } finally {
        await sql.close();
      }
    },
  );
});
