// The tests' PostgreSQL: scripts/postgres.ts's throwaway clusters (shared with the
// bench), and the skip option of a test that needs one.
import { skipUnless } from "./paths.ts";
import { isRoot, PG_BIN, postgresUser } from "../../scripts/postgres.ts";

export * from "../../scripts/postgres.ts";

/** The `skip` option for a test that needs PostgreSQL (fails instead under TUBEWAY_REQUIRE_ALL=1). */
export const skipWithoutPostgres = skipUnless(
  PG_BIN !== undefined && (!isRoot || postgresUser() !== undefined),
  "PostgreSQL is not installed (apt-get install -y postgresql)",
);
