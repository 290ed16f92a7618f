// The wire suite (wire_suite.ts) against one tubeway node over PostgreSQL (--pg), on
// Deno, on Bun and as the compiled executable, with a throwaway cluster
// (harness/postgres.ts) and a schema per server.
//
// Run: node_modules/.bin/deno test -A tests/system/pg_wire_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/pg_wire_test.ts
import { binaryPgServer, bunPgServer, denoPgServer } from "../harness/targets.ts";
import { wireSuite } from "./wire_suite.ts";

for (const target of [denoPgServer, bunPgServer, binaryPgServer]) wireSuite(target);
