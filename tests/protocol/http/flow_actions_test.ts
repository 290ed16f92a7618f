// The side port's actions and views for limits and schedules: set a tube's limits, add
// and remove a schedule (through the protocol, as every action), bad input refused
// before it reaches it, and the overview listing tubes' limits, held jobs and schedules.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../../core/clock.ts";
import { Service } from "../../../protocol/service.ts";
import { memoryEngine } from "../../../core/memory/queue.ts";
import { httpHandler } from "../../../protocol/http/handler.ts";
import { localClient } from "../../harness/in_process.ts";

const BASE = "http://tubeway.test";
const auth = { authorization: "Bearer s3cret" };

function setup() {
  const svc = new Service(memoryEngine({ clock: new ManualClock() }), { log: () => {}, error: () => {} });
  const handle = httpHandler(svc, { token: "s3cret", version: "1" });
  const post = async (path: string, body: unknown) => {
    const r = await handle(
      new Request(BASE + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify(body),
      }),
    );
    return [r.status, await r.json()];
  };
  const overview = async () => await (await handle(new Request(BASE + "/api/overview"))).json();
  return { svc, post, overview, client: localClient(svc) };
}

describe("http: limits and schedules", () => {
  it("set a tube's limits, shown in the overview with its held jobs", async () => {
    const { svc, post, overview, client } = setup();
    try {
      assert.deepEqual(
        await post("/api/tubes/work/limits", { concurrency: 1, rateCount: 10, rateWindow: 60 }),
        [200, { reply: "RATE_SET" }],
      );
      client.send("use work\r\nput 1 0 60 1\r\na\r\nput 1 0 60 1\r\nb\r\nwatch work\r\nreserve\r\n");
      const t = (await overview()).tubes.find((x: { name: string }) => x.name === "work");
      assert.deepEqual(t.limits, { concurrency: 1, rateCount: 10, rateWindowSec: 60 });
      assert.equal(t.heldJobs, 1);
      assert.deepEqual(await post("/api/tubes/work/limits", {}), [200, { reply: "RATE_SET" }], "none: removes them");
      assert.equal((await overview()).tubes.find((x: { name: string }) => x.name === "work").limits, undefined);
      for (const bad of [{ concurrency: -1 }, { rateCount: 5 }, { rateCount: 5, rateWindow: 1.5 }]) {
        assert.equal((await post("/api/tubes/work/limits", bad))[0], 400, JSON.stringify(bad));
      }
      assert.equal((await post("/api/tubes/-x/limits", {}))[0], 400);
    } finally {
      svc.close();
    }
  });

  it("add a schedule, list it in the overview, remove it", async () => {
    const { svc, post, overview } = setup();
    try {
      assert.deepEqual(
        await post("/api/schedules/nightly/set", { tube: "reports", spec: "0_3_*_*_*", pri: 5, ttr: 600, body: "go" }),
        [200, { reply: "SCHEDULED" }],
      );
      assert.deepEqual((await overview()).schedules, [
        {
          name: "nightly",
          tube: "reports",
          spec: "0_3_*_*_*",
          pri: 5,
          ttrSec: 600,
          size: 2,
          nextDueSec: 1700017200,
          lastDueSec: 0,
        },
      ]);
      // a malformed spec never reaches the protocol (the body would be read as commands after a refused line)
      for (const spec of ["every:0", "0 3 * * *", "61_*_*_*_*"]) {
        const [status, r] = await post("/api/schedules/x/set", { tube: "t", spec, body: "delete 1" });
        assert.equal(status, 400, spec);
        assert.match(r.error, /^spec: /);
      }
      assert.equal((await post("/api/schedules/x y/set", { tube: "t", spec: "every:5", body: "" }))[0], 400);
      assert.equal((await post("/api/schedules/x/set", { tube: "-t", spec: "every:5", body: "" }))[0], 400);
      assert.deepEqual(await post("/api/schedules/nightly/delete", {}), [200, { reply: "DELETED" }]);
      assert.deepEqual(await post("/api/schedules/nightly/delete", {}), [404, { reply: "NOT_FOUND" }]);
      assert.deepEqual((await overview()).schedules, []);
    } finally {
      svc.close();
    }
  });
});
