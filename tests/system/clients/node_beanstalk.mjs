// The npm client "node-beanstalk" (xobotyi) against a fresh server.
// Usage: node tests/system/clients/node_beanstalk.mjs HOST PORT
import { createRequire } from "node:module";
import { grown, run, STATS_JOB_KEYS, STATS_KEYS, STATS_TUBE_KEYS } from "./_check.mjs";

const { Client } = createRequire(import.meta.url)("node-beanstalk");

const TUBE = "client-node-beanstalk";
const OTHER = `${TUBE}-other`;

run("node-beanstalk", async (c, host, port) => {
  // Default options: the JSON serializer, so bodies are objects on this side.
  const bs = new Client({ host, port, dataReadTimeoutMs: 5000 });
  c.step("connect");
  await bs.connect();

  c.step("stats (before)");
  const s0 = await bs.stats();
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
  c.eq("ignore default succeeded", await bs.ignore("default"), true);
  c.step("list-tubes-watched");
  c.eq("list-tubes-watched", await bs.listTubesWatched(), [TUBE]);
  c.step("ignore last watched tube (NOT_IGNORED)");
  c.eq("ignore of the only watched tube", await bs.ignore(TUBE), false);

  c.step("put");
  const body1 = { msg: "hello tubeway", n: 1 };
  const put1 = await bs.put(body1, 30, 10, 0);
  const id1 = put1.id;
  c.ok("put id is a positive integer", Number.isInteger(id1) && id1 > 0, id1);
  c.eq("put state", put1.state, "ready");

  c.step("peek <id>");
  c.eq("peek", await bs.peek(id1), { id: id1, payload: body1 });
  c.step("peek-ready");
  c.eq("peek-ready", await bs.peekReady(), { id: id1, payload: body1 });
  c.step("peek-delayed (none)");
  c.eq("peek-delayed on a tube with no delayed job", await bs.peekDelayed(), null);
  c.step("peek-buried (none)");
  c.eq("peek-buried on a tube with no buried job", await bs.peekBuried(), null);

  c.step("stats-job (ready)");
  const j1 = await bs.statsJob(id1);
  c.hasKeys("stats-job", j1, STATS_JOB_KEYS);
  c.fields("stats-job", j1, { id: id1, tube: TUBE, ...c.want() });

  c.step("stats-tube (one ready)");
  const t1 = await bs.statsTube(TUBE);
  c.hasKeys("stats-tube", t1, STATS_TUBE_KEYS);
  c.fields("stats-tube", t1, { name: TUBE, ...c.want() });

  c.step("reserve");
  c.eq("reserve", await bs.reserve(), { id: id1, payload: body1 });
  c.step("stats-job (reserved)");
  c.fields("stats-job", await bs.statsJob(id1), c.want());
  c.step("stats-tube (one reserved)");
  c.fields("stats-tube", await bs.statsTube(TUBE), c.want());

  c.step("touch");
  c.eq("touch", await bs.touch(id1), true);
  c.step("stats-job (after touch)");
  const jt = await bs.statsJob(id1);
  c.fields("stats-job", jt, c.want());
  c.ok("stats-job time-left <= ttr after touch", Number(jt["time-left"]) <= 30, jt["time-left"]);

  c.step("release with delay");
  c.eq("release state", await bs.release(id1, 20, 60), "delayed");
  c.step("stats-job (delayed)");
  c.fields("stats-job", await bs.statsJob(id1), c.want());
  c.step("peek-delayed");
  c.eq("peek-delayed", await bs.peekDelayed(), { id: id1, payload: body1 });
  c.step("peek-ready (none)");
  c.eq("peek-ready with only a delayed job", await bs.peekReady(), null);
  c.step("stats-tube (one delayed)");
  c.fields("stats-tube", await bs.statsTube(TUBE), c.want());

  c.step("kick (delayed)");
  c.eq("kick count", await bs.kick(5), 1);
  c.step("stats-job (kicked)");
  c.fields("stats-job", await bs.statsJob(id1), c.want());

  c.step("reserve (again)");
  c.eq("reserve", await bs.reserve(), { id: id1, payload: body1 });
  c.step("bury");
  c.eq("bury", await bs.bury(id1, 7), true);
  c.step("stats-job (buried)");
  c.fields("stats-job", await bs.statsJob(id1), c.want());
  c.step("peek-buried");
  c.eq("peek-buried", await bs.peekBuried(), { id: id1, payload: body1 });
  c.step("stats-tube (one buried)");
  c.fields("stats-tube", await bs.statsTube(TUBE), c.want());

  c.step("put (second job)");
  const body2 = { msg: "second job" };
  const put2 = await bs.put(body2, 30, 100, 0);
  const id2 = put2.id;
  c.eq("second put id", id2, id1 + 1);
  c.step("kick (buried only)");
  c.eq("kick count with a buried and a ready job", await bs.kick(5), 1);
  c.step("stats-job (kicked from buried)");
  c.fields("stats-job", await bs.statsJob(id1), c.want());
  c.step("stats-tube (two ready)");
  c.fields("stats-tube", await bs.statsTube(TUBE), c.want());

  c.step("reserve (priority order)");
  c.eq("reserve takes the most urgent job", await bs.reserve(), { id: id1, payload: body1 });
  c.step("delete");
  c.eq("delete", await bs.delete(id1), true);
  c.step("peek <deleted id>");
  c.eq("peek of a deleted job", await bs.peek(id1), null);
  c.step("stats-job <deleted id>");
  c.eq("stats-job of a deleted job", await bs.statsJob(id1), null);
  c.step("delete <deleted id>");
  c.eq("delete of a deleted job", await bs.delete(id1), false);

  c.step("reserve (second job)");
  c.eq("reserve", await bs.reserve(), { id: id2, payload: body2 });
  c.step("delete (second job)");
  c.eq("delete", await bs.delete(id2), true);

  // watch/ignore decide which tubes reserve takes from.
  c.step("use other tube");
  c.eq("use reply tube", await bs.use(OTHER), OTHER);
  c.step("put (other tube)");
  const body3 = { msg: "other tube" };
  const id3 = (await bs.put(body3, 30, 1024, 0)).id;
  c.eq("third put id", id3, id2 + 1);
  c.step("reserve-with-timeout 0 (not watching the other tube)");
  c.eq("reserve-with-timeout 0", await bs.reserveWithTimeout(0), null);
  c.step("watch other tube");
  c.eq("watch count", await bs.watch(OTHER), 2);
  c.step("reserve (from the other tube)");
  c.eq("reserve", await bs.reserve(), { id: id3, payload: body3 });
  c.step("stats-job (other tube)");
  c.fields("stats-job", await bs.statsJob(id3), { tube: OTHER, ...c.want() });
  c.step("delete (other tube)");
  c.eq("delete", await bs.delete(id3), true);
  c.step("ignore other tube");
  c.eq("ignore succeeded", await bs.ignore(OTHER), true);
  c.step("list-tubes-watched (after ignore)");
  c.eq("list-tubes-watched", await bs.listTubesWatched(), [TUBE]);

  c.step("stats-tube (end)");
  c.fields("stats-tube", await bs.statsTube(TUBE), c.want());
  c.step("stats (end)");
  const s1 = await bs.stats();
  c.hasKeys("stats", s1, STATS_KEYS);
  c.fields("stats", s1, grown(s0));

  c.step("disconnect");
  await bs.disconnect();
});
