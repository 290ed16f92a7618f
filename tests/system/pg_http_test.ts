// The HTTP side port (--http) of a node over PostgreSQL: /metrics, /readyz, the
// dashboard's overview and job listings read the database, and its write actions
// (put, kick-job, delete) go through the engine like protocol commands.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RUNTIME } from "../harness/paths.ts";
import { bunPgServer, denoPgServer } from "../harness/targets.ts";
import { skipWithoutPostgres } from "../harness/postgres.ts";
import { freePort } from "../harness/ports.ts";
import { dial } from "../harness/wire.ts";
import { putId } from "./wire_suite.ts";

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
