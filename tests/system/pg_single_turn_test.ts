// A pipelined turn is one message to the database, its statements one implicit
// transaction (no BEGIN, no COMMIT: core/pg/pipelined.ts, adapters/pg_batch.ts). A turn
// of puts alone on a node alone is the put alone; beside another node the same turn
// carries the put's NOTIFY too, and the other node's waiting worker is woken by it. Seen
// from the database's statement log (log_statement = all, each line prefixed with its
// backend's pid), on the runtime running the test.
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

/** The simple-protocol statements in the log from `from` on (a turn's Query is one). */
function statements(log: string, from: number): string[] {
  const out: string[] = [];
  for (const entry of log.slice(from).split(/\n(?=\d+:)/)) {
    const m = /^\d+:\s*LOG:\s+statement:\s*([\s\S]*)$/.exec(entry);
    if (m) out.push(m[1]!.trim());
  }
  return out;
}

/** The log's statements after `from` that carry the put of `body` (its bytes are in the Query, in hex). */
function putOf(log: string, from: number, body: string): string[] {
  const hex = Buffer.from(body).toString("hex");
  return statements(log, from).filter((t) => t.includes(hex));
}

/** How many EXECUTEs a Query holds. */
function executes(text: string): number {
  return text.match(/(^|;)execute "/g)?.length ?? 0;
}

describe(`${target.name} --pg: a turn is one message, its own transaction`, { skip: skipWithoutPostgres }, () => {
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

  it("puts alone on a node alone: the put alone; beside another node: the put and its NOTIFY; never a BEGIN", async () => {
    const schema = uniqueSchema("single");
    const channel = `'tubeway.${schema}'`;
    const a = await target.start(["--pg", pg!.url, "--pg-schema", schema]);
    nodes.push(a);
    const producer = await wire(a);
    let from = pg!.log().length;
    for (let i = 0; i < 10; i++) {
      await putId(producer, `alone ${i}`);
      const sent = putOf(pg!.log(), from, `alone ${i}`);
      assert.equal(sent.length, 1, `put ${i} is one statement in the log:\n${pg!.log().slice(from, from + 3000)}`);
      assert.equal(executes(sent[0]!), 1, `a node alone sends the put alone: ${sent[0]}`);
      assert.ok(!sent[0]!.includes(channel), "a node alone notifies no one");
    }
    assert.ok(!statements(pg!.log(), from).some((t) => /^(begin|commit)\b/i.test(t)), "no BEGIN or COMMIT");

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
      const sent = putOf(pg!.log(), from, `w${i}`);
      assert.equal(sent.length, 1);
      assert.ok(
        executes(sent[0]!) >= 2 && sent[0]!.includes(channel),
        `the put and its NOTIFY in one Query: ${sent[0]}`,
      );
    }
    assert.ok(!statements(pg!.log(), from).some((t) => /^(begin|commit)\b/i.test(t)), "no BEGIN or COMMIT");

    /** Whether a's next put goes with a NOTIFY. */
    async function notifying(): Promise<boolean> {
      const at = pg!.log().length;
      await putId(producer, "probe");
      return putOf(pg!.log(), at, "probe").some((t) => t.includes(channel));
    }
  });
});
