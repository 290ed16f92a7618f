// The extension commands (issue 19) on the wire, in process, on a manual clock: exact
// bytes of every reply, bad arguments (each followed by another command on the same
// connection), and how the extensions meet each other and the stock commands.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { Service } from "../../protocol/service.ts";
import { localClient } from "../harness/in_process.ts";
import { VERSION } from "../../core/version.ts";
import { renderMetrics } from "../../protocol/http/metrics.ts";
import { Scrape } from "../harness/prometheus.ts";

function setup(maxJobSize = 65535) {
  const clock = new ManualClock();
  const q = new Queue({ clock, maxJobSize });
  const svc = new Service(q);
  const c = () => localClient(svc);
  return { clock, q, svc, c };
}

const ok = (yaml: string) => `OK ${yaml.length}\r\n${yaml}\r\n`;

describe("ping and capabilities", () => {
  it("answers PONG, and lists every extension this engine serves", () => {
    const { c, svc } = setup(1024);
    const a = c();
    assert.equal(a.send("ping\r\n"), "PONG\r\n");
    assert.equal(
      a.send("capabilities\r\n"),
      ok(
        `---\nversion: tubeway-${VERSION}\nmax-job-size: 1024\nmax-tube-name-len: 200\nextensions:\n` +
          "- ping\n- put-at\n- kick-tube\n- delete-tube\n- peek-tube\n- list-jobs\n- list-tubes-paused\n" +
          "- stats-tube-all\n- stats-conn\n- list-connections\n" +
          "- set-dlq\n- capabilities\n- drain\n- put-unique\n- set-backoff\n" +
          "- set-concurrency\n- set-rate\n- schedule\n- unschedule\n- list-schedules\n",
      ),
    );
    assert.equal(a.send("ping x\r\n"), "BAD_FORMAT\r\n");
    assert.equal(a.send("pingx\r\n"), "UNKNOWN_COMMAND\r\n");
    assert.equal(a.send("ping\r\n"), "PONG\r\n");
    svc.close();
  });
});

describe("delete-tube", () => {
  it("deletes ready, delayed and buried jobs at once and answers DELETED <n>", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use t\r\n");
    a.send("put 1 0 60 1\r\na\r\nput 1 100 60 1\r\nb\r\nput 1 0 60 1\r\nc\r\n");
    a.send("watch t\r\n");
    assert.equal(a.send("reserve-job 3\r\n"), "RESERVED 3 1\r\nc\r\n");
    assert.equal(a.send("bury 3 5\r\n"), "BURIED\r\n");
    assert.equal(a.send("delete-tube t\r\n"), "DELETED 3\r\n");
    assert.equal(a.send("stats-job 1\r\nstats-job 2\r\nstats-job 3\r\n"), "NOT_FOUND\r\n".repeat(3));
    assert.equal(a.send("delete-tube t\r\n"), "DELETED 0\r\n");
    assert.equal(a.send("delete-tube nosuch\r\n"), "NOT_FOUND\r\n");
    const long = "t".repeat(201); // one byte over the name limit, within the 224-byte line
    for (
      const bad of [
        "delete-tube",
        "delete-tube -x",
        "delete-tube t reserved",
        "delete-tube t ready x",
        `delete-tube ${long}`,
      ]
    ) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });

  it("with a state deletes only the jobs in that state", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use t\r\nput 1 0 60 1\r\na\r\nput 1 100 60 1\r\nb\r\n");
    assert.equal(a.send("delete-tube t delayed\r\n"), "DELETED 1\r\n");
    assert.equal(a.send("peek-tube t ready\r\n"), "FOUND 1 1\r\na\r\n");
    assert.equal(a.send("stats-job 2\r\n"), "NOT_FOUND\r\n");
    svc.close();
  });

  it("deletes a job reserved during the delete-tube when it comes back, not one put after", () => {
    const { c, svc, clock } = setup();
    const a = c();
    const w = c();
    a.send("use t\r\nput 1 0 60 1\r\na\r\nput 1 0 60 1\r\nb\r\nput 1 0 2 1\r\nc\r\n");
    w.send("watch t\r\n");
    assert.equal(w.send("reserve\r\n"), "RESERVED 1 1\r\na\r\n");
    assert.equal(w.send("reserve\r\n"), "RESERVED 2 1\r\nb\r\n");
    assert.equal(w.send("reserve\r\n"), "RESERVED 3 1\r\nc\r\n");
    assert.equal(a.send("delete-tube t\r\n"), "DELETED 0\r\n");
    // a fresh put does not save the reserved ones (beanstalkd-pi's per-tube flag would)
    assert.equal(a.send("put 1 0 60 1\r\nd\r\n"), "INSERTED 4\r\n");
    assert.equal(w.send("release 1 1 0\r\n"), "RELEASED\r\n");
    assert.equal(w.send("bury 2 1\r\n"), "BURIED\r\n");
    assert.equal(a.send("stats-job 1\r\nstats-job 2\r\n"), "NOT_FOUND\r\nNOT_FOUND\r\n");
    clock.advance(3000); // job 3's TTR ends
    assert.equal(a.send("stats-job 3\r\n"), "NOT_FOUND\r\n");
    assert.equal(a.send("peek-tube t ready\r\n"), "FOUND 4 1\r\nd\r\n");
    svc.close();
  });
});

describe("kick-tube and peek-tube", () => {
  it("kicks buried jobs first, or only the state asked for", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use t\r\nwatch t\r\nput 1 100 60 1\r\na\r\nput 1 0 60 1\r\nb\r\n");
    a.send("reserve-job 2\r\nbury 2 1\r\n");
    assert.equal(a.send("peek-tube t buried\r\n"), "FOUND 2 1\r\nb\r\n");
    assert.equal(a.send("peek-tube t delayed\r\n"), "FOUND 1 1\r\na\r\n");
    assert.equal(a.send("peek-tube t ready\r\n"), "NOT_FOUND\r\n");
    assert.equal(a.send("kick-tube t 10 delayed\r\n"), "KICKED 1\r\n");
    assert.equal(a.send("peek-tube t buried\r\n"), "FOUND 2 1\r\nb\r\n");
    assert.equal(a.send("kick-tube t 10\r\n"), "KICKED 1\r\n");
    assert.equal(a.send("kick-tube t 10\r\n"), "KICKED 0\r\n");
    assert.equal(a.send("kick-tube nosuch 1\r\n"), "NOT_FOUND\r\n");
    assert.equal(a.send("peek-tube nosuch ready\r\n"), "NOT_FOUND\r\n");
    for (
      const bad of ["kick-tube t", "kick-tube t -1", "kick-tube t x", "kick-tube t 1 ready", "peek-tube t reserved"]
    ) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });
});

describe("put-at", () => {
  it("makes the job ready at an absolute time; the past is now", () => {
    const { c, svc, clock } = setup();
    const a = c();
    const nowSec = Math.floor(clock.wallMs() / 1000);
    assert.equal(a.send(`put-at 5 ${nowSec + 10} 60 2\r\nhi\r\n`), "INSERTED 1\r\n");
    assert.equal(a.send(`put-at 5 -3 60 2\r\nyo\r\n`), "INSERTED 2\r\n");
    assert.equal(a.send("peek-delayed\r\n"), "FOUND 1 2\r\nhi\r\n");
    assert.equal(a.send("peek-ready\r\n"), "FOUND 2 2\r\nyo\r\n");
    clock.advance(10_000);
    assert.equal(a.send("delete 2\r\npeek-ready\r\n"), "DELETED\r\nFOUND 1 2\r\nhi\r\n");
    for (const bad of ["put-at", "put-at 10", "put-at 10 1000000000 60", "put-at 10 x 60 3", "put-at x 1 60 3"]) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });

  it("JOB_TOO_BIG swallows the body and the connection goes on", () => {
    const { c, svc } = setup(4);
    const a = c();
    assert.equal(a.send("put-at 1 0 60 5\r\nhello\r\nping\r\n"), "JOB_TOO_BIG\r\nPONG\r\n");
    // a body without its CRLF: the same recovery as put's
    const b = c();
    const stock = b.send("put 1 0 60 2\r\nhiX\r\nping\r\n");
    assert.match(stock, /^EXPECTED_CRLF\r\n/);
    assert.equal(a.send("put-at 1 0 60 2\r\nhiX\r\nping\r\n"), stock);
    svc.close();
  });
});

describe("put-unique", () => {
  it("refuses a key a live job of the tube holds, naming it; a delete frees the key", () => {
    const { c, svc } = setup();
    const a = c();
    assert.equal(a.send("put-unique k1 1 0 60 1\r\na\r\n"), "INSERTED 1\r\n");
    assert.equal(a.send("put-unique k1 1 0 60 1\r\nb\r\n"), "EXISTS 1\r\n");
    a.send("use other\r\n");
    assert.equal(a.send("put-unique k1 1 0 60 1\r\nc\r\n"), "INSERTED 3\r\n");
    assert.equal(a.send("delete 1\r\n"), "DELETED\r\n");
    a.send("use default\r\n");
    assert.equal(a.send("put-unique k1 1 0 60 1\r\nd\r\n"), "INSERTED 4\r\n");
    const st = a.send("stats-job 4\r\n");
    assert.match(st, /\nkicks: 0\nunique-key: k1\n\r\n$/);
    for (const bad of ["put-unique k 1 0 60", "put-unique " + "k".repeat(201) + " 1 0 60 1", "put-unique k x 0 60 1"]) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });
});

describe("list-jobs", () => {
  it("lists in serving order with a limit and an offset", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use t\r\nput 3 0 60 1\r\na\r\nput 1 0 60 2\r\nbb\r\nput 2 0 60 1\r\nc\r\nput 0 50 60 1\r\nd\r\n");
    const entry = (id: number, pri: number, size: number) =>
      `- id: ${id}\n  pri: ${pri}\n  age: 0\n  size: ${size}\n  attempts: 0\n`;
    assert.equal(a.send("list-jobs t ready\r\n"), ok("---\n" + entry(2, 1, 2) + entry(3, 2, 1) + entry(1, 3, 1)));
    assert.equal(a.send("list-jobs t ready 1 1\r\n"), ok("---\n" + entry(3, 2, 1)));
    assert.equal(
      a.send("list-jobs t delayed\r\n"),
      ok("---\n- id: 4\n  pri: 0\n  age: 0\n  size: 1\n  time-left: 50\n  attempts: 0\n"),
    );
    assert.equal(a.send("list-jobs t buried\r\n"), ok("---\n"));
    assert.equal(a.send("list-jobs nosuch ready\r\n"), "NOT_FOUND\r\n");
    for (
      const bad of [
        "list-jobs",
        "list-jobs t",
        "list-jobs t reserved",
        "list-jobs t ready x",
        "list-jobs t ready 1 2 3",
      ]
    ) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });
});

describe("set-dlq and set-backoff", () => {
  it("dead-letters a job after max attempts, keeping where it came from; kick brings it back", () => {
    const { c, svc } = setup();
    const a = c();
    assert.equal(a.send("set-dlq work 2 dead\r\n"), "DLQ_SET\r\n");
    a.send("use work\r\nwatch work\r\nput 1 0 60 1\r\na\r\n");
    assert.equal(a.send("reserve\r\nrelease 1 1 0\r\n"), "RESERVED 1 1\r\na\r\nRELEASED\r\n");
    assert.equal(a.send("reserve\r\nrelease 1 7 0\r\n"), "RESERVED 1 1\r\na\r\nRELEASED\r\n");
    assert.equal(a.send("peek-tube dead buried\r\n"), "FOUND 1 1\r\na\r\n");
    const st = a.send("stats-job 1\r\n");
    assert.match(st, /\ntube: dead\nstate: buried\npri: 7\n/);
    assert.match(st, /\nkicks: 0\ndlq-from-tube: work\n\r\n$/);
    assert.match(a.send("stats-tube work\r\n"), /\ndlq-max-attempts: 2\ndlq-tube: dead\n/);
    assert.equal(a.send("kick-tube dead 1\r\n"), "KICKED 1\r\n");
    assert.equal(a.send("set-dlq work 0 dead\r\n"), "DLQ_SET\r\n");
    assert.doesNotMatch(a.send("stats-tube work\r\n"), /dlq/);
    for (const bad of ["set-dlq work 1", "set-dlq work -1 dead", "set-dlq work 1 -dead", "set-backoff work 1"]) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });

  it("backoff delays a release and a TTR timeout by base × 2^(attempts-1), capped", () => {
    const { c, svc, clock } = setup();
    const a = c();
    assert.equal(a.send("set-backoff work 10 25\r\n"), "BACKOFF_SET\r\n");
    a.send("use work\r\nwatch work\r\nput 1 0 5 1\r\na\r\n");
    assert.equal(a.send("reserve\r\nrelease 1 1 0\r\n"), "RESERVED 1 1\r\na\r\nRELEASED\r\n");
    assert.match(a.send("stats-job 1\r\n"), /\nstate: delayed\n.*\ndelay: 10\n/s);
    clock.advance(10_000);
    assert.equal(a.send("reserve-with-timeout 0\r\n"), "RESERVED 1 1\r\na\r\n");
    clock.advance(5_000); // TTR: the 2nd attempt, 20 s
    assert.match(a.send("stats-job 1\r\n"), /\nstate: delayed\n.*\ndelay: 20\n.*\ntimeouts: 1\n/s);
    clock.advance(20_000);
    assert.equal(a.send("reserve-with-timeout 0\r\nrelease 1 1 0\r\n"), "RESERVED 1 1\r\na\r\nRELEASED\r\n");
    assert.match(a.send("stats-job 1\r\n"), /\ndelay: 25\n/); // 40, capped at 25
    svc.close();
  });
});

describe("counting", () => {
  it("counts extension commands on /metrics, never in stock stats", async () => {
    const { c, svc } = setup();
    const a = c();
    a.send("ping\r\nping\r\nset-dlq w 1 d\r\ndelete-tube nosuch\r\ndelete-tube -bad\r\n");
    const stats = a.send("stats\r\n");
    assert.doesNotMatch(stats, /ping|delete-tube|dlq/);
    const text = await renderMetrics(
      { engine: svc.engine, counters: svc.counters, startedAtMs: svc.facts.startedAt, version: "x" },
      () => Promise.resolve(),
    );
    const m = new Scrape(text);
    const cmd = (command: string) => m.value("beanstalkd_commands_total", { command });
    // BAD_FORMAT does not count, NOT_FOUND does (as beanstalkd-pi)
    assert.deepEqual(["ping", "set-dlq", "delete-tube", "put-at"].map(cmd), [2, 1, 1, 0]);
    assert.equal(m.value("tubeway_jobs_dead_lettered_total"), 0);
    svc.close();
  });
});

describe("interactions", () => {
  it("a job reserved during delete-tube is deleted when its connection closes", () => {
    const { c, svc } = setup();
    const a = c();
    const w = c();
    a.send("use t\r\nput 1 0 60 1\r\na\r\n");
    w.send("watch t\r\n");
    assert.equal(w.send("reserve\r\n"), "RESERVED 1 1\r\na\r\n");
    assert.equal(a.send("delete-tube t\r\n"), "DELETED 0\r\n");
    assert.match(a.send("stats-job 1\r\n"), /\nstate: reserved\n/);
    w.close();
    assert.equal(a.send("stats-job 1\r\n"), "NOT_FOUND\r\n");
    assert.equal(a.send("peek-tube t ready\r\n"), "NOT_FOUND\r\n");
    svc.close();
  });

  it("dead-letters on a TTR timeout; a dead tube equal to the tube buries in place", () => {
    const { c, svc, clock } = setup();
    const a = c();
    assert.equal(a.send("set-dlq t 1 t-dead\r\nset-dlq s 2 s\r\n"), "DLQ_SET\r\nDLQ_SET\r\n");
    a.send("use t\r\nwatch t\r\nput 1 0 2 1\r\na\r\n");
    assert.equal(a.send("reserve\r\n"), "RESERVED 1 1\r\na\r\n");
    clock.advance(2000);
    assert.match(a.send("stats-job 1\r\n"), /\ntube: t-dead\nstate: buried\n.*\ntimeouts: 1\n.*dlq-from-tube: t\n/s);
    a.send("use s\r\nwatch s\r\nput 1 0 60 1\r\nb\r\n");
    assert.equal(a.send("reserve-job 2\r\nrelease 2 1 0\r\n"), "RESERVED 2 1\r\nb\r\nRELEASED\r\n");
    assert.equal(a.send("reserve-job 2\r\nrelease 2 1 30\r\n"), "RESERVED 2 1\r\nb\r\nRELEASED\r\n");
    const st = a.send("stats-job 2\r\n");
    assert.match(st, /\ntube: s\nstate: buried\n/); // the release's delay is dropped
    assert.match(st, /dlq-from-tube: s\n/);
    svc.close();
  });

  it("a unique key held by a reserved job still refuses; delete-tube frees the keys of the jobs it deletes", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use u\r\nwatch u\r\n");
    assert.equal(
      a.send("put-unique k 1 0 60 1\r\na\r\nput-unique j 1 0 60 1\r\nb\r\n"),
      "INSERTED 1\r\nINSERTED 2\r\n",
    );
    assert.equal(a.send("reserve-job 1\r\n"), "RESERVED 1 1\r\na\r\n");
    assert.equal(a.send("put-unique k 1 0 60 1\r\nc\r\n"), "EXISTS 1\r\n");
    assert.equal(a.send("delete-tube u ready\r\n"), "DELETED 1\r\n");
    assert.equal(a.send("put-unique j 1 0 60 1\r\nd\r\n"), "INSERTED 4\r\n");
    svc.close();
  });

  it("put-at and put-unique answer DRAINING in drain mode; list-jobs caps its limit at 10000", () => {
    const { c, svc, q } = setup();
    const a = c();
    for (let i = 0; i < 3; i++) a.send("put 1 0 60 1\r\nx\r\n");
    assert.equal(a.send("list-jobs default ready 99999\r\n").match(/- id: /g)?.length, 3);
    assert.equal(a.send("list-jobs default ready 0\r\n"), ok("---\n"));
    assert.equal(a.send("list-jobs default ready 10 5\r\n"), ok("---\n"));
    q.drain();
    assert.equal(a.send("put-at 1 0 60 1\r\nx\r\nput-unique q 1 0 60 1\r\nx\r\n"), "DRAINING\r\nDRAINING\r\n");
    assert.equal(a.send("ping\r\n"), "PONG\r\n");
    svc.close();
  });
});

describe("stats-tube-all and list-tubes-paused", () => {
  it("answer every tube, default first, with the policy keys; paused tubes by name", () => {
    const { c, svc } = setup();
    const a = c();
    a.send("use zeta\r\nput 1 0 60 1\r\na\r\nuse alpha\r\n");
    assert.equal(
      a.send("set-dlq alpha 3 dead\r\npause-tube zeta 60\r\npause-tube alpha 60\r\n"),
      "DLQ_SET\r\nPAUSED\r\nPAUSED\r\n",
    );
    const all = a.send("stats-tube-all\r\n");
    const names = [...all.matchAll(/^- name: (\S+)$/gm)].map((m) => m[1]);
    assert.deepEqual(names, ["default", "alpha", "zeta"]);
    assert.match(all, /^- name: default\n {2}current-jobs-urgent: 0\n/m);
    assert.match(all, /\n {2}pause-time-left: 0\n {2}dlq-max-attempts: 0\n {2}dlq-tube: \n {2}backoff-base: 0\n/);
    assert.match(all, /\n {2}dlq-max-attempts: 3\n {2}dlq-tube: dead\n/);
    assert.match(all, /- name: zeta\n {2}current-jobs-urgent: 1\n {2}current-jobs-ready: 1\n/);
    assert.equal(a.send("list-tubes-paused\r\n"), ok("---\n- alpha\n- zeta\n"));
    // a line that is no extension keeps 1.12's answer
    assert.equal(a.send("stats-tube-allx\r\nstats-foo\r\nlist-tubes-x\r\n"), "BAD_FORMAT\r\n".repeat(3));
    assert.equal(a.send("stats-tube-all x\r\n"), "BAD_FORMAT\r\n");
    assert.equal(a.send("ping\r\n"), "PONG\r\n");
    svc.close();
  });
});

describe("random extension lines", () => {
  it("never throw, never answer INTERNAL_ERROR, and leave the connection working", () => {
    const errors: string[] = [];
    const clock = new ManualClock();
    const svc = new Service(new Queue({ clock }), { log: () => {}, error: (l) => errors.push(l) });
    const a = localClient(svc);
    const verbs = [
      "ping",
      "capabilities",
      "kick-tube",
      "delete-tube",
      "peek-tube",
      "list-jobs",
      "set-dlq",
      "set-backoff",
      "stats-tube-all",
      "list-tubes-paused",
    ];
    const words = ["t", "-t", "ready", "delayed", "buried", "reserved", "0", "1", "-1", "99999999999", "x", "", "+3"];
    let seed = 7;
    const pick = <T>(xs: T[]) => xs[(seed = (seed * 1103515245 + 12345) % 2147483648) % xs.length]!;
    a.send("use t\r\nput 1 0 60 1\r\na\r\nput 1 5 60 1\r\nb\r\n");
    for (let i = 0; i < 2000; i++) {
      const n = pick([0, 1, 2, 3, 4]);
      const line = [pick(verbs), ...Array.from({ length: n }, () => pick(words))].join(" ");
      const r = a.send(line + "\r\n");
      assert.doesNotMatch(r, /INTERNAL_ERROR|UNKNOWN_COMMAND/, line);
      if (i % 100 === 0) a.send(`put-at 1 ${i} 60 1\r\nc\r\nput-unique k${i % 7} 1 0 1 1\r\nd\r\n`);
      if (i % 50 === 0) clock.advance(1000);
    }
    assert.equal(a.send("ping\r\n"), "PONG\r\n");
    assert.deepEqual(errors, []);
    svc.close();
  });
});

describe("drain", () => {
  it("turns drain mode on and off and reports it, as beanstalkd-pi", () => {
    const { c, svc } = setup();
    const a = c();
    assert.equal(a.send("drain status\r\n"), "NOT_DRAINING\r\n");
    assert.equal(a.send("drain on\r\nput 1 0 60 1\r\nx\r\n"), "DRAINING\r\nDRAINING\r\n");
    assert.match(a.send("stats\r\n"), /\ndraining: true\n/);
    assert.equal(a.send("drain on\r\ndrain status\r\n"), "DRAINING\r\nDRAINING\r\n");
    assert.equal(a.send("drain off\r\nput 1 0 60 1\r\nx\r\n"), "NOT_DRAINING\r\nINSERTED 2\r\n");
    for (const bad of ["drain", "drain maybe", "drain on off"]) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    svc.close();
  });
});

describe("stats-conn and list-connections", () => {
  it("describe a connection by id, or every one, in beanstalkd-pi's keys", () => {
    const { c, svc } = setup();
    const a = c();
    const w = c();
    a.send("use jobs\r\nput 1 0 60 1\r\nx\r\nput 1 0 60 1\r\ny\r\n");
    w.send("watch jobs\r\nwatch alpha\r\nreserve-job 2\r\nreserve-job 1\r\n");
    const conn = (id: number, first: string, pad: string, rest: string) =>
      `${first}id: ${id}\n${pad}addr: ""\n` + rest.split("\n").filter((l) => l).map((l) => pad + l + "\n").join("");
    const aDoc = "tube: jobs\nwatching: [default]\nreserved-jobs: []\nproducer: true\nworker: false\nwaiting: false";
    const wDoc = "tube: default\nwatching: [alpha, default, jobs]\nreserved-jobs: [1, 2]\nproducer: false\n" +
      "worker: true\nwaiting: false";
    assert.equal(a.send("stats-conn\r\n"), ok("---\n" + conn(1, "", "", aDoc)));
    assert.equal(a.send("stats-conn 2\r\n"), ok("---\n" + conn(2, "", "", wDoc)));
    assert.equal(a.send("list-connections\r\n"), ok("---\n" + conn(1, "- ", "  ", aDoc) + conn(2, "- ", "  ", wDoc)));
    assert.equal(a.send("stats-conn 999999\r\n"), "NOT_FOUND\r\n");
    for (const bad of ["stats-conn abc", "stats-conn 1 2", "stats-conn -1", "list-connections x"]) {
      assert.equal(a.send(bad + "\r\n"), "BAD_FORMAT\r\n", bad);
      assert.equal(a.send("ping\r\n"), "PONG\r\n");
    }
    w.close();
    assert.equal(a.send("stats-conn 2\r\n"), "NOT_FOUND\r\n");
    svc.close();
  });
});
