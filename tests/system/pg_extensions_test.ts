// The extension commands (docs/extensions.md) on nodes over PostgreSQL: one node answers
// every extension with the bytes the in-memory engine answers (the same session sent to
// both, reply by reply), and two nodes on one schema share keys, policies and tubes
// (put-unique unique in the cluster, a policy set through one node applied to a release
// through the other, delete-tube of jobs another node put), with drain mode per node;
// stats-conn and list-connections list a connection's reservations as the database holds
// them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME } from "../harness/paths.ts";
import { bunPgServer, denoPgServer, inProcess, type Running } from "../harness/targets.ts";
import { skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { putId } from "../harness/wire_checks.ts";

const target = RUNTIME === "bun" ? bunPgServer : denoPgServer;

/** A step of a session: a command line, or a put-like line with its body. */
type Step = string | [line: string, body: string] | { sleepMs: number };

const at = (offsetSec: number) => Math.floor(Date.now() / 1000) + offsetSec;

/** Sent to an in-memory tubeway and to one over PostgreSQL: every reply must be the same bytes. */
const SESSION: Step[] = [
  "capabilities",
  "ping",
  "use work",
  "watch work",
  "ignore default",
  ["put 0 0 60 1", "a"],
  ["put 5 0 60 1", "b"],
  ["put 0 100 60 1", "c"],
  [`put-at 1 ${at(-1000)} 60 1`, "d"], // past: ready now
  ["put-unique k1 0 0 60 1", "e"],
  ["put-unique k1 0 0 60 1", "f"], // EXISTS 5 (id 6 used up, as put's)
  ["put-unique k2 0 0 60 1", "g"],
  "stats-job 5",
  "stats-job 4",
  "peek-tube work ready",
  "peek-tube work delayed",
  "peek-tube work buried",
  "peek-tube nosuch ready",
  "reserve-with-timeout 0",
  "bury 1 0",
  "kick-tube work 10 delayed",
  "kick-tube work 10",
  "kick-tube work 10 buried",
  "kick-tube nosuch 1",
  "list-jobs work ready",
  "stats-tube work",
  "set-dlq work 2 dead",
  "set-backoff work 0 0",
  "stats-tube work",
  "list-tubes",
  "reserve-with-timeout 0",
  "release 1 0 0",
  "reserve-with-timeout 0",
  "release 1 7 0", // the second attempt: a dead letter in `dead`, with the release's priority
  "stats-job 1",
  "list-tubes",
  "stats-tube dead",
  "peek-tube dead buried",
  "list-jobs dead buried",
  "delete-tube work buried",
  "reserve-with-timeout 0", // 3
  "delete-tube work", // the ready ones; 3 is doomed
  "stats-job 3",
  ["put-unique k1 0 0 60 1", "h"], // k1 is free again
  "release 3 0 0", // RELEASED, and gone
  "peek 3",
  "stats-tube work",
  "delete-tube work delayed",
  "delete-tube nosuch",
  "delete-tube nosuch ready",
  "set-dlq work 0 dead",
  "set-backoff back 10 15",
  "stats-tube work",
  "stats-tube back",
  "use back",
  "watch back",
  "ignore work",
  ["put 0 0 60 1", "i"],
  "reserve-with-timeout 0",
  "release 9 3 2", // backoff 10 s > 2 s: delayed 10 s
  "stats-tube back",
  "peek-tube back delayed",
  "kick-tube back 1",
  "reserve-with-timeout 0",
  "release 9 3 40", // a longer delay than the backoff's (20 s) is kept
  "list-tubes",
  "drain status",
  "drain on",
  ["put 0 0 60 1", "x"],
  [`put-at 0 ${at(100)} 60 1`, "y"],
  ["put-unique k9 0 0 60 1", "z"],
  "drain status",
  "drain off",
  ["put-unique k9 0 0 60 1", "z"],
  "stats-tube-all",
  "set-backoff back 0 0",
  "stats-tube back",
  // a TTR timeout is an attempt too: with max 1, the job goes to the dead tube
  "set-dlq slow 1 dead",
  "use slow",
  "watch slow",
  "ignore back",
  ["put-unique ks 0 0 1 1", "s"],
  "reserve-with-timeout 0",
  { sleepMs: 1400 },
  "peek-tube slow ready",
  "stats-job 14",
  ["put-unique ks 0 0 60 1", "t"], // a dead letter keeps no key
  "stats-tube dead",
  "delete-tube dead",
  "list-tubes",
  // limits and schedules
  "set-concurrency lim 2",
  "set-rate lim 10 60",
  "stats-tube lim",
  "list-tubes",
  "use lim",
  "watch lim",
  "ignore slow",
  ["put 0 0 60 1", "l"],
  ["put 0 0 60 1", "m"],
  ["put 0 0 60 1", "n"],
  "reserve-with-timeout 0",
  "reserve-with-timeout 0",
  "reserve-with-timeout 0", // TIMED_OUT: 2 reserved
  "stats-tube lim",
  "set-concurrency lim 0",
  "reserve-with-timeout 0",
  "set-rate lim 0 0",
  "stats-tube lim",
  "set-concurrency later 3",
  "list-tubes",
  "stats-tube later",
  "set-concurrency later 0",
  "list-tubes",
  ["schedule yearly ticks 0_0_1_1_* 3 30 2", "hi"],
  "list-schedules",
  ["schedule yearly ticks @yearly 4 0 3", "hey"],
  "list-schedules",
  "unschedule yearly",
  "unschedule yearly",
  "list-schedules",
  "set-concurrency lim -1",
  "set-rate lim 5 0",
  "schedule x t every:0 0 1 1",
  "stats-tube-all",
];

async function play(w: Wire, steps: Step[], seen: string[]): Promise<void> {
  for (const s of steps) {
    if (typeof s === "object" && !Array.isArray(s)) {
      await new Promise((r) => setTimeout(r, s.sleepMs));
      continue;
    }
    if (Array.isArray(s)) {
      w.send(`${s[0]}\r\n${s[1]}\r\n`);
      seen.push(await w.reply());
    } else seen.push(await w.cmd(s));
  }
}

/** A step on one of two connections: p, a producer and onlooker, and w, a worker. */
type ConnStep = [conn: "p" | "w", line: string];

/** What stats-conn and list-connections say of p and w through a session (one node, then in memory). */
const CONN_SESSION: ConnStep[] = [
  ["p", "put 0 0 60 1"],
  ["p", "put 0 0 60 1"],
  ["p", "put 0 0 60 1"],
  ["p", "put-unique k 0 0 60 1"],
  ["w", "stats-conn"],
  ["w", "reserve"],
  ["w", "reserve"],
  ["w", "reserve-job 4"],
  ["w", "stats-conn"],
  ["p", "stats-conn W"],
  ["p", "list-connections"],
  ["w", "delete 2"],
  ["w", "release 1 0 0"],
  ["w", "stats-conn"],
  ["w", "bury 4 0"],
  ["w", "reserve"],
  ["p", "list-connections"],
  ["w", "touch 1"],
  ["p", "stats-conn W"],
];

/**
 * Play CONN_SESSION on a fresh server; the replies with each connection's address and
 * number written as who it is (they differ between servers by nature).
 */
async function playConns(addr: Running["addr"]): Promise<string[]> {
  const w = { p: await dial(addr), w: await dial(addr) };
  try {
    const ids = new Map<string, string>();
    for (const k of ["p", "w"] as const) {
      ids.set(/\nid: (\d+)\n/.exec(await w[k].cmd("stats-conn"))![1]!, k.toUpperCase());
    }
    const out: string[] = [];
    for (const [k, line] of CONN_SESSION) {
      const l = line.replace(/ W$/, ` ${[...ids].find(([, who]) => who === "W")![0]}`);
      if (l.startsWith("put")) {
        w[k].send(`${l}\r\n${k}\r\n`);
        out.push(await w[k].reply());
        continue;
      }
      const yaml = (await w[k].cmd(l)).replace(/^OK \d+\r\n/, "")
        .replace(/addr: .*\n/g, "addr: *\n")
        .replace(/id: (\d+)\n/g, (m, id: string) => (ids.has(id) ? `id: ${ids.get(id)}\n` : m));
      out.push(yaml);
    }
    return out;
  } finally {
    w.p.close();
    w.w.close();
  }
}

describe(`${target.name}: extensions`, { skip: skipWithoutPostgres }, () => {
  it("one node answers every extension with the in-memory engine's bytes", async () => {
    const mem = await inProcess.start([]);
    const pg = await target.start([]);
    const [a, b] = [await dial(mem.addr), await dial(pg.addr)];
    try {
      const memReplies: string[] = [], pgReplies: string[] = [];
      // the in-memory session first (its ids and times are the reference), then --pg's
      await Promise.all([play(a, SESSION, memReplies), play(b, SESSION, pgReplies)]);
      const steps = SESSION.filter((s) => typeof s === "string" || Array.isArray(s));
      for (let i = 0; i < steps.length; i++) {
        const s = steps[i]!;
        assert.equal(pgReplies[i], memReplies[i], `step ${i}: ${Array.isArray(s) ? s[0] : s}`);
      }
      // spot checks that the session does what it says
      const caps = pgReplies[0]!;
      for (const e of ["delete-tube", "kick-tube", "peek-tube", "put-at", "put-unique", "set-dlq", "set-backoff"]) {
        assert.match(caps, new RegExp(`^- ${e}$`, "m"));
      }
      assert.ok(pgReplies.includes("EXISTS 5\r\n"), "put-unique k1 twice");
      assert.ok(pgReplies.some((r) => /dlq-from-tube: work\n/.test(r)), "a dead letter");
      assert.ok(pgReplies.some((r) => /dlq-from-tube: slow\n/.test(r)), "a dead letter from a TTR timeout");
      assert.ok(pgReplies.includes("INSERTED 15\r\n"), "the dead letter's key is free");
    } finally {
      a.close();
      b.close();
      await mem.stop();
      await pg.stop();
    }
  });

  it("stats-conn and list-connections list the jobs a connection holds, as in memory", async () => {
    const mem = await inProcess.start([]);
    const pg = await target.start([]);
    try {
      const [memReplies, pgReplies] = [await playConns(mem.addr), await playConns(pg.addr)];
      for (let i = 0; i < CONN_SESSION.length; i++) {
        assert.equal(pgReplies[i], memReplies[i], `step ${i}: ${CONN_SESSION[i]!.join(": ")}`);
      }
      // spot checks that the session does what it says
      assert.match(memReplies[8]!, /\nreserved-jobs: \[1, 2, 4\]\n/);
      assert.match(memReplies[10]!, /\n {2}reserved-jobs: \[\]\n[\s\S]*\n {2}reserved-jobs: \[1, 2, 4\]\n/);
      assert.match(memReplies[13]!, /\nreserved-jobs: \[4\]\n/);
      assert.match(memReplies[18]!, /\nreserved-jobs: \[1\]\n/);
    } finally {
      await mem.stop();
      await pg.stop();
    }
  });

  it("put-at: the delay by the database's clock, as the in-memory engine", async () => {
    const n = await target.start([]);
    const w = await dial(n.addr);
    try {
      w.send(`put-at 0 ${at(100)} 60 1\r\nx\r\n`);
      const id = Number(/^INSERTED (\d+)\r\n$/.exec(await w.reply())![1]);
      const st = await w.cmd(`stats-job ${id}`);
      assert.match(st, /\nstate: delayed\n/);
      const delay = Number(/\ndelay: (\d+)\n/.exec(st)![1]);
      assert.ok(delay >= 98 && delay <= 100, st);
      w.send(`put-at 0 ${at(1 - 2 ** 40)} 60 1\r\nx\r\n`); // far past: ready
      assert.match(await w.reply(), /^INSERTED \d+\r\n$/);
      assert.match(await w.cmd("peek-ready"), /^FOUND \d+ 1\r\nx\r\n$/);
    } finally {
      w.close();
      await n.stop();
    }
  });

  describe("two nodes on one schema", () => {
    let a: Running, b: Running;
    before(async () => {
      const schema = uniqueSchema("ext");
      // later flags override earlier ones: both nodes on the same schema
      a = await target.start(["--pg-schema", schema]);
      b = await target.start(["--pg-schema", schema]);
    });
    after(async () => {
      await a?.stop();
      await b?.stop();
    });

    it("put-unique on A, then on B: EXISTS; put-unique racing on both: one job per key", async () => {
      const [wa, wb] = [await dial(a.addr), await dial(b.addr)];
      try {
        await wa.cmd("use u");
        await wb.cmd("use u");
        wa.send("put-unique key-1 0 0 60 1\r\nA\r\n");
        const id = Number(/^INSERTED (\d+)\r\n$/.exec(await wa.reply())![1]);
        wb.send("put-unique key-1 0 0 60 1\r\nB\r\n");
        assert.equal(await wb.reply(), `EXISTS ${id}\r\n`);
        assert.match(await wb.cmd(`stats-job ${id}`), /\nunique-key: key-1\n/);
        // B deletes it: the key is free on A
        assert.equal(await wb.cmd(`delete ${id}`), "DELETED\r\n");
        wa.send("put-unique key-1 0 0 60 1\r\nA\r\n");
        assert.match(await wa.reply(), /^INSERTED \d+\r\n$/);
        // both nodes at once, 30 keys, two connections per node
        const [wa2, wb2] = [await dial(a.addr), await dial(b.addr)];
        try {
          const ws = [wa, wa2, wb, wb2];
          for (const w of [wa2, wb2]) await w.cmd("use u");
          for (let k = 0; k < 30; k++) {
            for (const w of ws) w.send(`put-unique race-${k} 0 0 60 1\r\nr\r\n`);
            const replies = await Promise.all(ws.map((w) => w.reply()));
            const inserted = replies.filter((r) => r.startsWith("INSERTED "));
            assert.equal(inserted.length, 1, `key race-${k}: ${replies.join(" ")}`);
            const winner = inserted[0]!.slice(9);
            for (const r of replies) if (!r.startsWith("INSERTED ")) assert.equal(r, `EXISTS ${winner}`);
          }
          assert.match(await wa.cmd("stats-tube u"), /\ncurrent-jobs-ready: 31\n/);
        } finally {
          wa2.close();
          wb2.close();
        }
      } finally {
        wa.close();
        wb.close();
      }
    });

    it("set-dlq and set-backoff through A apply to releases and TTRs through B", async () => {
      const [wa, wb] = [await dial(a.addr), await dial(b.addr)];
      try {
        assert.equal(await wa.cmd("set-dlq p 1 p-dead"), "DLQ_SET\r\n");
        assert.equal(await wa.cmd("set-backoff q 30 0"), "BACKOFF_SET\r\n");
        assert.match(await wb.cmd("stats-tube p"), /\ndlq-max-attempts: 1\ndlq-tube: p-dead\n/);
        assert.match(await wb.cmd("list-tubes"), /\n- p\n/, "B lists a tube that has a policy");
        await wb.cmd("use p");
        await wb.cmd("watch p");
        await wb.cmd("watch q");
        await wb.cmd("ignore default");
        const id = await putId(wb, "job");
        assert.match(await wb.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${id} `));
        assert.equal(await wb.cmd(`release ${id} 0 0`), "RELEASED\r\n");
        const st = await wa.cmd(`stats-job ${id}`);
        assert.match(st, /\ntube: p-dead\nstate: buried\n/, st);
        assert.match(st, /\ndlq-from-tube: p\n/, st);
        // backoff, set through A, on a release through B
        await wb.cmd("use q");
        const q = await putId(wb, "job");
        assert.match(await wb.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${q} `));
        assert.equal(await wb.cmd(`release ${q} 0 0`), "RELEASED\r\n");
        assert.match(await wa.cmd(`stats-job ${q}`), /\nstate: delayed\npri: 0\nage: \d+\ndelay: 30\n/);
      } finally {
        wa.close();
        wb.close();
      }
    });

    it("delete-tube through B empties what A put; kick-tube and peek-tube across nodes", async () => {
      const [wa, wb] = [await dial(a.addr), await dial(b.addr)];
      try {
        await wa.cmd("use z");
        for (let i = 0; i < 3; i++) await putId(wa, `z${i}`);
        const buried = await putId(wa, "zb", 0, 100);
        assert.equal(await wb.cmd("kick-tube z 5 delayed"), "KICKED 1\r\n");
        assert.match(await wb.cmd("peek-tube z ready"), /^FOUND \d+ 2\r\nz0\r\n$/);
        assert.equal(await wb.cmd("delete-tube z"), "DELETED 4\r\n");
        assert.equal(await wa.cmd("peek-ready"), "NOT_FOUND\r\n");
        assert.equal(await wa.cmd(`peek ${buried}`), "NOT_FOUND\r\n");
        assert.match(await wa.cmd("stats-tube z"), /\ncurrent-jobs-ready: 0\n[\s\S]*\ncmd-delete: 4\n/);
        assert.equal(await wb.cmd("delete-tube z"), "NOT_FOUND\r\n", "B does not have z any more");
      } finally {
        wa.close();
        wb.close();
      }
    });

    it("delete-tube through B while workers on A reserve and release: no job put before it survives", async () => {
      const wa = await dial(a.addr);
      const workers = await Promise.all([1, 2, 3, 4].map(() => dial(a.addr)));
      const wb = await dial(b.addr);
      try {
        await wa.cmd("use churn");
        const ids: number[] = [];
        for (let i = 0; i < 120; i++) ids.push(await putId(wa, `c${i}`));
        for (const w of workers) {
          await w.cmd("watch churn");
          await w.cmd("ignore default");
        }
        let stop = false;
        const churn = workers.map(async (w) => {
          // bounded: at most 200 cycles a worker
          for (let n = 0; n < 200 && !stop; n++) {
            const r = await w.cmd("reserve-with-timeout 0");
            const m = /^RESERVED (\d+) /.exec(r);
            if (!m) break; // TIMED_OUT: the tube is empty
            assert.equal(await w.cmd(`release ${m[1]} 0 0`), "RELEASED\r\n");
          }
        });
        await new Promise((r) => setTimeout(r, 30));
        const d = await wb.cmd("delete-tube churn");
        stop = true;
        await Promise.all(churn);
        assert.match(d, /^DELETED \d+\r\n$/);
        for (const id of ids) assert.equal(await wa.cmd(`peek ${id}`), "NOT_FOUND\r\n", `job ${id} survived: ${d}`);
        const st = await wa.cmd("stats-tube churn");
        for (const k of ["ready", "reserved", "delayed", "buried"]) {
          assert.match(st, new RegExp(`\ncurrent-jobs-${k}: 0\n`));
        }
        assert.doesNotMatch(await wb.cmd("list-tubes"), /churn/, "no count left behind on B");
      } finally {
        for (const w of [wa, wb, ...workers]) w.close();
      }
    });

    it("reserved-jobs is the database's: a job whose TTR ended and that B took is listed on B, not on A", async () => {
      const [wa, wb] = [await dial(a.addr), await dial(b.addr)];
      const held = async (w: Wire) => /\nreserved-jobs: \[(.*)\]\n/.exec(await w.cmd("stats-conn"))![1];
      try {
        await wa.cmd("use ttr");
        await wa.cmd("watch ttr");
        await wb.cmd("watch ttr");
        const id = await putId(wa, "t", 0, 0, 1);
        const keep = await putId(wa, "k");
        assert.match(await wa.cmd(`reserve-job ${id}`), new RegExp(`^RESERVED ${id} `));
        assert.match(await wa.cmd(`reserve-job ${keep}`), new RegExp(`^RESERVED ${keep} `));
        assert.equal(await held(wa), `${id}, ${keep}`);
        await new Promise((r) => setTimeout(r, 1300)); // its TTR of 1 s ends
        assert.equal(await held(wa), `${keep}`, "a TTR that ended holds nothing, swept or not");
        assert.match(await wb.cmd("reserve-with-timeout 0"), new RegExp(`^RESERVED ${id} `));
        assert.equal(await held(wa), `${keep}`);
        assert.equal(await held(wb), `${id}`);
        assert.match(await wb.cmd("list-connections"), new RegExp(`\n  reserved-jobs: \\[${id}\\]\n`));
      } finally {
        wa.close();
        wb.close();
      }
    });

    it("drain is per node: A refuses puts, B takes them", async () => {
      const [wa, wb] = [await dial(a.addr), await dial(b.addr)];
      try {
        assert.equal(await wa.cmd("drain on"), "DRAINING\r\n");
        assert.equal(await wa.put("x"), "DRAINING\r\n");
        wa.send("put-unique d1 0 0 60 1\r\nx\r\n");
        assert.equal(await wa.reply(), "DRAINING\r\n");
        assert.equal(await wb.cmd("drain status"), "NOT_DRAINING\r\n");
        assert.match(await wb.put("x"), /^INSERTED \d+\r\n$/);
        assert.match(await wa.cmd("stats"), /\ndraining: true\n/);
        assert.equal(await wa.cmd("drain off"), "NOT_DRAINING\r\n");
        assert.match(await wa.put("x"), /^INSERTED \d+\r\n$/);
      } finally {
        wa.close();
        wb.close();
      }
    });
  });
});
