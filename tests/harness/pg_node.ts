// One node over the test process's PostgreSQL cluster, on a schema of its own, with a
// client on the same database for the test to look at the tables: registered as the
// hooks of the describe block that calls pgNode().
import { after, before } from "node:test";
import type { Running, Target } from "./targets.ts";
import { acquirePostgres, uniqueSchema } from "./postgres.ts";
import type { Wire } from "./wire.ts";
import { pgClient } from "../../adapters/pg_client.ts";
import type { SqlClient } from "../../core/pg/sql.ts";

export interface PgNode {
  /** The node's --pg-schema. */
  readonly schema: string;
  /** Set by the before hook. */
  node?: Running;
  sql?: SqlClient;
  /** Connections the test opened: closed by the after hook. */
  readonly open: Wire[];
}

export function pgNode(target: Target, schemaPrefix: string): PgNode {
  const h: PgNode = { schema: uniqueSchema(schemaPrefix), open: [] };
  let release = () => {};
  before(async () => {
    const got = await acquirePostgres();
    release = got.release;
    h.sql = pgClient(got.pg.url);
    h.node = await target.start(["--pg", got.pg.url, "--pg-schema", h.schema]);
  });
  after(async () => {
    for (const w of h.open) w.close();
    await h.node?.stop();
    await h.sql?.close();
    release();
  });
  return h;
}
