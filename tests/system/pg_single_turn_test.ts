// A turn of puts alone on a node alone is ONE statement, sent as a transaction of its own
// (no BEGIN, no COMMIT: core/pg/turn.ts). Beside another node the same turn has two
// statements (the put and its NOTIFY), so it is a transaction, and the other node's
// waiting worker is woken by it. Seen from the database's statement log (log_statement =
// all, each line prefixed with its backend's pid), on the runtime running the test.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME } from "../harness/paths.ts";
import { bunServer, denoServer, type Running } from "../harness/targets.ts";
import {
  type ControlledPostgres,
  skipWithoutPostgres,
  startControlledPostgres,
  uniqueSchema,
} from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { putId, sleep } from "../harness/wire_checks.ts";

const target = RUNTIME === "bun" ? bunServer : denoServer;

/** The log's statements from `from` on, each as [backend pid, statement text]. */
function statements(log: string, from: number): [string, string][] {
  const out: [string, string][] = [];
  for (const entry of log.slice(from).split(/\n(?=\d+:)/)) {
    const m = /^(\d+):\s*LOG:\s+(?:statement|execute [^:]*):\s*([\s\S]*)$/.exec(entry);
    if (m) out.push([m[1]!, m[2]!.trim()]);
  }
  return out;
}

/** The put statements in `log` after `from`, and whether each came right after a BEGIN of the same backend. */
function puts(log: string, from: number, schema: string): { text: string; inBegin: boolean }[] {
  const last = new Map<string, string>();
  const found: { text: string; inBegin: boolean }[] = [];
  for (const [pid, text] of statements(log, from)) {
    if (text.includes(`insert into ${schema}.jobs`)) {
      found.push({ text, inBegin: /^begin\b/i.test(last.get(pid) ?? "") });
    }
    last.set(pid, text);
  }
  return found;
}

describe(`${target.name} --pg: a turn of one statement is its own transaction`, { skip: skipWithoutPostgres }, () => {
  let pg: ControlledPostgres | undefined;
  const nodes: Running[] = [];
  const open: Wire[] = [];
  before(async () => {
    pg = await startControlledPostgres(["log_statement=all", "log_line_prefix=%p:"]);
  });
  after(async () => {
    for (const w of open) w.close();
    for (const n of nodes) await n.stop();
    await pg?.stop();
  });

  async function wire(n: Running): Promise<Wire> {
    const w = await dial(n.addr);
    open.push(w);
    return w;
  }

  it("puts alone on a node alone: no BEGIN; beside another node: BEGIN, the put, its NOTIFY", async () => {
    const schema = uniqueSchema("single");
    const a = await target.start(["--pg", pg!.url, "--pg-schema", schema]);
    nodes.push(a);
    const producer = await wire(a);
    let from = pg!.log().length;
    for (let i = 0; i < 10; i++) await putId(producer, `alone ${i}`);
    const alone = puts(pg!.log(), from, schema);
    assert.equal(alone.length, 10, `the log shows the ten puts:\n${pg!.log().slice(from, from + 3000)}`);
    assert.equal(alone.filter((p) => p.inBegin).length, 0, "no put of a node alone came after a BEGIN");
    assert.ok(alone.every((p) => !p.text.includes("pg_notify")), "a node alone notifies no one");

    const b = await target.start(["--pg", pg!.url, "--pg-schema", schema]);
    nodes.push(b);
    const worker = await wire(b);
    assert.equal(await worker.cmd("watch woken"), "WATCHING 2\r\n");
    assert.equal(await worker.cmd("ignore default"), "WATCHING 1\r\n");
    // once a has heard b, a's turns notify it (of a tube b's worker does not watch)
    const t0 = Date.now();
    while (!(await notifying())) {
      assert.ok(Date.now() - t0 < 5000, "a never notified b");
      await sleep(50);
    }
    assert.equal(await producer.cmd("use woken"), "USING woken\r\n");
    from = pg!.log().length;
    for (let i = 0; i < 10; i++) {
      worker.send("reserve-with-timeout 5\r\n");
      await sleep(20); // the worker waits on b before the put on a
      const id = await putId(producer, `w${i}`);
      assert.match(await worker.reply(6000), new RegExp(`^RESERVED ${id} `), `round ${i}: b's worker woken`);
    }
    const beside = puts(pg!.log(), from, schema);
    assert.equal(beside.length, 10);
    assert.equal(beside.filter((p) => p.inBegin).length, 10, "beside another node, each put came after a BEGIN");

    /** Whether a's next put goes in a transaction with a NOTIFY. */
    async function notifying(): Promise<boolean> {
      const at = pg!.log().length;
      await putId(producer, "probe");
      const after = statements(pg!.log(), at).map(([, text]) => text);
      return after.some((t) => t.startsWith("select pg_notify"));
    }
  });
});
