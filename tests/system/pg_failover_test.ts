// The database goes away and comes back (issue 18): nodes over a PostgreSQL that is
// stopped longer than --pg-wait, restarted under load, and failed over to its synchronous
// standby (kill -9 of the primary, pg_ctl promote). Acknowledged means committed: every
// INSERTED id is counted in the database afterwards; commands wait up to --pg-wait, then
// answer INTERNAL_ERROR; /readyz says 503 while the database is away; a reserve waiting
// on a node keeps waiting and gets a job put after the database came back; the nodes
// reconnect (and LISTEN again) by themselves. One Deno node and one Bun node in each test.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type ControlledPostgres,
  skipWithoutPostgres,
  startControlledPostgres,
  startReplicatedPostgres,
  uniqueSchema,
} from "../harness/postgres.ts";
import { getText, HTTP_KINDS, type HttpRunning, startWithHttp } from "../harness/http.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { eventually, timed } from "../harness/wire_checks.ts";
import postgres from "postgres";
import { pgTarget } from "../../adapters/pg_client.ts";
import { driverOptions } from "../../adapters/pg_options.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Producers on `wires` putting until stop(); every reply with the time it came. */
function produce(wires: Wire[], tube: string) {
  const acked: number[] = [];
  const failed: string[] = [];
  /** When each node's connections got an INSERTED (ms, performance.now()), per wire. */
  const insertedAt: number[][] = wires.map(() => []);
  let stopping = false;
  const loops = wires.map(async (w, i) => {
    await w.cmd(`use ${tube}`);
    for (let n = 0; !stopping && n < 100_000; n++) {
      const body = `job ${i}.${n}`;
      w.send(`put 0 0 60 ${body.length}\r\n${body}\r\n`);
      let r: string;
      try {
        r = await w.reply(30_000);
      } catch (e) {
        failed.push(String(e));
        return;
      }
      const m = /^INSERTED (\d+)\r\n$/.exec(r);
      if (m) {
        acked.push(Number(m[1]));
        insertedAt[i]!.push(performance.now());
      } else {
        failed.push(r.trim());
        await sleep(20);
      }
    }
  });
  return {
    acked,
    failed,
    insertedAt,
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** The ids in the jobs table of `schema`, through psql on `pg`. */
function idsIn(pg: ControlledPostgres, schema: string): Set<number> {
  const out = pg.psql(`select id from ${schema}.jobs`);
  return new Set(out === "" ? [] : out.split("\n").map(Number));
}

/** The value of an unlabelled sample in a /metrics text (NaN when absent). */
function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
}

function once(text: string, what: RegExp): number {
  return text.split("\n").filter((l) => what.test(l)).length;
}

describe("nodes over PostgreSQL when the database goes away", { skip: skipWithoutPostgres }, () => {
  // What a test started, stopped at its end (nodes at once, then the clusters): an after
  // hook doing it all would outlast the runners' hook timeout on a busy machine.
  const wires: Wire[] = [];
  const nodes: HttpRunning[] = [];
  const clusters: { stop(): void }[] = [];
  const cleanUp = async () => {
    for (const w of wires.splice(0)) w.close();
    await Promise.all(nodes.splice(0).map((n) => n.stop()));
    for (const c of clusters.splice(0)) c.stop();
  };
  after(cleanUp);
  /** A test given 60 s (a cluster or two, two nodes), cleaning up after itself. */
  const test = (name: string, body: () => Promise<void>) =>
    it(name, { timeout: 60_000 }, async () => {
      try {
        await body();
      } catch (e) {
        for (const n of nodes) console.error(`--- node ${n.addr.port}:\n${n.output()}`);
        throw e;
      } finally {
        await cleanUp();
      }
    });
  const cluster = <T extends { stop(): void }>(c: T): T => {
    clusters.push(c);
    return c;
  };
  const node = async (kind: "deno" | "bun", flags: string[]): Promise<HttpRunning> => {
    const n = await startWithHttp(HTTP_KINDS[kind], flags);
    nodes.push(n);
    return n;
  };
  const conn = async (n: HttpRunning): Promise<Wire> => {
    const w = await dial(n.addr);
    wires.push(w);
    return w;
  };
  /** A Deno node and a Bun node on `url`, two producers on each. */
  const underLoad = async (url: string, schema: string, waitS: number, leaseS: number) => {
    const flags = ["--pg", url, "--pg-schema", schema, "--pg-wait", String(waitS), "--pg-lease", String(leaseS)];
    const [a, b] = [await node("deno", flags), await node("bun", flags)];
    const load = produce([await conn(a), await conn(a), await conn(b), await conn(b)], schema);
    await sleep(700);
    return { a, b, load };
  };

  test("stopped longer than --pg-wait: INTERNAL_ERROR after the bound, /readyz 503, reservers keep waiting, then it all comes back", async () => {
    const pg = cluster(await startControlledPostgres());
    const WAIT_S = 1.5;
    const flags = [
      "--pg",
      pg.url,
      "--pg-schema",
      uniqueSchema("away"),
      "--pg-wait",
      String(WAIT_S),
      "--pg-lease",
      "1",
    ];
    const [a, b] = [await node("deno", flags), await node("bun", flags)];
    const [p, w] = [await conn(a), await conn(b)];
    assert.equal(await p.cmd("use away"), "USING away\r\n");
    assert.equal(await w.cmd("watch away"), "WATCHING 2\r\n");
    w.send("reserve\r\n");
    assert.ok(await w.silentFor(100), "nothing to reserve: it waits");

    pg.halt();
    const t0 = performance.now();
    assert.equal(await p.put("while away"), "INTERNAL_ERROR\r\n");
    const waited = performance.now() - t0;
    assert.ok(waited >= WAIT_S * 1000 * 0.9, `answered after ${waited} ms, before --pg-wait`);
    assert.ok(waited < WAIT_S * 1000 + 3000, `answered after ${waited} ms, long after --pg-wait`);
    for (const n of [a, b]) {
      const r = await eventually("/readyz 503", () => getText(`${n.http}/readyz`), (r) => r.status === 503, 5000);
      assert.match(r.text, /PostgreSQL at 127\.0\.0\.1:\d+\/postgres is unavailable: /);
    }
    assert.equal((await getText(`${a.http}/healthz`)).status, 200, "alive all the same");
    // the metrics while it is away: not available, the failed turn counted
    const away = await getText(`${a.http}/metrics`);
    assert.equal(away.status, 200);
    assert.match(away.text, /^tubeway_pg_available 0$/m);
    assert.ok(metric(away.text, "tubeway_pg_errors_total") >= 1, "the turn that gave up is counted");
    await sleep(WAIT_S * 1000);
    assert.equal(w.pending, "", "the waiting reserve is not ended by the outage");

    pg.resume();
    for (const n of [a, b]) {
      await eventually("/readyz 200", () => getText(`${n.http}/readyz`), (r) => r.status === 200, 10_000);
    }
    const back = await getText(`${a.http}/metrics`);
    assert.match(back.text, /^tubeway_pg_available 1$/m);
    const put = await p.put("after");
    const id = Number(/^INSERTED (\d+)\r\n$/.exec(put)?.[1]);
    assert.ok(id > 0, put);
    const after = await getText(`${a.http}/metrics`);
    assert.ok(metric(after.text, "tubeway_pg_transactions_total") >= 1, "the put's turn committed");
    assert.equal(await w.reply(10_000), `RESERVED ${id} 5\r\nafter\r\n`, "woken through NOTIFY after LISTEN again");
    assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
    for (const n of [a, b]) {
      const out = n.output();
      assert.equal(once(out, /database at 127\.0\.0\.1:\d+\/postgres went away/), 1, out);
      assert.equal(once(out, /database at 127\.0\.0\.1:\d+\/postgres is back after \d+\.\d s/), 1, out);
      assert.doesNotMatch(out, /internal error:/, "the outage is logged once, not again per command it failed");
    }
  });

  test("restarted under load (pg_ctl restart -m fast): no acknowledged job lost, puts resume by themselves", async () => {
    const pg = cluster(await startControlledPostgres());
    const schema = uniqueSchema("restart");
    const { a, b, load } = await underLoad(pg.url, schema, 5, 1);
    pg.restart();
    const back = performance.now();
    const resumed = (at: number[]) => at.some((t) => t > back);
    while (!load.insertedAt.every(resumed) && performance.now() < back + 10_000) await sleep(20);
    const resumedMs = Math.max(...load.insertedAt.map((at) => (at.find((t) => t > back) ?? Infinity) - back));
    await sleep(300);
    await load.stop();
    assert.ok(resumedMs < 10_000, "each producer put again within 10 s of the restart");
    const there = idsIn(pg, schema);
    const lost = load.acked.filter((id) => !there.has(id));
    assert.deepEqual(lost, [], `${lost.length} of ${load.acked.length} acknowledged jobs missing`);
    // a put whose COMMIT was cut may answer INTERNAL_ERROR (never INSERTED); nothing else fails
    for (const f of load.failed) assert.equal(f, "INTERNAL_ERROR");
    for (const n of [a, b]) {
      assert.match(n.output(), /went away \(/);
      await eventually("logged back", () => Promise.resolve(n.output()), (out) => /is back after/.test(out));
    }
    console.log(
      `restart under load: ${load.acked.length} puts acknowledged, ${load.failed.length} INTERNAL_ERROR; ` +
        `every producer put again ${resumedMs.toFixed(0)} ms after pg_ctl restart returned`,
    );
  });

  test("failover: kill -9 the primary, promote the synchronous standby: nodes find it, every acknowledged job is there", async () => {
    const pair = cluster(await startReplicatedPostgres());
    const { primary, standby } = pair;
    const schema = uniqueSchema("failover");
    const { a, b, load } = await underLoad(pair.url, schema, 10, 3);
    const killed = performance.now();
    primary.kill9();
    // no primary for a while (as while a failover manager decides): /readyz 503, puts wait
    for (const n of [a, b]) {
      const r = await eventually("/readyz 503", () => getText(`${n.http}/readyz`), (r) => r.status === 503, 5000);
      assert.match(r.text, /PostgreSQL at 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\/postgres is unavailable/);
    }
    await sleep(Math.max(0, killed + 1000 - performance.now()));
    const promoting = performance.now();
    standby.promote();
    const promoted = performance.now();
    // serving again: each producer has a put acknowledged after the promotion began
    const deadline = promoted + 15_000;
    while (load.insertedAt.some((at) => !at.some((t) => t > promoting)) && performance.now() < deadline) {
      await sleep(10);
    }
    const firstAfter = load.insertedAt.map((at) => at.find((t) => t > promoting));
    await sleep(300);
    await load.stop();
    assert.ok(
      firstAfter.every((t) => t !== undefined),
      `a producer was not served again within 15 s: ${load.failed.join(" ")}\n${a.output()}\n${b.output()}`,
    );
    const servedMs = Math.max(...firstAfter.map((t) => t! - promoting));
    // what the nodes answer for starts once the standby is a primary: how long pg_ctl
    // promote itself took is the database's, reported but not bounded
    const afterPromoted = Math.max(0, ...firstAfter.map((t) => t! - promoted));
    const there = idsIn(standby, schema);
    const lost = load.acked.filter((id) => !there.has(id));
    assert.deepEqual(lost, [], `${lost.length} of ${load.acked.length} acknowledged jobs missing on the new primary`);
    // only a put whose COMMIT the kill cut answers INTERNAL_ERROR: those waiting meanwhile were served
    for (const f of load.failed) assert.equal(f, "INTERNAL_ERROR", `${a.output()}\n${b.output()}`);
    assert.ok(load.failed.length <= 4, `${load.failed.length} INTERNAL_ERROR: at most one per producer`);
    for (const n of [a, b]) {
      await eventually("/readyz 200", () => getText(`${n.http}/readyz`), (r) => r.status === 200, 5000);
      const out = n.output();
      assert.equal(once(out, /went away/), 1, out);
      assert.equal(once(out, /is back after/), 1, out);
    }
    console.log(
      `failover: primary killed, promoted ${(promoting - killed).toFixed(0)} ms later (pg_ctl promote took ` +
        `${(promoted - promoting).toFixed(0)} ms); every producer served again ${servedMs.toFixed(0)} ms after ` +
        `pg_ctl promote began; ${load.acked.length} puts acknowledged, all on the new primary; ` +
        `${load.failed.length} INTERNAL_ERROR (COMMIT cut by the kill)`,
    );
    const outages = [a, b].map((n) => n.output().split("\n").filter((l) => l.includes("pg: database")).join("\n"));
    assert.ok(
      afterPromoted < 5000,
      `served again ${afterPromoted.toFixed(0)} ms after pg_ctl promote returned (it took ` +
        `${(promoted - promoting).toFixed(0)} ms):\n${outages.join("\n")}`,
    );
  });

  test("a database that answers read-only (25006, as a standby does) is away: puts wait, then go on when it takes writes", async () => {
    const pg = cluster(await startControlledPostgres());
    const flags = ["--pg", pg.url, "--pg-schema", uniqueSchema("ro"), "--pg-wait", "10", "--pg-lease", "1"];
    const a = await node("deno", flags);
    // --pg-wait 0: no waiting for a database away, and none cut short while it is there
    const b = await node("bun", flags.map((f) => (f === "10" ? "0" : f)));
    const [p, q] = [await conn(a), await conn(b)];
    assert.match(await p.put("before"), /^INSERTED \d+\r\n$/);
    for (let i = 0; i < 20; i++) assert.match(await q.put(`at once ${i}`), /^INSERTED \d+\r\n$/);
    pg.psql("alter system set default_transaction_read_only = on");
    pg.psql("select pg_reload_conf()");
    await sleep(200);
    const [answer, ms] = await timed(q.put("refused"));
    assert.equal(answer, "INTERNAL_ERROR\r\n");
    assert.ok(ms < 1000, `--pg-wait 0 answered after ${ms} ms`);
    p.send("put 0 0 60 6\r\nduring\r\n");
    const r = await eventually("/readyz 503", () => getText(`${a.http}/readyz`), (r) => r.status === 503, 5000);
    assert.match(r.text, /read-only transaction/);
    assert.ok(await p.silentFor(300), "the put waits");
    pg.psql("alter system reset default_transaction_read_only");
    pg.psql("select pg_reload_conf()");
    assert.match(await p.reply(10_000), /^INSERTED \d+\r\n$/, "acknowledged once committed");
    await eventually("/readyz 200", () => getText(`${a.http}/readyz`), (r) => r.status === 200, 5000);
  });
});

describe("pgTarget: where a --pg URL points, for the exit-69 message and the logs", () => {
  it("names every host of a multi-host URL, never the password", () => {
    assert.equal(
      pgTarget("postgres://u:secret@db1:5433,db2/jobs?target_session_attrs=read-write"),
      "db1:5433,db2:5432/jobs",
    );
    assert.equal(pgTarget("postgresql://u:secret@[::1]:6000,10.0.0.2:5432/q"), "[::1]:6000,10.0.0.2:5432/q");
    assert.equal(pgTarget("postgres://u:pw@db.example/jobs"), "db.example:5432/jobs");
    assert.equal(pgTarget("postgres:///jobs", {}), "localhost:5432/jobs");
    assert.equal(pgTarget("mysql://x"), "an unreadable URL");
  });

  it("names what the PG* variables fill in, as the driver connects: host, port, database (else the user)", async () => {
    const cases: [string | undefined, Record<string, string>, string][] = [
      ["postgres:///jobs", { PGPORT: "55433" }, "localhost:55433/jobs"],
      ["postgres:///jobs", { PGHOST: "127.0.0.1", PGPORT: "1" }, "127.0.0.1:1/jobs"],
      ["postgres://db.example", { PGDATABASE: "queue", PGPORT: "6432" }, "db.example:6432/queue"],
      ["postgres://bob@db.example/", {}, "db.example:5432/bob"],
      [undefined, { PGHOST: "10.0.0.9", PGPORT: "5440", PGDATABASE: "q" }, "10.0.0.9:5440/q"],
      [undefined, { PGUSER: "alice" }, "localhost:5432/alice"],
      ["postgres://u:pw@db1:5433,db2/jobs?sslmode=disable", { PGPORT: "6000" }, "db1:5433,db2:6000/jobs"],
      ["postgres://u@db1,db2:5434/jobs", {}, "db1:5432,db2:5434/jobs"],
    ];
    const saved = { ...process.env };
    try {
      for (const [url, env, want] of cases) {
        for (const k of ["PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGUSERNAME"]) delete process.env[k];
        Object.assign(process.env, env);
        assert.equal(pgTarget(url, process.env), want, `${url} ${JSON.stringify(env)}`);
        // what the driver itself will connect to, given the URL as the node hands it over
        const given = driverOptions(url, process.env).url;
        const sql = given ? postgres(given, { max: 1 }) : postgres({ max: 1 });
        const o = sql.options;
        await sql.end();
        const driver = `${o.host.map((h, i) => `${h}:${o.port[i]}`).join(",")}/${o.database}`;
        assert.equal(driver, want, `the driver, for ${url} ${JSON.stringify(env)}`);
      }
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});
