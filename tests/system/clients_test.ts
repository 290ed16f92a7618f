// Real beanstalkd client libraries, unchanged, against a fresh server each.
//
// Each script in tests/system/clients/ (the list: harness/clients.ts) drives one client through put, reserve, delete,
// release with delay, bury, kick, touch, watch/ignore, the peek commands and the
// three stats commands, checks every reply, and exits non-zero naming the step
// that went wrong. Each runs against the real beanstalkd first (which proves the
// script right) and then against tubeway under the runtime running this file
// (deno test → `deno run server.ts`, bun test → `bun run server.ts`).
//
// Run: node_modules/.bin/deno test -A tests/clients_test.ts
//      node_modules/.bin/bun test tests/clients_test.ts
// Install the non-npm clients with scripts/install-test-deps.sh.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT, RUNTIME } from "../harness/paths.ts";
import { beanstalkd, bunPgServer, bunServer, denoPgServer, denoServer, type Target } from "../harness/targets.ts";
import { type Client, clients, clientTest, runAgainst } from "../harness/clients.ts";

/** The tubeway server for the runtime running this file. */
const tubeway: Target = RUNTIME === "bun" ? bunServer : denoServer;
/** The same over PostgreSQL (--pg; a throwaway cluster, a schema per run). */
const tubewayPg: Target = RUNTIME === "bun" ? bunPgServer : denoPgServer;

async function runIfServer(client: Client, target: Target): Promise<void> {
  if (target === tubeway || target === tubewayPg) {
    assert.ok(existsSync(join(ROOT, "server.ts")), "server.ts does not exist yet, so tubeway cannot be started");
  }
  await runAgainst(client, target);
}

for (const client of clients) {
  const clientMissing = client.missing();
  for (const target of [beanstalkd, tubeway, tubewayPg]) {
    const name = `${client.name} against ${target.name}`;
    clientTest(test, name, clientMissing ?? target.unavailable(), () => runIfServer(client, target));
  }
}
