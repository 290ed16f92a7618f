// The extensions (issue 19) through the real process: a server with -b is given a retry
// policy, unique keys, a dead letter and a delete-tube (with a job reserved during it),
// killed with SIGKILL, and started again on the same directory by this runtime and by
// the other one: every extension's state is back (front/open.ts restores the policies).
// And stats-conn / list-connections show each runtime's peer addresses.
//
// Run: node_modules/.bin/deno test -A tests/system/extensions_restart_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/extensions_restart_test.ts
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { dial } from "../harness/wire.ts";
import { HERE, kill9, OTHER, Scope, type Srv } from "../harness/durability.ts";

const scope = new Scope();
after(() => scope.cleanup());

async function scenario(first: Srv, second: Srv): Promise<void> {
  const dir = scope.dir();
  const s1 = await scope.start(first, ["-b", dir]);
  const a = await dial(s1.addr);
  const w = await dial(s1.addr);
  assert.equal(await a.cmd("set-dlq work 1 dead"), "DLQ_SET\r\n");
  assert.equal(await a.cmd("set-backoff slow 7 70"), "BACKOFF_SET\r\n");
  assert.equal(await a.cmd("use work"), "USING work\r\n");
  a.send("put-unique k1 5 0 60 1\r\na\r\n");
  assert.equal(await a.reply(), "INSERTED 1\r\n");
  a.send("put-unique k2 5 0 60 1\r\nb\r\n");
  assert.equal(await a.reply(), "INSERTED 2\r\n");
  assert.equal(await w.cmd("watch work"), "WATCHING 2\r\n");
  assert.equal(await w.cmd("reserve-job 1"), "RESERVED 1 1\r\na\r\n");
  assert.equal(await w.cmd("release 1 9 0"), "RELEASED\r\n"); // its one attempt: dead-lettered
  assert.equal(await a.cmd("use gone"), "USING gone\r\n");
  assert.equal(await a.put("c"), "INSERTED 3\r\n");
  assert.equal(await a.put("d"), "INSERTED 4\r\n");
  assert.equal(await w.cmd("reserve-job 4"), "RESERVED 4 1\r\nd\r\n");
  assert.equal(await a.cmd("delete-tube gone"), "DELETED 1\r\n");
  await kill9(s1);
  a.close();
  w.close();

  const s2 = await scope.start(second, ["-b", dir]);
  const b = await dial(s2.addr);
  const st1 = await b.cmd("stats-job 1");
  assert.match(st1, /\ntube: dead\nstate: buried\npri: 9\n/);
  assert.match(st1, /\ndlq-from-tube: work\n\r\n$/);
  assert.match(await b.cmd("stats-job 2"), /\nunique-key: k2\n\r\n$/);
  assert.equal(await b.cmd("stats-job 3"), "NOT_FOUND\r\n");
  assert.equal(await b.cmd("stats-job 4"), "NOT_FOUND\r\n");
  assert.match(
    await b.cmd("stats-tube work"),
    /\ndlq-max-attempts: 1\ndlq-tube: dead\nbackoff-base: 0\nbackoff-cap: 0\n/,
  );
  assert.match(await b.cmd("stats-tube slow"), /\ndlq-max-attempts: 0\ndlq-tube: \nbackoff-base: 7\nbackoff-cap: 70\n/);
  assert.equal(await b.cmd("use work"), "USING work\r\n");
  b.send("put-unique k2 5 0 60 1\r\nx\r\n");
  assert.equal(await b.reply(), "EXISTS 2\r\n");
  b.close();
  await kill9(s2);
}

async function peers(srv: Srv): Promise<void> {
  const s = await scope.start(srv, []);
  const a = await dial(s.addr);
  const b = await dial(s.addr);
  assert.equal(await b.cmd("watch t"), "WATCHING 2\r\n");
  const all = await a.cmd("list-connections");
  const addrs = [...all.matchAll(/^ {2}addr: (.*)$/gm)].map((m) => m[1]!);
  assert.equal(addrs.length, 2, all);
  for (const x of addrs) assert.match(x, /^127\.0\.0\.1:[1-9][0-9]*$/);
  assert.notEqual(addrs[0], addrs[1]);
  assert.match(
    await a.cmd("stats-conn"),
    new RegExp(`^OK \\d+\r\n---\nid: \\d+\naddr: ${addrs[0]!.replace(/\./g, "\\.")}\n`),
  );
  a.close();
  b.close();
  await kill9(s);
}

describe("stats-conn through the real server", () => {
  test(`${HERE.name}: every connection's peer address`, () => peers(HERE));
  test(`${OTHER.name}: every connection's peer address`, () => peers(OTHER));
});

describe("extensions after kill -9", () => {
  test(`${HERE.name} restarts on its own log`, () => scenario(HERE, HERE));
  test(`${OTHER.name} restarts on ${HERE.name}'s log`, () => scenario(HERE, OTHER));
});
