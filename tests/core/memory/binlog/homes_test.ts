// Homes: each live job's home file, the live count per file, the walk for a live job
// (compaction's oldestLiveId), and undoing moves whose records were lost.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Homes, type JobInfo } from "../../../../core/memory/binlog/homes.ts";
import { type LogFile, logFile } from "../../../../core/memory/binlog/log_file.ts";
import type { Segments } from "../../../../core/memory/binlog/segments.ts";

function file(seq: number): LogFile {
  return logFile(seq, `tubeway.${seq}`, 40);
}

/** What Homes uses of Segments: the files, the current one, pending bytes, left(). */
function segments(files: LogFile[], pending: () => number): Segments {
  return {
    files,
    get current() {
      return files.at(-1);
    },
    get pending() {
      return pending();
    },
    position: 0,
    left(f: LogFile) {
      f.needSync = 1;
    },
  } as unknown as Segments;
}

function info(id: number, f: LogFile, size = 100): JobInfo {
  return { id, file: f, size, state: "ready", buryOrder: 0 };
}

describe("Homes", () => {
  test("home, move and unhome keep the live counts, the live bytes and the table", () => {
    const [a, b] = [file(1), file(2)];
    const homes = new Homes(segments([a, b], () => 0));
    for (let id = 1; id <= 5; id++) homes.home(info(id, a));
    assert.equal(a.live, 5);
    assert.equal(homes.liveBytes, 500);
    homes.move(homes.jobs.get(2)!, info(2, b, 150));
    homes.unhome(homes.jobs.get(4)!);
    assert.equal(a.live, 3);
    assert.equal(b.live, 1);
    assert.equal(homes.liveBytes, 450);
    assert.equal(homes.jobs.size, 4);
    assert.equal(homes.jobs.get(2)!.file, b);
    assert.equal(homes.jobs.get(4), undefined);
    assert.deepEqual(homes.liveIds(a), [1, 3, 5]);
    assert.deepEqual(homes.liveIds(b), [2]);
  });

  test("the walk for a live job skips those that left, once, and finds one that came back", () => {
    const [a, b, c] = [file(1), file(2), file(3)];
    let pending = 0;
    const homes = new Homes(segments([a, b, c], () => pending));
    for (let id = 1; id <= 4; id++) homes.home(info(id, a));
    homes.home(info(9, b));
    assert.equal(homes.oldestLiveId(), 1);
    // compaction moves the oldest file's jobs forward one by one
    for (const id of [1, 2, 3]) homes.move(homes.jobs.get(id)!, info(id, c));
    assert.equal(homes.oldestLiveId(), 4);
    assert.equal(a.cursor, 3, "the walk does not pass the jobs that left again");
    // the last one's move is pending when its flush fails: it goes back to its old file
    pending = 1;
    homes.move(homes.jobs.get(4)!, info(4, c));
    assert.equal(homes.oldestLiveId(), 9, "a is empty: b's job is next");
    homes.undoMoves();
    assert.equal(homes.jobs.get(4)!.file, a);
    assert.equal(a.live, 1);
    assert.equal(homes.oldestLiveId(), 4);
    assert.deepEqual(homes.liveIds(a), [4]);
  });

  test("undoing moves, newest first: a job moved twice ends where it started; a deleted one stays deleted", () => {
    const [a, b, c] = [file(1), file(2), file(3)];
    const homes = new Homes(segments([a, b, c], () => 1));
    homes.home(info(1, a));
    homes.home(info(2, a));
    homes.move(homes.jobs.get(1)!, info(1, b));
    homes.move(homes.jobs.get(1)!, info(1, c));
    homes.move(homes.jobs.get(2)!, info(2, c));
    homes.unhome(homes.jobs.get(2)!);
    homes.undoMoves();
    assert.equal(homes.jobs.get(1)!.file, a);
    assert.equal(homes.jobs.get(2), undefined);
    assert.deepEqual([a.live, b.live, c.live], [1, 0, 0]);
    assert.equal(homes.liveBytes, 100);
  });
});
