// The npm client "jackd" against a fresh server.
// Usage: node tests/system/clients/jackd.mjs HOST PORT
import { createRequire } from "node:module";
import { grown, parseYaml, run, STATS_JOB_KEYS, STATS_KEYS, STATS_TUBE_KEYS } from "./_check.mjs";

const Jackd = createRequire(import.meta.url)("jackd");

const TUBE = "client-jackd";
const OTHER = `${TUBE}-other`;

run("jackd", async (c, host, port) => {
  const bs = new Jackd();
  c.step("connect");
  await bs.connect({ host, port });

  /** jackd returns the raw YAML text of stats replies. */
  const yaml = async (p) => parseYaml(await p);
  /** jackd returns {id: string, payload: Buffer}; compare ids and text. */
  const job = async (p) => {
    const j = await p;
    return { id: j.id, body: Buffer.isBuffer(j.payload) ? j.payload.toString("utf8") : j.payload };
  };

  c.step("stats (before)");
  const s0 = await yaml(bs.stats());
  c.hasKeys("stats", s0, STATS_KEYS);
  c.ok("stats version is non-empty", String(s0.version).length > 0, s0.version);
  c.ok("stats current-connections >= 1", Number(s0["current-connections"]) >= 1, s0["current-connections"]);

  c.step("use");
  c.eq("use reply tube", await bs.use(TUBE), TUBE);
  c.step("list-tube-used");
  c.eq("list-tube-used", await bs.listTubeUsed(), TUBE);

  c.step("watch");
  c.eq("watch count", await bs.watch(TUBE), 2);
  c.step("ignore default");
  c.eq("ignore count", await bs.ignore("default"), 1);
  c.step("list-tubes-watched");
  c.eq("list-tubes-watched", await yaml(bs.listTubesWatched()), [TUBE]);
  c.step("ignore last watched tube (NOT_IGNORED)");
  await c.rejects("ignore of the only watched tube", () => bs.ignore(TUBE), /^NOT_IGNORED$/);

  c.step("put");
  const body1 = "hello tubeway";
  const id1 = await bs.put(body1, { priority: 10, delay: 0, ttr: 30 });
  c.ok("put id is a positive integer", /^[1-9][0-9]*$/.test(id1), id1);

  c.step("peek <id>");
  c.eq("peek", await job(bs.peek(id1)), { id: id1, body: body1 });
  c.step("peek-ready");
  c.eq("peek-ready", await job(bs.peekReady()), { id: id1, body: body1 });
  c.step("peek-delayed (none)");
  await c.rejects("peek-delayed on a tube with no delayed job", () => bs.peekDelayed(), /^NOT_FOUND$/);
  c.step("peek-buried (none)");
  await c.rejects("peek-buried on a tube with no buried job", () => bs.peekBuried(), /^NOT_FOUND$/);

  c.step("stats-job (ready)");
  const j1 = await yaml(bs.statsJob(id1));
  c.hasKeys("stats-job", j1, STATS_JOB_KEYS);
  c.fields("stats-job", j1, { id: id1, tube: TUBE, ...c.want() });

  c.step("stats-tube (one ready)");
  const t1 = await yaml(bs.statsTube(TUBE));
  c.hasKeys("stats-tube", t1, STATS_TUBE_KEYS);
  c.fields("stats-tube", t1, { name: TUBE, ...c.want() });

  c.step("reserve");
  c.eq("reserve", await job(bs.reserve()), { id: id1, body: body1 });
  c.step("stats-job (reserved)");
  c.fields("stats-job", await yaml(bs.statsJob(id1)), c.want());
  c.step("stats-tube (one reserved)");
  c.fields("stats-tube", await yaml(bs.statsTube(TUBE)), c.want());

  c.step("touch");
  await bs.touch(id1);
  c.step("stats-job (after touch)");
  const jt = await yaml(bs.statsJob(id1));
  c.fields("stats-job", jt, c.want());
  c.ok("stats-job time-left <= ttr after touch", Number(jt["time-left"]) <= 30, jt["time-left"]);

  c.step("release with delay");
  await bs.release(id1, { priority: 20, delay: 60 });
  c.step("stats-job (delayed)");
  c.fields("stats-job", await yaml(bs.statsJob(id1)), c.want());
  c.step("peek-delayed");
  c.eq("peek-delayed", await job(bs.peekDelayed()), { id: id1, body: body1 });
  c.step("peek-ready (none)");
  await c.rejects("peek-ready with only a delayed job", () => bs.peekReady(), /^NOT_FOUND$/);
  c.step("stats-tube (one delayed)");
  c.fields("stats-tube", await yaml(bs.statsTube(TUBE)), c.want());

  c.step("kick (delayed)");
  c.eq("kick count", await bs.kick(5), 1);
  c.step("stats-job (kicked)");
  c.fields("stats-job", await yaml(bs.statsJob(id1)), c.want());

  c.step("reserve (again)");
  c.eq("reserve", await job(bs.reserve()), { id: id1, body: body1 });
  c.step("bury");
  await bs.bury(id1, 7);
  c.step("stats-job (buried)");
  c.fields("stats-job", await yaml(bs.statsJob(id1)), c.want());
  c.step("peek-buried");
  c.eq("peek-buried", await job(bs.peekBuried()), { id: id1, body: body1 });
  c.step("stats-tube (one buried)");
  c.fields("stats-tube", await yaml(bs.statsTube(TUBE)), c.want());

  c.step("put (second job)");
  const body2 = "second job";
  const id2 = await bs.put(body2, { priority: 100, delay: 0, ttr: 30 });
  c.eq("second put id", id2, String(Number(id1) + 1));
  c.step("kick (buried only)");
  c.eq("kick count with a buried and a ready job", await bs.kick(5), 1);
  c.step("stats-job (kicked from buried)");
  c.fields("stats-job", await yaml(bs.statsJob(id1)), c.want());
  c.step("stats-tube (two ready)");
  c.fields("stats-tube", await yaml(bs.statsTube(TUBE)), c.want());

  c.step("reserve (priority order)");
  c.eq("reserve takes the most urgent job", await job(bs.reserve()), { id: id1, body: body1 });
  c.step("delete");
  await bs.delete(id1);
  c.step("peek <deleted id>");
  await c.rejects("peek of a deleted job", () => bs.peek(id1), /^NOT_FOUND$/);
  c.step("stats-job <deleted id>");
  await c.rejects("stats-job of a deleted job", () => bs.statsJob(id1), /NOT_FOUND/);
  c.step("delete <deleted id>");
  await c.rejects("delete of a deleted job", () => bs.delete(id1), /^NOT_FOUND$/);

  c.step("reserve (second job)");
  c.eq("reserve", await job(bs.reserve()), { id: id2, body: body2 });
  c.step("delete (second job)");
  await bs.delete(id2);

  c.step("use other tube");
  c.eq("use reply tube", await bs.use(OTHER), OTHER);
  c.step("put (other tube)");
  const body3 = "other tube";
  const id3 = await bs.put(body3, { priority: 1024, delay: 0, ttr: 30 });
  c.eq("third put id", id3, String(Number(id2) + 1));
  c.step("reserve-with-timeout 0 (not watching the other tube)");
  await c.rejects("reserve-with-timeout 0", () => bs.reserveWithTimeout(0), /^TIMED_OUT$/);
  c.step("watch other tube");
  c.eq("watch count", await bs.watch(OTHER), 2);
  c.step("reserve (from the other tube)");
  c.eq("reserve", await job(bs.reserve()), { id: id3, body: body3 });
  c.step("stats-job (other tube)");
  c.fields("stats-job", await yaml(bs.statsJob(id3)), { tube: OTHER, ...c.want() });
  c.step("delete (other tube)");
  await bs.delete(id3);
  c.step("ignore other tube");
  c.eq("ignore count", await bs.ignore(OTHER), 1);
  c.step("list-tubes-watched (after ignore)");
  c.eq("list-tubes-watched", await yaml(bs.listTubesWatched()), [TUBE]);

  c.step("stats-tube (end)");
  c.fields("stats-tube", await yaml(bs.statsTube(TUBE)), c.want());
  c.step("stats (end)");
  const s1 = await yaml(bs.stats());
  c.hasKeys("stats", s1, STATS_KEYS);
  c.fields("stats", s1, grown(s0));

  c.step("quit");
  await bs.quit();
});
