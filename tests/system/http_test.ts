// The HTTP side port of the real executables (deno run, bun run, the compiled binary):
// exact metrics after a scripted protocol session, agreeing with `stats`; health and
// readiness through drain mode (SIGUSR1); the token from the environment; and nothing
// listening without --http.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { dial, type Wire } from "../harness/wire.ts";
import { getText, HTTP_KINDS, type HttpRunning, startWithHttp } from "../harness/http.ts";
import { Scrape } from "../harness/prometheus.ts";
import { skipUnless } from "../harness/paths.ts";
import { freePort, startProcess } from "../harness/targets.ts";
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function statsOf(yaml: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of yaml.split("\n")) {
    const m = /^([a-z-]+): "?([^"]*)"?$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

for (const kind of Object.values(HTTP_KINDS)) {
  describe(`--http on ${kind.name}`, { skip: skipUnless(!kind.unavailable(), kind.unavailable() ?? "") }, () => {
    let srv: HttpRunning;
    let p: Wire;
    let w: Wire;
    before(async () => {
      srv = await startWithHttp(kind, ["-V"], { TUBEWAY_HTTP_TOKEN: "from-env" });
      p = await dial(srv.addr);
      w = await dial(srv.addr);
    });
    after(async () => {
      p?.close();
      w?.close();
      await srv?.stop();
    });

    it("logs where the side port listens and that actions need the token", () => {
      assert.match(
        srv.output(),
        new RegExp(` listening plain=.* http=127\\.0\\.0\\.1:${srv.httpPort} http-actions=token `),
      );
    });

    it("gives exact metrics after puts, reserves, a TTR timeout, a bury, a kick and a pause", async () => {
      assert.equal(await p.cmd("use jobs"), "USING jobs\r\n");
      assert.equal(await p.put("a", 0, 0, 1), "INSERTED 1\r\n");
      assert.equal(await p.put("b", 1), "INSERTED 2\r\n");
      assert.equal(await p.put("c", 1), "INSERTED 3\r\n");
      assert.equal(await p.put("d", 1, 100), "INSERTED 4\r\n");
      assert.equal(await w.cmd("watch jobs"), "WATCHING 2\r\n");
      assert.equal(await w.cmd("reserve"), "RESERVED 1 1\r\na\r\n");
      await sleep(1500); // job 1's TTR (1 s) runs out: back to ready, one timeout
      assert.equal(await w.cmd("reserve"), "RESERVED 1 1\r\na\r\n");
      assert.equal(await w.cmd("bury 1 0"), "BURIED\r\n");
      assert.equal(await w.cmd("reserve"), "RESERVED 2 1\r\nb\r\n");
      assert.equal(await w.cmd("delete 2"), "DELETED\r\n");
      assert.equal(await w.cmd("reserve"), "RESERVED 3 1\r\nc\r\n");
      assert.equal(await p.cmd("kick 5"), "KICKED 1\r\n");
      assert.equal(await p.cmd("pause-tube jobs 60"), "PAUSED\r\n");
      const stats = statsOf(await p.cmd("stats"));
      const m = await getText(`${srv.http}/metrics`);
      assert.equal(m.status, 200);
      assert.equal(m.type, "text/plain; version=0.0.4; charset=utf-8");
      const s = new Scrape(m.text);

      const jobs = (state: string) => s.value("beanstalkd_jobs", { state });
      assert.deepEqual(["urgent", "ready", "reserved", "delayed", "buried"].map(jobs), [1, 1, 1, 1, 0]);
      assert.equal(s.value("beanstalkd_jobs_total"), 4);
      assert.equal(s.value("beanstalkd_job_timeouts_total"), 1);
      const conns = (role: string) => s.value("beanstalkd_connections", { role });
      assert.deepEqual(["current", "producers", "workers", "waiting"].map(conns), [2, 1, 1, 0]);
      assert.equal(s.value("beanstalkd_tubes_current"), 2);
      const cmd = (command: string) => s.value("beanstalkd_commands_total", { command });
      assert.deepEqual(
        ["put", "use", "watch", "reserve", "delete", "bury", "kick", "pause-tube", "stats"].map(cmd),
        [4, 1, 1, 4, 1, 1, 1, 1, 1],
      );
      const tube = (state: string) => s.value("beanstalkd_tube_jobs", { tube: "jobs", state });
      assert.deepEqual(["ready", "reserved", "delayed", "buried"].map(tube), [1, 1, 1, 0]);
      assert.equal(s.value("beanstalkd_tube_paused", { tube: "jobs" }), 1);
      assert.equal(s.value("beanstalkd_tube_jobs_total", { tube: "jobs" }), 4);
      assert.equal(s.value("beanstalkd_tube_deletes_total", { tube: "jobs" }), 1);
      assert.equal(s.value("beanstalkd_tube_connections", { tube: "jobs", role: "watching" }), 1);
      assert.equal(s.histogram("tubeway_ready_to_reserve_seconds").count, 4);
      assert.equal(s.histogram("tubeway_reserve_to_delete_seconds").count, 1);
      const oldest = s.value("tubeway_tube_oldest_ready_seconds", { tube: "jobs" });
      assert.ok(oldest >= 0 && oldest < 30, `oldest ready ${oldest}`);
      // the same numbers `stats` gave just before (the probe connections count in both)
      assert.equal(s.value("beanstalkd_connections_total"), Number(stats["total-connections"]));
      assert.equal(s.value("beanstalkd_uptime_seconds") >= Number(stats["uptime"]), true);
    });

    it("carries out an action with the token from TUBEWAY_HTTP_TOKEN, and refuses a wrong one", async () => {
      const post = (token: string) =>
        fetch(`${srv.http}/api/tubes/jobs/pause`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ seconds: 0 }),
        });
      const bad = await post("wrong");
      assert.equal(bad.status, 401);
      await bad.body?.cancel();
      const good = await post("from-env");
      assert.deepEqual([good.status, await good.json()], [200, { reply: "PAUSED" }]);
      assert.match(await p.cmd("stats-tube jobs"), /\npause: 0\n/);
    });

    it("answers /healthz and /readyz 200, then /readyz 503 in drain mode", async () => {
      assert.deepEqual(await getText(`${srv.http}/healthz`), {
        status: 200,
        text: "ok\n",
        type: "text/plain; charset=utf-8",
      });
      assert.equal((await getText(`${srv.http}/readyz`)).status, 200);
      srv.drain!();
      const deadline = Date.now() + 10_000;
      while ((await getText(`${srv.http}/readyz`)).status !== 503 && Date.now() < deadline) await sleep(50);
      assert.equal((await getText(`${srv.http}/readyz`)).text, "draining\n");
      assert.equal((await getText(`${srv.http}/healthz`)).status, 200);
      assert.equal(new Scrape((await getText(`${srv.http}/metrics`)).text).value("beanstalkd_draining"), 1);
      assert.equal(await p.put("x"), "DRAINING\r\n");
    });
  });
}

describe("--http at startup", { skip: skipUnless(!HTTP_KINDS.deno.unavailable(), "deno is not installed") }, () => {
  it("nothing listens on the side port", async () => {
    const port = await freePort();
    const srv = await startProcess(await HTTP_KINDS.deno.argv(), []);
    try {
      await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`));
    } finally {
      await srv.stop();
    }
  });

  it("exits 111 naming the address when the side port cannot be bound, and 5 for a bad address", async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    const port = (busy.address() as { port: number }).port;
    try {
      const argv = await HTTP_KINDS.deno.argv();
      const taken = spawnSync(
        argv[0]!,
        [...argv.slice(1), "-l", "127.0.0.1", "-p", "0", "--http", `127.0.0.1:${port}`],
        {
          encoding: "utf8",
          timeout: 30_000,
        },
      );
      assert.equal(taken.status, 111);
      assert.match(taken.stderr, new RegExp(`ERROR cannot listen on --http 127\\.0\\.0\\.1:${port}: .* exit=111`));
      const bad = spawnSync(argv[0]!, [...argv.slice(1), "--http", "nowhere"], { encoding: "utf8", timeout: 30_000 });
      assert.equal(bad.status, 5);
      assert.match(bad.stderr, /--http wants HOST:PORT \(e\.g\. 127\.0\.0\.1:9100\), not nowhere\n/);
    } finally {
      busy.close();
    }
  });
});
