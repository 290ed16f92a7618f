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

  it("a tube left empty is let go of and forgotten with the next turn there is, or before a read", async () => {
    const { tubes, connect, kicks } = setup();
    const c = connect();
    tubes.use(c, "e");
    const put = new TurnState();
    put.filled.add("e");
    tubes.jobsMoved(put);
    tubes.use(c, "default");
    assert.equal(tubes.hasDrops, false, "held: it has a job");
    const before = kicks();
    const del = new TurnState();
    del.emptied.add("e");
    tubes.jobsMoved(del);
    assert.ok(tubes.hasDrops && !tubes.has("e"));
    assert.equal(kicks(), before, "no turn of its own");
    const read = tubes.forgotten();
    assert.equal(kicks(), before + 1, "a read asks for the turn it waits for");
    tubes.takeDrops()!.done();
    await read;
  });

  it("a tube used again while the turn forgetting it is in flight: the next turn waits for that one", () => {
    const { tubes, connect } = setup();
    const c = connect();
    tubes.use(c, "r");
    tubes.use(c, "default");
    const drops = tubes.takeDrops()!;
    assert.deepEqual(drops.names, ["r"]);
    assert.equal(tubes.waitForDrops, false);
    tubes.watch(c, "other");
    assert.equal(tubes.waitForDrops, false, "another tube is no matter");
    tubes.use(c, "r");
    assert.equal(tubes.waitForDrops, true, "r is a new tube: what is done to it must follow the drop");
    drops.done();
    assert.equal(tubes.waitForDrops, false);
    assert.equal(tubes.hasDrops, false, "the new r is referenced: nothing to forget");
  });

  it("stats-tube of a held tube whose jobs went through another node lets it go", () => {
    const { tubes } = setup();
    assert.deepEqual(tubes.sync(rows("h")), ["default", "h"]);
    assert.ok(tubes.stats("h", { jobs: 1 }), "it has a job: listed");
    assert.equal(tubes.stats("h", { jobs: 0 }), undefined, "no job left, nothing refers to it: gone");
    assert.equal(tubes.has("h"), false);
    assert.deepEqual(tubes.takeDrops()?.names, ["h"]);
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
