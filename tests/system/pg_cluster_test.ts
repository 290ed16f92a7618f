// The throwaway PostgreSQL cluster the --pg tests run against (tests/harness/postgres.ts):
// it starts on 127.0.0.1 only, durable (fsync, synchronous_commit), and leaves nothing
// behind when stopped.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import postgres from "postgres";
import { skipWithoutPostgres, startPostgres } from "../harness/postgres.ts";

describe("throwaway PostgreSQL cluster", { skip: skipWithoutPostgres }, () => {
  it("starts durable on 127.0.0.1, stops and removes its directory", async () => {
    const pg = await startPostgres();
    let dir = "";
    try {
      const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql.unsafe(
          "select current_setting('fsync') f, current_setting('synchronous_commit') s, " +
            "current_setting('listen_addresses') l, current_setting('unix_socket_directories') d",
        );
        assert.deepEqual([row!.f, row!.s, row!.l], ["on", "on", "127.0.0.1"]);
        dir = row!.d as string;
        assert.ok(existsSync(dir), `socket directory ${dir}`);
      } finally {
        await sql.end();
      }
    } finally {
      pg.stop();
    }
    assert.ok(!existsSync(dir), "directory removed");
  });
});
