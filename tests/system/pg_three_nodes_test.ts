// The wire suites against three tubeway nodes over PostgreSQL on one schema, every
// connection of a test on a node of its own: a round-robin front (harness/pg_nodes.ts)
// sends connection 1 to node A, 2 to B, 3 to C, 4 to A, … So a test that puts on one
// connection and reserves, deletes or peeks on another crosses nodes.
//
// Where docs/pg.md "What differs from one beanstalkd" says a node answers for itself,
// the comparison allows exactly that, each allowance with the docs' reason below.
//
// Run: node_modules/.bin/deno test -A tests/system/pg_three_nodes_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/pg_three_nodes_test.ts
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { type Entry, IdMap, lines, mapIds, play, pool, subjectEntries, wrongWants } from "../harness/differential.ts";
import { type Session, SESSIONS } from "../harness/sessions.ts";
import { beanstalkd, type Target } from "../harness/targets.ts";
import { STATS_KEYS } from "../harness/stats_keys.ts";
import { clients, clientTest, runAgainst } from "../harness/clients.ts";
import { bunPgNodes, denoPgNodes, type RunningNodes } from "../harness/pg_nodes.ts";
import { Conns, putId, stats } from "../harness/wire_checks.ts";
import { wireSuite } from "./wire_suite.ts";

const NODES = RUNTIME === "bun" ? bunPgNodes : denoPgNodes;

// ---- the front ------------------------------------------------------------------------------

describe(
  `${NODES.name}: the front`,
  { skip: skipUnless(NODES.unavailable() === undefined, NODES.unavailable() ?? "") },
  () => {
    it("connections 1-4 go to nodes A, B, C, A; A's ids start at 1, B's at 1001, C's at 2001", async () => {
      const r = (await NODES.start([])) as RunningNodes;
      const c = new Conns(r.addr);
      try {
        const w = await Promise.all([0, 1, 2, 3].map(() => c.dial()));
        const pids = [];
        for (const x of w) pids.push((await stats(x)).num("pid"));
        assert.deepEqual(pids, [0, 1, 2, 0].map((k) => r.nodes[k]!.child!.pid));
        assert.deepEqual(r.front.routes, [0, 1, 2, 0]);
        const ids = [];
        for (const x of w) ids.push(await putId(x, "which block"));
        assert.deepEqual(ids, [1, 1001, 2001, 2]);
        // A job put through one node is the same job on every other.
        assert.equal(await w[1]!.cmd("peek 2001"), "FOUND 2001 11\r\nwhich block\r\n");
        assert.equal(await w[2]!.cmd("delete 1"), "DELETED\r\n");
        assert.equal(await w[3]!.cmd("peek 1"), "NOT_FOUND\r\n");
      } finally {
        c.closeAll();
        await r.stop();
      }
    });
  },
);

// ---- the generic wire suite --------------------------------------------------------------

/**
 * The wire suite's tests that read what docs/pg.md lists as per node ("per node",
 * "which tubes exist"): they run with all their connections on node A while B and C
 * serve the same schema, where one node is byte-exact. Every other test spreads its
 * connections over the three nodes.
 */
const PER_NODE_VIEWS: Record<string, string> = {
  "tubes are created by use/watch and removed when nothing references them":
    "which tubes exist: a tube only used or watched exists on the node whose clients refer to it",
  "stats: 51 keys in wire order with real values": "per node: pid, id, connections are the answering node's",
  "stats counters and gauges move as commands run": "per node: connections and cmd-* are counted by each node",
  "stats-job and stats-tube: keys in wire order, values, NOT_FOUND, BAD_FORMAT":
    "per node: stats-tube's current-using, current-watching, current-waiting",
  "a blocked reserve is woken by put, release, kick and pause-tube 0":
    "per node: the test waits for stats-tube's current-waiting, which counts only the answering node's clients",
  "waiting workers are served first come, first served (A,B,C,D)":
    "per node: current-waiting (as above); and first come, first served is among one node's waiting clients",
  "a reserved job goes back to ready when its holder disconnects, and when it quits":
    "per node: current-waiting (as above)",
};

wireSuite(NODES, { oneNode: PER_NODE_VIEWS });

// ---- the differential sessions against beanstalkd 1.12 -----------------------------------
//
// Each session is played against beanstalkd 1.12, then against three fresh nodes on a
// fresh schema. Connection k of a session (in the order the session first uses them)
// goes to node k mod 3: a session that puts on one connection and reserves, deletes,
// peeks or asks for stats on another crosses nodes. The comparison is the differential
// suite's (byte for byte after its normalisation), with these allowances and no others:
//
// 1. ids (docs/pg.md "ids": nodes take blocks of 1,000, so ids of puts through different
//    nodes interleave by block). The nodes start one after the other, so node A's ids
//    start at 1, B's at 1001, C's at 2001. Ids are paired with the reference's by order
//    of appearance (harness/differential.ts IdMap): commands go out with the node's ids,
//    replies are compared with beanstalkd's.
// 2. per-node counters (docs/pg.md "per node": connections, cmd-*, producers, workers,
//    current-waiting, current-tubes (the length of the node's list-tubes); stats-tube's
//    current-using, current-watching, current-waiting): compared exactly where every
//    connection the session has opened so far is on the asking connection's node;
//    elsewhere they read "(per node)" in both transcripts.
// 3. list-tubes (docs/pg.md "which tubes exist", "list-tubes order": a tube only used or
//    watched exists on the node whose clients refer to it; a tube that got jobs through
//    another node is appended when this node first sees it): under the same condition as
//    2, the node's list must hold `default` and only tubes beanstalkd lists.
// 4. The session "waiting reservers are served in arrival order" runs with every
//    connection on node A, B and C serving the same schema: docs/pg.md "claim order
//    under concurrency" (waiters on different nodes claim in concurrent transactions, so
//    arrival order holds among one node's waiting clients) and "per node" (the session
//    waits for stats-tube's current-waiting, which counts the answering node's clients).
//
// The cluster-wide figures (current-jobs-*, total-jobs, job-timeouts, stats-tube's
// job counts, cmd-delete, cmd-pause-tube, pause) are compared exactly everywhere.
const ONE_NODE_SESSIONS: Record<string, string> = {
  "waiting reservers are served in arrival order": "claim order under concurrency; per node: current-waiting",
};

/** The three nodes with every connection on node k (0 = A). */
function nodesOn(k: number): Target {
  return {
    ...NODES,
    name: `${NODES.name}, every connection on node ${"ABC"[k]}`,
    async start(flags) {
      const r = (await NODES.start(flags)) as RunningNodes;
      r.front.pin(k);
      return r;
    },
  };
}

/** Nodes behind the front. */
const NODE_COUNT = 3;

/** Each connection's node: the front routes them in the order the session first uses them. */
function nodeOfConnection(session: Session): Map<number, number> {
  const node = new Map<number, number>();
  const count = ONE_NODE_SESSIONS[session.name] ? 1 : NODE_COUNT;
  for (const s of session.steps) if ("c" in s && !node.has(s.c)) node.set(s.c, node.size % count);
  return node;
}

/** Per step: does the asking connection share the session's nodes with another (allowances 2 and 3)? */
function crossesNodes(session: Session): boolean[] {
  const node = nodeOfConnection(session);
  const used = new Set<number>();
  return session.steps.map((s) => {
    if (!("c" in s)) return false;
    used.add(node.get(s.c)!);
    return [...used].some((n) => n !== node.get(s.c));
  });
}

/**
 * Per step: the command whose reply the step records (cmd and reply steps), from what the
 * session sends on that connection (put bodies skipped). Other steps: undefined.
 */
function commandOfStep(session: Session): Array<string | undefined> {
  const pending = new Map<number, string[]>();
  const buffered = new Map<number, string>();
  const push = (c: number, text: string) => {
    let b = (buffered.get(c) ?? "") + text;
    const q = pending.get(c) ?? [];
    for (let e = b.indexOf("\r\n"); e >= 0; e = b.indexOf("\r\n")) {
      const line = b.slice(0, e);
      const put = /^put \d+ \d+ \d+ (\d+)$/.exec(line);
      if (put && b.length < e + 2 + Number(put[1]) + 2) break; // the body is still to come
      b = b.slice(e + 2 + (put ? Number(put[1]) + 2 : 0));
      q.push(line.split(" ")[0]!);
    }
    buffered.set(c, b);
    pending.set(c, q);
  };
  return session.steps.map((s) => {
    if (s.op === "cmd") push(s.c, s.line + "\r\n");
    else if (s.op === "send") { for (const d of s.data) push(s.c, d); }
    return s.op === "cmd" || s.op === "reply" ? pending.get(s.c)?.shift() : undefined;
  });
}

/** current-tubes, current-connections, -producers, -workers, -waiting, total-connections. */
const PER_NODE_STATS = (STATS_KEYS as readonly string[]).slice(
  STATS_KEYS.indexOf("current-tubes"),
  STATS_KEYS.indexOf("total-connections") + 1,
);
const PER_NODE_TUBE_STATS = ["current-using", "current-watching", "current-waiting"];
const PER_NODE = "(per node)";

/** An `OK <n>` YAML reply with the values of `keys` replaced by "(per node)", recounted. */
function perNodeValues(reply: string, keys: (key: string) => boolean): string {
  const m = /^OK (\d+)\r\n([\s\S]*)\r\n$/.exec(reply);
  if (!m) return reply;
  const yaml = m[2]!.replace(/^([a-z-]+): .*$/gm, (line, key: string) => (keys(key) ? `${key}: ${PER_NODE}` : line));
  return `OK ${yaml.length}\r\n${yaml}\r\n`;
}

/** The names of a list reply, or undefined when it is not one. */
function listed(reply: string): string[] | undefined {
  const m = /^OK \d+\r\n---\n((?:- .*\n)*)\r\n$/.exec(reply);
  return m ? m[1]!.split("\n").slice(0, -1).map((l) => l.slice(2)) : undefined;
}

/**
 * Both transcripts with allowances 2 and 3 applied where the asking connection's node is
 * not the only one the session has used; everything else as it was.
 */
function allowPerNode(session: Session, expected: Entry[], subject: Entry[]): [Entry[], Entry[]] {
  const crosses = crossesNodes(session);
  const command = commandOfStep(session);
  const refByStep = new Map(expected.map((e) => [e.step, e.got]));
  const apply = (e: Entry, isSubject: boolean): Entry => {
    if (!crosses[e.step]) return e;
    const cmd = command[e.step];
    if (cmd === "stats") {
      return { ...e, got: perNodeValues(e.got, (k) => k.startsWith("cmd-") || PER_NODE_STATS.includes(k)) };
    }
    if (cmd === "stats-tube") return { ...e, got: perNodeValues(e.got, (k) => PER_NODE_TUBE_STATS.includes(k)) };
    if (cmd === "list-tubes") {
      const ref = listed(refByStep.get(e.step) ?? "");
      const names = listed(e.got);
      if (!ref || !names) return e;
      const ok = names.includes("default") && names.every((n) => ref.includes(n)) &&
        new Set(names).size === names.length;
      return !isSubject || ok ? { ...e, got: `${PER_NODE} default and some of ${ref.join(" ")}` } : e;
    }
    return e;
  };
  return [expected.map((e) => apply(e, false)), subject.map((e) => apply(e, true))];
}

describe("differential across three nodes: the allowances are no wider than said", () => {
  const okOf = (y: string) => `OK ${y.length}\r\n${y}\r\n`;
  const entry = (step: number, got: string): Entry => ({ step, label: "", got });
  // c0 is on node A, c1 on node B; from step 2 on, the session has used both.
  const session: Session = {
    name: "allowances",
    steps: [
      { op: "cmd", c: 0, line: "stats" },
      { op: "cmd", c: 0, line: "list-tubes" },
      { op: "cmd", c: 1, line: "use x" },
      { op: "send", c: 0, data: ["stats-tube x\r\nlist-tubes-watched\r\nlist-tubes\r\n"], gapMs: 0 },
      { op: "reply", c: 0 },
      { op: "reply", c: 0 },
      { op: "reply", c: 0 },
    ],
  };
  const tube = (jobs: number, using: number) =>
    okOf(`---\nname: x\ncurrent-jobs-ready: ${jobs}\ncurrent-using: ${using}\ncmd-delete: 0\n`);
  const stats = (put: number, ready: number) => okOf(`---\ncurrent-jobs-ready: ${ready}\ncmd-put: ${put}\n`);
  const allow = (step: number, want: string, got: string): [string, string] => {
    const [w, g] = allowPerNode(session, [entry(step, want)], [entry(step, got)]);
    return [w[0]!.got, g[0]!.got];
  };

  it("connections go to nodes in order of first use; a step crosses nodes once another node was used", () => {
    assert.deepEqual([...nodeOfConnection(session)], [[0, 0], [1, 1]]);
    assert.deepEqual(crossesNodes(session), [false, false, true, true, true, true, true]);
    assert.deepEqual(commandOfStep(session), [
      "stats",
      "list-tubes",
      "use",
      undefined,
      "stats-tube",
      "list-tubes-watched",
      "list-tubes",
    ]);
  });

  it("before another node is used, per-node counters and lists compare exactly", () => {
    const [want, got] = allow(0, stats(2, 1), stats(1, 1));
    assert.notEqual(want, got);
    const [w2, g2] = allow(1, okOf("---\n- default\n- x\n"), okOf("---\n- default\n"));
    assert.notEqual(w2, g2);
  });

  it("across nodes, only the per-node keys are let go; cluster-wide ones still compare", () => {
    const [want, got] = allow(4, tube(1, 2), tube(1, 0));
    assert.equal(got, want);
    const [w2, g2] = allow(4, tube(1, 2), tube(2, 2));
    assert.notEqual(g2, w2, "current-jobs-ready is the cluster's");
  });

  it("list-tubes across nodes: default and tubes beanstalkd lists, nothing else; list-tubes-watched exactly", () => {
    const ref = okOf("---\n- default\n- x\n");
    assert.equal(...allow(6, ref, okOf("---\n- default\n")));
    assert.notEqual(...allow(6, ref, okOf("---\n- default\n- y\n")));
    assert.notEqual(...allow(6, ref, okOf("---\n- x\n")));
    assert.notEqual(...allow(5, ref, okOf("---\n- default\n")));
  });

  it("ids: paired in order of appearance, sent as the node's, a later id predicted on the sender's node", () => {
    const reference = [entry(0, "INSERTED 1\r\n"), entry(1, "INSERTED 2\r\n"), entry(2, "RESERVED 2 1\r\nb\r\n")];
    const ids = new IdMap(reference, (c) => 1 + 1000 * c);
    assert.equal(ids.got(0, "INSERTED 1\r\n"), "INSERTED 1\r\n");
    assert.equal(ids.got(1, "INSERTED 1001\r\n"), "INSERTED 2\r\n");
    assert.equal(ids.sent(0, "delete 2"), "delete 1001");
    assert.equal(ids.got(2, "RESERVED 1 1\r\na\r\n"), "RESERVED 1 1\r\na\r\n", "another job stays visible");
    assert.equal(ids.sent(1, "put 0 0 60 1\r\nx\r\ndelete 3\r\n"), "put 0 0 60 1\r\nx\r\ndelete 1002\r\n");
    assert.equal(ids.sent(0, "delete 999"), "delete 999", "an id far beyond any put is left alone");
    assert.equal(
      mapIds(okOf("---\nid: 1001\ntube: default\n"), (id) => (id === "1001" ? "2" : id)),
      okOf("---\nid: 2\ntube: default\n"),
    );
  });
});

/** Sessions played at once against three nodes each. */
const PARALLEL = 3;
/** Sessions played at once against beanstalkd (as in differential_test.ts). */
const REFERENCE_PARALLEL = 6;

const skipDifferential = skipUnless(beanstalkd.unavailable() === undefined, beanstalkd.unavailable() ?? "") ||
  skipUnless(NODES.unavailable() === undefined, NODES.unavailable() ?? "");

describe(`differential across three nodes: beanstalkd 1.12 vs ${NODES.name}`, { skip: skipDifferential }, () => {
  let results: Promise<[Entry[], Entry[], Entry[]]>[] = [];

  before(() => {
    // Every reference first, while only beanstalkd runs (the timing sessions are sensitive
    // to a loaded machine, and three nodes per session load it): the nodes' run of a
    // session pairs its ids with its reference's (IdMap).
    const references = pool(SESSIONS, REFERENCE_PARALLEL, (s) => play(beanstalkd, s, "1.12"));
    const allReferences = Promise.allSettled(references);
    results = pool([...SESSIONS.entries()], PARALLEL, async ([i, s]) => {
      await allReferences;
      const reference = await references[i]!;
      const node = nodeOfConnection(s);
      const target = ONE_NODE_SESSIONS[s.name] ? nodesOn(0) : NODES;
      const subject = await play(target, s, "tubeway", new IdMap(reference, (c) => 1 + 1000 * node.get(c)!));
      return [reference, ...allowPerNode(s, subjectEntries(s, reference, "tubeway"), subject)];
    });
    for (const r of results) r.catch(() => {});
  });

  after(async () => {
    await Promise.allSettled(results);
  });

  for (const [i, session] of SESSIONS.entries()) {
    it(session.name, { timeout: 120_000 }, async () => {
      const [reference, expected, subject] = await results[i]!;
      assert.deepEqual(
        wrongWants(session, reference, "1.12"),
        [],
        "beanstalkd 1.12 did not answer as the session expects",
      );
      // `expected` is beanstalkd's transcript with tubeway's side of every differ() and the
      // allowances applied, so this also holds the nodes to every want of the session.
      assert.deepEqual(lines(subject), lines(expected), `${NODES.name} differs from beanstalkd 1.12`);
    });
  }
});

// ---- the client libraries --------------------------------------------------------------
//
// Each client's script (harness/clients.ts) talks over one connection, so each run gets a
// node of its own: client 1 on node A, client 2 on B, client 3 on C, client 4 on A, … with
// the other two nodes serving the same schema. No allowance: a client sees one server.

for (const [i, client] of clients.entries()) {
  const target = nodesOn(i % NODE_COUNT);
  clientTest(
    it,
    `${client.name} against ${target.name}`,
    client.missing() ?? target.unavailable(),
    () => runAgainst(client, target),
  );
}
