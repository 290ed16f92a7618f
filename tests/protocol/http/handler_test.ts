// The side port's handler as a function: health, readiness, the token rules for write
// actions, and job bodies returned as data. No sockets: Request in, Response out.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Service } from "../../../protocol/service.ts";
import { memoryEngine } from "../../../core/memory/queue.ts";
import { httpHandler, sameSecret } from "../../../protocol/http/handler.ts";
import { localClient } from "../../harness/in_process.ts";

const quiet = { log: () => {}, error: () => {} };
const BASE = "http://tubeway.test";

function setup(token?: string) {
  const svc = new Service(memoryEngine({ clock: new ManualClock() }), quiet);
  const handle = httpHandler(svc, { token, version: "1.2.3" });
  const get = (path: string) => handle(new Request(BASE + path));
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    handle(
      new Request(BASE + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      }),
    );
  return { svc, get, post, client: localClient(svc) };
}

describe("http handler", () => {
  it("answers /healthz 200, and /readyz 200 until drain mode, then 503", async () => {
    const { svc, get } = setup();
    try {
      assert.equal((await get("/healthz")).status, 200);
      assert.equal((await get("/readyz")).status, 200);
      svc.drain();
      const r = await get("/readyz");
      assert.equal(r.status, 503);
      assert.equal(await r.text(), "draining\n");
      assert.equal((await get("/healthz")).status, 200);
    } finally {
      svc.close();
    }
  });

  it("serves /metrics as Prometheus text 0.0.4, the dashboard with a strict CSP, and 404 elsewhere", async () => {
    const { svc, get } = setup();
    try {
      const m = await get("/metrics");
      assert.equal(m.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
      assert.match(await m.text(), /^# HELP beanstalkd_up /);
      const page = await get("/");
      assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
      assert.match(await page.text(), /<script src="\/dashboard.js" defer><\/script>/);
      assert.equal((await get("/dashboard.js")).headers.get("content-type"), "text/javascript; charset=utf-8");
      assert.equal((await get("/nope")).status, 404);
      assert.equal((await get("/api/tubes/nope/jobs")).status, 404);
    } finally {
      svc.close();
    }
  });

  it("refuses every write without a configured token (403), whatever the request sends", async () => {
    const { svc, post, client } = setup();
    try {
      client.send("put 0 0 60 1\r\na\r\nreserve\r\nbury 1 0\r\n");
      const r = await post("/api/jobs/1/kick", {}, { authorization: "Bearer " });
      assert.equal(r.status, 403);
      assert.match(client.send("stats-job 1\r\n"), /state: buried/);
    } finally {
      svc.close();
    }
  });

  it("with a token: 401 without it or with a wrong one, 415 for non-JSON; the right one acts", async () => {
    const { svc, post, client } = setup("s3cret");
    try {
      assert.equal(client.send("put 0 0 60 1\r\na\r\nreserve\r\n"), "INSERTED 1\r\nRESERVED 1 1\r\na\r\n");
      assert.equal(client.send("bury 1 0\r\n"), "BURIED\r\n");
      const none = await post("/api/jobs/1/kick", {});
      assert.equal(none.status, 401);
      assert.equal(none.headers.get("www-authenticate"), 'Bearer realm="tubeway"');
      assert.equal((await post("/api/jobs/1/kick", {}, { authorization: "Bearer s3cre" })).status, 401);
      assert.equal((await post("/api/jobs/1/kick", {}, { cookie: "token=s3cret" })).status, 401);
      const form = await post("/api/jobs/1/kick", {}, { authorization: "Bearer s3cret", "content-type": "text/plain" });
      assert.equal(form.status, 415);
      assert.match(client.send("stats-job 1\r\n"), /state: buried/);

      const auth = { authorization: "Bearer s3cret" };
      const kick = await post("/api/jobs/1/kick", {}, auth);
      assert.deepEqual([kick.status, await kick.json()], [200, { reply: "KICKED" }]);
      assert.match(client.send("stats-job 1\r\n"), /state: ready/);
      assert.equal((await post("/api/jobs/1/kick", {}, auth)).status, 404); // ready: NOT_FOUND, as kick-job says
      const pause = await post("/api/tubes/default/pause", { seconds: 60 }, auth);
      assert.deepEqual([pause.status, await pause.json()], [200, { reply: "PAUSED" }]);
      assert.match(client.send("stats-tube default\r\n"), /\npause: 60\n/);
      assert.equal((await post("/api/tubes/default/pause", { seconds: -1 }, auth)).status, 400);
      assert.equal((await post("/api/tubes/-bad/pause", { seconds: 1 }, auth)).status, 400);
      const put = await post("/api/tubes/a%2Fb/put", { body: "<b>hi</b>", pri: 5 }, auth);
      assert.deepEqual([put.status, await put.json()], [200, { reply: "INSERTED 2" }]);
      assert.equal(client.send("use a/b\r\npeek-ready\r\n"), "USING a/b\r\nFOUND 2 9\r\n<b>hi</b>\r\n");
      const del = await post("/api/jobs/2/delete", {}, auth);
      assert.deepEqual([del.status, await del.json()], [200, { reply: "DELETED" }]);
      // extensions: retry policy and emptying a tube
      const dlq = await post("/api/tubes/work/dlq", { maxAttempts: 3, deadTube: "work-dead" }, auth);
      assert.deepEqual([dlq.status, await dlq.json()], [200, { reply: "DLQ_SET" }]);
      const backoff = await post("/api/tubes/work/backoff", { base: 5, cap: 60 }, auth);
      assert.deepEqual([backoff.status, await backoff.json()], [200, { reply: "BACKOFF_SET" }]);
      assert.match(client.send("stats-tube work\r\n"), /\ndlq-max-attempts: 3\ndlq-tube: work-dead\nbackoff-base: 5\n/);
      assert.equal((await post("/api/tubes/work/dlq", { maxAttempts: 3, deadTube: "-x" }, auth)).status, 400);
      assert.equal((await post("/api/tubes/work/backoff", { base: -1 }, auth)).status, 400);
      assert.equal(client.send("use work\r\nput 0 0 60 1\r\nz\r\n"), "USING work\r\nINSERTED 3\r\n");
      const empty = await post("/api/tubes/work/empty", {}, auth);
      assert.deepEqual([empty.status, await empty.json()], [200, { reply: "DELETED 1" }]);
      assert.equal((await post("/api/tubes/nosuch/empty", {}, auth)).status, 404);
      svc.drain();
      const drained = await post("/api/tubes/default/put", { body: "x" }, auth);
      assert.deepEqual([drained.status, await drained.json()], [503, { reply: "DRAINING" }]);
      // the protocol connection is still served after all of that
      assert.equal(client.send("delete 1\r\n"), "DELETED\r\n");
    } finally {
      svc.close();
    }
  });

  it("refuses a request body larger than the job size allows (413)", async () => {
    const { svc, post } = setup("t");
    try {
      const big = "x".repeat(65535 * 6 + 5000);
      const r = await post("/api/tubes/default/put", { body: big }, { authorization: "Bearer t" });
      assert.equal(r.status, 413);
    } finally {
      svc.close();
    }
  });

  it("lists a tube's jobs in serving order, bodies as text or hex, truncated, never markup", async () => {
    const { svc, get, client } = setup();
    try {
      client.send("use t\r\n");
      client.send("put 5 0 60 25\r\n<script>alert(1)</script>\r\n");
      client.send("put 1 0 60 3\r\n\x00\x01\xff\r\n");
      client.send(`put 9 0 60 600\r\n${"y".repeat(600)}\r\n`);
      client.send("put 3 30 60 1\r\nd\r\n");
      const r = await get("/api/tubes/t/jobs?state=ready");
      const l = await r.json();
      assert.equal(l.total, 3);
      assert.deepEqual(l.jobs.map((j: { id: number }) => j.id), [2, 1, 3]);
      assert.deepEqual([l.jobs[0].hex, l.jobs[0].text], ["0001ff", undefined]);
      assert.equal(l.jobs[1].text, "<script>alert(1)</script>");
      assert.deepEqual([l.jobs[2].text.length, l.jobs[2].truncated, l.jobs[2].size], [512, true, 600]);
      const d = await (await get("/api/tubes/t/jobs?state=delayed")).json();
      assert.deepEqual([d.total, d.jobs[0].id, d.jobs[0].timeLeftS], [1, 4, 30]);
      assert.equal((await get("/api/tubes/t/jobs?state=reserved")).status, 400);
      const o = await (await get("/api/overview")).json();
      assert.deepEqual(o.tubes.map((t: { name: string }) => t.name), ["default", "t"]);
      assert.deepEqual([o.jobs.ready, o.jobs.delayed, o.writable], [3, 1, false]);
    } finally {
      svc.close();
    }
  });

  it("compares tokens without an early exit", () => {
    assert.equal(sameSecret("abc", "abc"), true);
    assert.equal(sameSecret("abc", "abd"), false);
    assert.equal(sameSecret("abc", "abcd"), false);
    assert.equal(sameSecret("", "x"), false);
  });
});
