// The HTTP side port (--http) of a node over PostgreSQL: /metrics, /readyz, the
// dashboard's overview and job listings read the database, and its write actions
// (put, kick-job, delete) go through the engine like protocol commands. The database's
// own figures (turn transactions, their latencies and sizes, the pool, the lease, the
// node's id) and the cluster's nodes show on /metrics, /api/overview and the dashboard
// of a --pg node, and nowhere on a node without a database.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import puppeteer from "puppeteer-core";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { bunPgServer, denoPgServer, type Running } from "../harness/targets.ts";
import { skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { freePort } from "../../scripts/machine.ts";
import { dial } from "../harness/wire.ts";
import { Scrape } from "../harness/prometheus.ts";
import { ManualClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { Service } from "../../protocol/service.ts";
import { renderMetrics } from "../../protocol/http/metrics.ts";
import { overview } from "../../protocol/http/views.ts";
import { putId } from "../harness/wire_checks.ts";

const CHROMIUM = process.env.TUBEWAY_CHROMIUM ?? "/usr/bin/chromium";

const target = RUNTIME === "bun" ? bunPgServer : denoPgServer;

describe(`${target.name} --http`, { skip: skipWithoutPostgres }, () => {
  it("metrics, readiness, the overview, listings and write actions over PostgreSQL", async () => {
    const port = await freePort();
    const n = await target.start(["--http", `127.0.0.1:${port}`, "--http-token", "secret"]);
    const w = await dial(n.addr);
    const get = async (path: string) => {
      const r = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: r.status, text: await r.text() };
    };
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: "POST",
        headers: { authorization: "Bearer secret", "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: r.status, json: await r.json() };
    };
    try {
      await w.cmd("use web");
      const ready = await putId(w, "hello <b>", 5);
      const delayed = await putId(w, "later", 1, 100);
      const metrics = (await get("/metrics")).text;
      assert.match(metrics, /^beanstalkd_jobs\{state="ready"\} 1$/m);
      assert.match(metrics, /^beanstalkd_jobs\{state="delayed"\} 1$/m);
      assert.equal((await get("/readyz")).status, 200);
      const overview = JSON.parse((await get("/api/overview")).text);
      assert.deepEqual(overview.jobs, { urgent: 1, ready: 1, reserved: 0, delayed: 1, buried: 0 });
      const listed = JSON.parse((await get("/api/tubes/web/jobs?state=delayed")).text);
      assert.deepEqual([listed.total, listed.jobs[0].id, listed.jobs[0].text], [1, delayed, "later"]);
      assert.equal((await get("/api/tubes/nosuch/jobs")).status, 404);
      assert.equal((await post(`/api/jobs/${delayed}/kick`, {})).json.reply, "KICKED");
      assert.match(await w.cmd(`stats-job ${delayed}`), /\nstate: ready\n/);
      const put = await post("/api/tubes/web/put", { body: "from http", pri: 0 });
      assert.match(put.json.reply, /^INSERTED \d+$/);
      assert.equal((await post(`/api/jobs/${ready}/delete`, {})).json.reply, "DELETED");
      assert.equal(await w.cmd(`peek ${ready}`), "NOT_FOUND\r\n");
    } finally {
      w.close();
      await n.stop();
    }
  });
});

/** GET a path of a node's side port as text. */
async function get(port: number, path: string): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  assert.equal(r.status, 200, path);
  return await r.text();
}

describe(`${target.name} --http: the database and the cluster`, { skip: skipWithoutPostgres }, () => {
  const ports: number[] = [];
  const nodes: Running[] = [];
  /** The nodes' ids, as their overviews give them. */
  let ids: number[] = [];
  before(async () => {
    const schema = uniqueSchema("ops");
    for (let i = 0; i < 2; i++) {
      ports.push(await freePort());
      nodes.push(await target.start(["--http", `127.0.0.1:${ports[i]}`, "--pg-schema", schema]));
    }
  });
  after(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  });

  it("/metrics counts the turns' transactions and commands; /api/overview lists both nodes", async () => {
    {
      const w = await dial(nodes[0]!.addr);
      let sent = 0;
      try {
        await w.cmd("use ops");
        await w.cmd("watch ops");
        for (let i = 0; i < 20; i++) await putId(w, `job ${i}`, 10);
        sent += 20;
        for (let i = 0; i < 10; i++) {
          const id = Number(/^RESERVED (\d+) /.exec(await w.cmd("reserve-with-timeout 0"))![1]);
          assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
          sent += 2;
        }
      } finally {
        w.close();
      }

      const s = new Scrape(await get(ports[0]!, "/metrics"));
      const tx = s.value("tubeway_pg_transactions_total");
      // one command per turn here (each waited for its answer), plus the nodes' own turns
      assert.ok(tx >= sent, `${tx} transactions for ${sent} commands`);
      const batches = s.histogram("tubeway_pg_transaction_commands");
      assert.ok(batches.count >= sent && batches.sum >= sent, `batch sizes ${JSON.stringify(batches)}`);
      assert.ok(batches.buckets["1"]! >= sent, "single-command turns");
      for (const h of ["tubeway_pg_statements_seconds", "tubeway_pg_commit_seconds"]) {
        const { count, sum, buckets } = s.histogram(h);
        assert.ok(count >= sent && sum > 0, `${h}: ${count} observations, ${sum} s`);
        assert.ok(buckets["10"]! >= 1, `${h}: some under 10 s`);
      }
      assert.equal(s.value("tubeway_pg_available"), 1);
      assert.equal(s.value("tubeway_pg_errors_total"), 0);
      assert.ok(s.value("tubeway_pg_retries_total") >= 0);
      assert.equal(s.value("tubeway_pg_pool_size"), 4);
      const inUse = s.value("tubeway_pg_pool_connections_in_use");
      assert.ok(inUse >= 0 && inUse <= 4);
      assert.equal(s.value("tubeway_pg_cluster_nodes"), 2);
      const lease = s.value("tubeway_pg_lease_remaining_seconds");
      assert.ok(lease > 0 && lease <= 5, `lease ${lease} s`);

      const views = await Promise.all(ports.map(async (p) => JSON.parse(await get(p, "/api/overview"))));
      ids = views.map((v) => v.database.node as number);
      assert.equal(s.value("tubeway_pg_node_id"), ids[0]);
      assert.notEqual(ids[0], ids[1]);
      for (const [i, v] of views.entries()) {
        assert.equal(v.database.available, true);
        assert.deepEqual(v.database.nodes.map((n: { id: number }) => n.id), [...ids].sort((a, b) => a - b));
        const self = v.database.nodes.filter((n: { self: boolean }) => n.self);
        assert.deepEqual(self.map((n: { id: number }) => n.id), [ids[i]]);
        // host and pid as the node's own stats give them
        const st = await statsOf(nodes[i]!);
        assert.deepEqual([self[0].host, self[0].pid], [st.hostname, Number(st.pid)]);
        assert.ok(self[0].leaseRemainingS > 0);
      }
      assert.ok(views[0].database.transactions >= sent);
    }
  });

  it("the dashboard lists the nodes, this one marked", {
    skip: skipUnless(existsSync(CHROMIUM), "chromium is not installed (apt-get install -y chromium)"),
  }, async () => {
    assert.equal(ids.length, 2, "the test before found both nodes");
    await dashboardShows(ports[0]!, ids[0]!, ids);
  });
});

/** stats of a node, as a map. */
async function statsOf(n: Running): Promise<Record<string, string>> {
  const w = await dial(n.addr);
  try {
    const text = await w.cmd("stats");
    return Object.fromEntries(text.split("\n").map((l) => l.split(": ")).filter((kv) => kv.length === 2)) as Record<
      string,
      string
    >;
  } finally {
    w.close();
  }
}

/** The dashboard's database section lists the nodes, this one marked. */
async function dashboardShows(port: number, self: number, ids: number[]): Promise<void> {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: "load", timeout: 60_000 });
    await page.waitForSelector("#nodes tbody tr[data-node]", { timeout: 60_000 });
    assert.equal(await page.$eval("#cluster", (e) => e.hasAttribute("hidden")), false);
    const rows = await page.$$eval(
      "#nodes tbody tr",
      (trs) => trs.map((tr) => [tr.getAttribute("data-node"), tr.className, tr.lastElementChild?.textContent]),
    );
    assert.deepEqual(
      rows,
      [...ids].sort((a, b) => a - b).map((id) => [String(id), id === self ? "self" : "", id === self ? "yes" : ""]),
    );
    assert.match(await page.$eval("#db-state", (e) => e.textContent ?? ""), /^available$/);
    assert.match(await page.$eval("#db-figures", (e) => e.textContent ?? ""), new RegExp(`^this node ${self} `));
  } finally {
    await browser.close();
  }
}

describe("a node without a database", () => {
  it("shows none of the database's metrics, and no database in the overview", async () => {
    const svc = new Service(new Queue({ clock: new ManualClock(1000) }), { log: () => {}, error: () => {} });
    try {
      const src = { engine: svc.engine, counters: svc.counters, startedAtMs: 1000, version: "9.9.9" };
      const text = await renderMetrics(src, () => Promise.resolve());
      assert.match(text, /^beanstalkd_up 1$/m);
      assert.doesNotMatch(text, /tubeway_pg_/);
      const o = await overview({ ...src, writable: false });
      assert.equal("database" in o && o.database !== undefined, false);
      assert.equal(JSON.parse(JSON.stringify(o)).database, undefined);
    } finally {
      svc.close();
    }
  });
});
