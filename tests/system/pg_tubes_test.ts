// A tube over PostgreSQL that its node lets go of (no jobs, no connection of the node
// refers to it) is forgotten in the database, its pause and counters with it, as 1.12
// drops an unused tube: used again, it starts afresh. Its count rows may be spread over
// several nodes and several slots of one node (a put-unique's count in the extensions'
// slot, a delete's in a turn's): the sessions below are compared byte for byte with the
// in-memory engine's. While tubes are forgotten and filled at once on two nodes, the
// counts stay right: list-tubes on a node that refers to none of them lists exactly the
// tubes that have jobs.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME } from "../harness/paths.ts";
import { bunPgServer, denoPgServer, inProcess, type Running } from "../harness/targets.ts";
import { skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { putId } from "../harness/wire_checks.ts";

const target = RUNTIME === "bun" ? bunPgServer : denoPgServer;

/**
 * A step on connection a or b: a command line (several, CRLF-separated, sent in one write),
 * or a put-like line with its body; `$id` is the last id put.
 */
type Step = [conn: "a" | "b", line: string, body?: string];

/** The replies of `steps` played on connections to `addrs` (a, b), each after what it answers. */
async function play(addrs: { a: Running["addr"]; b: Running["addr"] }, steps: Step[]): Promise<string[]> {
  const w = { a: await dial(addrs.a), b: await dial(addrs.b) };
  try {
    const out: string[] = [];
    const said: string[] = [];
    let id = "";
    for (const [k, text, body] of steps) {
      const line = text.replace("$id", id);
      if (body === undefined) {
        const lines = line.split("\r\n");
        w[k].send(lines.map((l) => l + "\r\n").join(""));
        for (const l of lines) {
          out.push(await w[k].reply());
          said.push(`${k} ${l}`);
        }
      } else {
        w[k].send(`${line}\r\n${body}\r\n`);
        const r = await w[k].reply();
        id = /^INSERTED (\d+)\r\n$/.exec(r)?.[1] ?? id;
        out.push(r.replace(/^INSERTED \d+/, "INSERTED"));
        said.push(`${k} ${line}`);
      }
    }
    return out.map((r, i) => `${said[i]}: ${r}`);
  } finally {
    w.a.close();
    w.b.close();
  }
}

/** Pause and counters in two slots of one node: put-unique counts in the extensions' slot, delete in a turn's. */
const TWO_SLOTS: Step[] = [
  ["a", "use foo"],
  ["a", "put-unique k 0 0 60 1", "x"],
  ["a", "delete $id"],
  ["a", "pause-tube foo 100"],
  ["a", "stats-tube foo"],
  ["a", "use default"],
  ["a", "stats-tube foo"],
  ["a", "pause-tube foo 1"],
  ["a", "use foo"],
  ["a", "stats-tube foo"],
  ["a", "put 0 0 60 1", "y"],
  ["a", "delete-tube foo"], // its count in the extensions' slot, the put's in a turn's
  ["a", "use default"],
  ["a", "use foo"],
  ["a", "stats-tube foo"],
];

/** Let go of and used again in one write: the turn that forgets it comes after both. */
const ONE_WRITE: Step[] = [
  ["a", "use foo"],
  ["a", "pause-tube foo 100"],
  ["a", "use default\r\nuse foo\r\nstats-tube foo"],
];

/** Its last job deleted while no connection referred to it. */
const EMPTIED: Step[] = [
  ["a", "use baz"],
  ["a", "put 0 0 60 1", "x"],
  ["a", "pause-tube baz 100"],
  ["a", "use default"],
  ["b", "delete $id"],
  ["a", "use baz"],
  ["a", "stats-tube baz"],
];

/** Over PostgreSQL a on node A, b on node B: the put counted on A, its delete on B. */
const TWO_NODES: Step[] = [
  ["a", "use bar"],
  ["a", "put 0 0 60 1", "x"],
  ["b", "delete $id"],
  ["a", "pause-tube bar 100"],
  ["a", "stats-tube bar"],
  ["a", "use default"],
  ["b", "stats-tube bar"],
  ["a", "stats-tube bar"],
  ["a", "use bar"],
  ["a", "stats-tube bar"],
];

describe(`${target.name}: a tube let go of`, { skip: skipWithoutPostgres }, () => {
  let a: Running, b: Running, mem: Running;
  before(async () => {
    const schema = uniqueSchema("tubes");
    // later flags override earlier ones: both nodes on the same schema
    a = await target.start(["--pg-schema", schema]);
    b = await target.start(["--pg-schema", schema]);
    mem = await inProcess.start([]);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await mem?.stop();
  });

  for (
    const [name, steps, nodes] of [
      ["in two slots of one node", TWO_SLOTS, 1],
      ["in one write", ONE_WRITE, 1],
      ["after a delete took its last job", EMPTIED, 1],
      ["on two nodes", TWO_NODES, 2],
    ] as const
  ) {
    it(`starts afresh when used again, its counts ${name}`, async () => {
      const want = await play({ a: mem.addr, b: mem.addr }, [...steps]);
      const got = await play({ a: a.addr, b: nodes === 2 ? b.addr : a.addr }, [...steps]);
      for (let i = 0; i < want.length; i++) assert.equal(got[i], want[i]);
      // spot check: the session does what it says
      assert.match(want.at(-1)!, /\ntotal-jobs: 0\n[\s\S]*\ncmd-delete: 0\ncmd-pause-tube: 0\npause: 0\n/);
    });
  }

  it("counts stay right while tubes are forgotten and filled at once on two nodes", { timeout: 60_000 }, async () => {
    const tubes = ["churn0", "churn1", "churn2"];
    const producers = await Promise.all([a, b, a, b].map((n) => dial(n.addr)));
    const consumers = await Promise.all([a, b].map((n) => dial(n.addr)));
    const all: Wire[] = [...producers, ...consumers];
    try {
      for (const w of consumers) {
        for (const t of tubes) await w.cmd(`watch ${t}`);
        await w.cmd("ignore default");
      }
      let producing = producers.length;
      const produce = producers.map(async (w, p) => {
        for (let i = 0; i < 40; i++) {
          await w.cmd(`use ${tubes[(i + p) % tubes.length]}`);
          await putId(w, `p${p}-${i}`);
          await w.cmd("use default"); // lets the tube go: forgotten if it has no jobs by then
        }
        producing--;
      });
      const consume = consumers.map(async (w) => {
        // bounded: at most 400 cycles a consumer
        for (let n = 0; n < 400; n++) {
          const m = /^RESERVED (\d+) /.exec(await w.cmd("reserve-with-timeout 0"));
          if (m) assert.equal(await w.cmd(`delete ${m[1]}`), "DELETED\r\n");
          else if (producing === 0) break;
        }
      });
      await Promise.all([...produce, ...consume]);
      // the consumers go (they watch the tubes), what is left goes; then no node lists the tubes
      for (const w of consumers) {
        w.send("quit\r\n");
        await w.closed();
      }
      for (const t of tubes) assert.match(await producers[0]!.cmd(`delete-tube ${t}`), /^(DELETED \d+|NOT_FOUND)\r\n$/);
      for (const n of [a, b]) {
        const w = await dial(n.addr);
        all.push(w);
        assert.equal(await w.cmd("list-tubes"), "OK 14\r\n---\n- default\n\r\n");
      }
      // a tube that gets a job through A again is listed on B, with that one job
      await producers[0]!.cmd("use churn1");
      await putId(producers[0]!, "again");
      await producers[0]!.cmd("use default");
      const onB = await dial(b.addr);
      all.push(onB);
      assert.equal(await onB.cmd("list-tubes"), "OK 23\r\n---\n- default\n- churn1\n\r\n");
      assert.match(await onB.cmd("stats-tube churn1"), /\ncurrent-jobs-ready: 1\n/);
    } finally {
      for (const w of all) w.close();
    }
  });
});
