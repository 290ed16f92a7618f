// The wire suite (wire_suite.ts) against every tubeway target: in-process, `deno run
// server.ts`, `bun run server.ts` and the compiled binary.
//
// Run: node_modules/.bin/deno test -A tests/wire_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/wire_test.ts
// Set TUBEWAY_WIRE_REFERENCE=1 to run the suite against beanstalkd 1.12 instead, which
// checks the suite's own expectations (it holds 1.12 to its answers where tubeway differs).
import { beanstalkd, tubewayTargets } from "../harness/targets.ts";
import { wireSuite } from "./wire_suite.ts";

if (process.env.TUBEWAY_WIRE_REFERENCE === "1") wireSuite(beanstalkd);
else for (const target of tubewayTargets) wireSuite(target);
