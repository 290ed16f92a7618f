// The npm client "fivebeans" against a fresh server.
// Usage: node tests/system/clients/fivebeans.mjs HOST PORT
import { createRequire } from "node:module";
import { grown, run, STATS_JOB_KEYS, STATS_KEYS, STATS_TUBE_KEYS } from "./_check.mjs";

const fivebeans = createRequire(import.meta.url)("fivebeans");

const TUBE = "client-fivebeans";
const OTHER = `${TUBE}-other`;

run("fivebeans", async (c, host, port) => {
  const client = new fivebeans.client(host, port);
  c.step("connect");
  await new Promise((resolve, reject) => {
    client.once("connect", resolve);
    client.once("error", reject);
    client.connect();
  });
  client.on("error", (e) => {
    console.error(`fivebeans: connection error at ${c.current}: ${e?.message ?? e}`);
    process.exit(1);
  });

  /** Call a fivebeans command; resolves with the callback's values, rejects with the server's word. */
  const call = (name, ...args) =>
    new Promise((resolve, reject) =>
      client[name](...args, (err, ...rest) => (err ? reject(new Error(String(err))) : resolve(rest)))
    );
  /** peek/reserve → {id, body} with the body as text. */
  const job = async (name, ...args) => {
    const [id, payload] = await call(name, ...args);
    return { id: String(id), body: Buffer.isBuffer(payload) ? payload.toString("utf8") : payload };
  };
  const one = async (name, ...args) => (await call(name, ...args))[0];

  c.step("stats (before)");
  const s0 = await one("stats");
  c.hasKeys("stats", s0, STATS_KEYS);
  c.ok("stats version is non-empty", String(s0.version).length > 0, s0.version);
  c.ok("stats current-connections >= 1", Number(s0["current-connections"]) >= 1, s0["current-connections"]);

  c.step("use");
  c.eq("use reply tube", await one("use", TUBE), TUBE);
  c.step("list-tube-used");
  c.eq("list-tube-used", await one("list_tube_used"), TUBE);

  c.step("watch");
  c.eq("watch count", await one("watch", TUBE), "2");
  c.step("ignore default");
  c.eq("ignore count", await one("ignore", "default"), "1");
  c.step("list-tubes-watched");
  c.eq("list-tubes-watched", await one("list_tubes_watched"), [TUBE]);
  c.step("ignore last watched tube (NOT_IGNORED)");
  await c.rejects("ignore of the only watched tube", () => call("ignore", TUBE), /^Error: NOT_IGNORED$|^NOT_IGNORED$/);

  c.step("put");
  const body1 = "hello tubeway";
  const id1 = await one("put", 10, 0, 30, body1);
  c.ok("put id is a positive integer", /^[1-9][0-9]*$/.test(id1), id1);

  c.step("peek <id>");
  c.eq("peek", await job("peek", id1), { id: id1, body: body1 });
  c.step("peek-ready");
  c.eq("peek-ready", await job("peek_ready"), { id: id1, body: body1 });
  c.step("peek-delayed (none)");
  await c.rejects("peek-delayed on a tube with no delayed job", () => call("peek_delayed"), /NOT_FOUND/);
  c.step("peek-buried (none)");
  await c.rejects("peek-buried on a tube with no buried job", () => call("peek_buried"), /NOT_FOUND/);

  c.step("stats-job (ready)");
  const j1 = await one("stats_job", id1);
  c.hasKeys("stats-job", j1, STATS_JOB_KEYS);
  c.fields("stats-job", j1, { id: id1, tube: TUBE, ...c.want() });

  c.step("stats-tube (one ready)");
  const t1 = await one("stats_tube", TUBE);
  c.hasKeys("stats-tube", t1, STATS_TUBE_KEYS);
  c.fields("stats-tube", t1, { name: TUBE, ...c.want() });

  c.step("reserve");
  c.eq("reserve", await job("reserve"), { id: id1, body: body1 });
  c.step("stats-job (reserved)");
  c.fields("stats-job", await one("stats_job", id1), c.want());
  c.step("stats-tube (one reserved)");
  c.fields("stats-tube", await one("stats_tube", TUBE), c.want());

  c.step("touch");
  c.eq("touch reply values", await call("touch", id1), []);
  c.step("stats-job (after touch)");
  const jt = await one("stats_job", id1);
  c.fields("stats-job", jt, c.want());
  c.ok("stats-job time-left <= ttr after touch", Number(jt["time-left"]) <= 30, jt["time-left"]);

  c.step("release with delay");
  c.eq("release reply values", await call("release", id1, 20, 60), []);
  c.step("stats-job (delayed)");
  c.fields("stats-job", await one("stats_job", id1), c.want());
  c.step("peek-delayed");
  c.eq("peek-delayed", await job("peek_delayed"), { id: id1, body: body1 });
  c.step("peek-ready (none)");
  await c.rejects("peek-ready with only a delayed job", () => call("peek_ready"), /NOT_FOUND/);
  c.step("stats-tube (one delayed)");
  c.fields("stats-tube", await one("stats_tube", TUBE), c.want());

  c.step("kick (delayed)");
  c.eq("kick count", await one("kick", 5), "1");
  c.step("stats-job (kicked)");
  c.fields("stats-job", await one("stats_job", id1), c.want());

  c.step("reserve (again)");
  c.eq("reserve", await job("reserve"), { id: id1, body: body1 });
  c.step("bury");
  c.eq("bury reply values", await call("bury", id1, 7), []);
  c.step("stats-job (buried)");
  c.fields("stats-job", await one("stats_job", id1), c.want());
  c.step("peek-buried");
  c.eq("peek-buried", await job("peek_buried"), { id: id1, body: body1 });
  c.step("stats-tube (one buried)");
  c.fields("stats-tube", await one("stats_tube", TUBE), c.want());

  c.step("put (second job)");
  const body2 = "second job";
  const id2 = await one("put", 100, 0, 30, body2);
  c.eq("second put id", id2, String(Number(id1) + 1));
  c.step("kick (buried only)");
  c.eq("kick count with a buried and a ready job", await one("kick", 5), "1");
  c.step("stats-job (kicked from buried)");
  c.fields("stats-job", await one("stats_job", id1), c.want());
  c.step("stats-tube (two ready)");
  c.fields("stats-tube", await one("stats_tube", TUBE), c.want());

  c.step("reserve (priority order)");
  c.eq("reserve takes the most urgent job", await job("reserve"), { id: id1, body: body1 });
  c.step("delete");
  c.eq("delete reply values", await call("destroy", id1), []);
  c.step("peek <deleted id>");
  await c.rejects("peek of a deleted job", () => call("peek", id1), /NOT_FOUND/);
  c.step("stats-job <deleted id>");
  await c.rejects("stats-job of a deleted job", () => call("stats_job", id1), /NOT_FOUND/);
  c.step("delete <deleted id>");
  await c.rejects("delete of a deleted job", () => call("destroy", id1), /NOT_FOUND/);

  c.step("reserve (second job)");
  c.eq("reserve", await job("reserve"), { id: id2, body: body2 });
  c.step("delete (second job)");
  c.eq("delete reply values", await call("destroy", id2), []);

  c.step("use other tube");
  c.eq("use reply tube", await one("use", OTHER), OTHER);
  c.step("put (other tube)");
  const body3 = "other tube";
  const id3 = await one("put", 1024, 0, 30, body3);
  c.eq("third put id", id3, String(Number(id2) + 1));
  c.step("reserve-with-timeout 0 (not watching the other tube)");
  await c.rejects("reserve-with-timeout 0", () => call("reserve_with_timeout", 0), /TIMED_OUT/);
  c.step("watch other tube");
  c.eq("watch count", await one("watch", OTHER), "2");
  c.step("reserve (from the other tube)");
  c.eq("reserve", await job("reserve"), { id: id3, body: body3 });
  c.step("stats-job (other tube)");
  c.fields("stats-job", await one("stats_job", id3), { tube: OTHER, ...c.want() });
  c.step("delete (other tube)");
  c.eq("delete reply values", await call("destroy", id3), []);
  c.step("ignore other tube");
  c.eq("ignore count", await one("ignore", OTHER), "1");
  c.step("list-tubes-watched (after ignore)");
  c.eq("list-tubes-watched", await one("list_tubes_watched"), [TUBE]);

  c.step("stats-tube (end)");
  c.fields("stats-tube", await one("stats_tube", TUBE), c.want());
  c.step("stats (end)");
  const s1 = await one("stats");
  c.hasKeys("stats", s1, STATS_KEYS);
  c.fields("stats", s1, grown(s0));

  c.step("quit");
  client.end();
});
