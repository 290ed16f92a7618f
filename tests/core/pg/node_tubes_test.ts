// A node's tubes (core/pg/node_tubes.ts): 1.12's list of tubes on one node, tubes held
// while they have jobs, and the tubes to forget in the database.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { NodeTubes } from "../../../core/pg/node_tubes.ts";
import { TurnState } from "../../../core/pg/turn.ts";

function setup() {
  let kicks = 0;
  const tubes = new NodeTubes(() => kicks++);
  let conns = 0;
  const connect = () => tubes.connect(() => {}, ++conns);
  return { tubes, connect, kicks: () => kicks };
}

const rows = (...names: string[]) => names.map((name) => ({ name }));

describe("NodeTubes", () => {
  it("keeps 1.12's list: use/watch append, an unreferenced tube without jobs goes and is forgotten", async () => {
    const { tubes, connect, kicks } = setup();
    const c = connect();
    tubes.use(c, "a");
    tubes.watch(c, "b");
    assert.deepEqual(tubes.sync([]), ["default", "a", "b"]);
    tubes.use(c, "default");
    assert.deepEqual(tubes.sync([]), ["default", "b"]);
    assert.ok(tubes.hasDrops);
    assert.ok(kicks() > 0, "a turn is asked for");
    const drops = tubes.takeDrops()!;
    assert.deepEqual(drops.names, ["a"]);
    let forgotten = false;
    const read = tubes.forgotten().then(() => (forgotten = true));
    await Promise.resolve();
    assert.equal(forgotten, false, "reads wait until the drop's turn has ended");
    drops.done();
    await read;
    assert.equal(forgotten, true);
    assert.equal(tubes.takeDrops(), undefined);
  });

  it("holds a tube that got jobs while unreferenced, and lets it go when its jobs are gone", () => {
    const { tubes, connect } = setup();
    const c = connect();
    tubes.use(c, "j");
    const put = new TurnState();
    put.filled.add("j");
    tubes.jobsMoved(put);
    tubes.use(c, "default");
    assert.deepEqual(tubes.sync(rows("j")), ["default", "j"], "a job keeps its tube");
    assert.equal(tubes.hasDrops, false);
    assert.ok(tubes.has("j") && !tubes.referenced("j"));
    const del = new TurnState();
    del.emptied.add("j");
    tubes.jobsMoved(del);
    assert.deepEqual(tubes.sync([]), ["default"], "removed with its last job");
  });

  it("appends a tube that got jobs through another node, and forgets one whose jobs went elsewhere", () => {
    const { tubes } = setup();
    assert.deepEqual(tubes.sync(rows("x", "y")), ["default", "x", "y"]);
    assert.deepEqual(tubes.sync(rows("y")), ["default", "y"]);
    assert.deepEqual(tubes.takeDrops()?.names, ["x"], "x's row (pause, counters) goes too");
  });

  it("a closing connection lets go of its tubes", () => {
    const { tubes, connect } = setup();
    const c = connect();
    tubes.use(c, "u");
    tubes.watch(c, "w");
    tubes.disconnect(c);
    assert.deepEqual(tubes.sync([]), ["default"]);
    assert.deepEqual(tubes.takeDrops()?.names.sort(), ["u", "w"]);
    assert.equal(tubes.referenced("default"), true, "default is always there");
  });
});
