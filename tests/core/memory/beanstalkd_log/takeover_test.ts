// Importing beanstalkd's files into tubeway's log, and exporting tubeway's jobs as
// a beanstalkd log, over in-memory files (the real beanstalkd and the real file
// system are in tests/system/beanstalkd_takeover_test.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { openBinlog } from "../../../../core/memory/binlog/open.ts";
import { ManualClock } from "../../../../core/clock.ts";
import { MemoryFiles } from "../../../harness/files_memory.ts";
import { Queue } from "../../../../core/memory/queue.ts";
import type { JobRecord } from "../../../../core/memory/wal.ts";
import { jobRecord as baseJob } from "../../../harness/job_record.ts";
import { encodeV7 } from "../../../../core/memory/beanstalkd_log/write.ts";
import { readBeanstalkdLog } from "../../../../core/memory/beanstalkd_log/read.ts";
import { IMPORT_MARKER, importBeanstalkd } from "../../../../core/memory/beanstalkd_log/takeover.ts";
import { exportBinlog, parseExportArgs } from "../../../../core/memory/beanstalkd_log/export.ts";

const DIR = "/data/bs";
const OUT = "/data/out";
const WALL0 = 1_700_000_000_000;
const enc = new TextEncoder();

/** The tests' job: tube t, pri 10, 30 s TTR, created 5 s before WALL0, reserved once. */
function job(id: number, over: Partial<JobRecord> = {}): JobRecord {
  const body = enc.encode(`job ${id}\r\n`);
  return baseJob(id, { tube: "t", pri: 10, ttrMs: 30_000, createdAtMs: WALL0 - 5000, reserves: 1, body, ...over });
}

/** A tubeway start on DIR: open the log, restore it, import; the pieces to look at. */
async function start(files: MemoryFiles) {
  const clock = new ManualClock(1000, WALL0);
  const logs: string[] = [];
  let queue: Queue | undefined = undefined; // assigned once the log is open (the lookup below reads it later)
  const { wal, recovered } = openBinlog(
    { dir: DIR, fsyncMs: 0, durableAcks: false, maxFileSize: 1 << 20, maxJobSize: 65535, log: (m) => logs.push(m) },
    files,
    clock,
    (id) => queue?.liveRecord(id),
  );
  queue = new Queue({ clock, maxJobSize: 65535, wal });
  queue.restore(recovered.jobs, recovered.maxId);
  const outcome = await importBeanstalkd(DIR, files, queue, wal, (m) => logs.push(m));
  return { queue, wal, recovered, outcome, logs };
}

function beanstalkdDir(): { files: MemoryFiles; theirs: Uint8Array } {
  const files = new MemoryFiles([DIR, OUT]);
  const theirs = encodeV7([
    job(3, { tube: "a" }),
    job(7, { state: "delayed", delayMs: 60_000, deadlineAtMs: WALL0 + 60_000 }),
    job(5, { state: "buried", buries: 1 }),
    job(4, { state: "buried", buries: 1 }),
    job(9000, { state: "ready" }),
  ]);
  files.put(`${DIR}/binlog.2`, theirs);
  files.put(`${DIR}/binlog.3`, Uint8Array.of(7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)); // beanstalkd's empty newest file
  files.put(`${DIR}/lock`, new Uint8Array(0));
  // job 9000 was deleted: its id still counts
  const del = new Uint8Array(84);
  del.set(encodeV7([job(9000)]).subarray(4 + 4 + 1, 4 + 4 + 1 + 80), 4);
  del[4 + 76] = 0;
  files.put(`${DIR}/binlog.4`, new Uint8Array([7, 0, 0, 0, ...del]));
  return { files, theirs };
}

const view = (q: Queue, id: number) => {
  const j = q.peek(id);
  return j && [j.id, j.tube.name, j.state, j.pri, new TextDecoder().decode(j.body)];
};

describe("importing beanstalkd's files", () => {
  it("imports once, into tubeway's log, with ids above the highest one seen, files untouched", async () => {
    const { files, theirs } = beanstalkdDir();
    const before = new Map(files.list(DIR).map((n) => [n, files.read(`${DIR}/${n}`)]));
    const first = await start(files);
    assert.equal(first.outcome.kind, "imported");
    assert.deepEqual(first.logs.filter((l) => l.startsWith("imported")), [
      "imported beanstalkd's binlog from /data/bs: 4 jobs: 1 ready, 1 delayed, 2 buried; 3 files read, 0 problems; " +
      "next id 9001",
    ]);
    assert.deepEqual([3, 7, 5, 4].map((id) => view(first.queue, id)), [
      [3, "a", "ready", 10, "job 3\r\n"],
      [7, "t", "delayed", 10, "job 7\r\n"],
      [5, "t", "buried", 10, "job 5\r\n"],
      [4, "t", "buried", 10, "job 4\r\n"],
    ]);
    assert.equal(view(first.queue, 9000), undefined);
    assert.ok(files.list(DIR).includes(IMPORT_MARKER));
    for (const [name, bytes] of before) assert.deepEqual(files.read(`${DIR}/${name}`), bytes, `${name} unchanged`);
    assert.deepEqual(files.read(`${DIR}/binlog.2`), theirs);
    first.wal.close();

    // the next start reads tubeway's log only
    const second = await start(files);
    assert.equal(second.outcome.kind, "none");
    assert.deepEqual(second.recovered.jobs.map((j) => [j.id, j.state]), [[3, "ready"], [7, "delayed"], [5, "buried"], [
      4,
      "buried",
    ]]);
    assert.ok(
      second.recovered.maxId >= 9000,
      `maxId ${second.recovered.maxId}: the deleted job's id is not handed out`,
    );
    second.wal.close();
  });

  it("an import cut short before its marker is done again without doubling any job", async () => {
    const { files } = beanstalkdDir();
    const first = await start(files);
    first.wal.close();
    files.unlink(`${DIR}/${IMPORT_MARKER}`); // as if the process died just before writing it
    const again = await start(files);
    assert.equal(again.outcome.kind, "imported");
    assert.equal(again.outcome.kind === "imported" && again.outcome.imported, 0, "all were in tubeway's log already");
    assert.deepEqual(again.recovered.jobs.map((j) => j.id), [3, 7, 5, 4]);
    assert.equal(again.queue.peek(5)?.state, "buried");
    again.wal.close();
  });

  it("reports damage as <path>:<offset>: <reason> and imports what is readable", async () => {
    const files = new MemoryFiles([DIR]);
    const good = encodeV7([job(1)]);
    files.put(`${DIR}/binlog.1`, new Uint8Array([...good, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]));
    const r = await start(files);
    assert.ok(
      r.logs.includes(
        `${DIR}/binlog.1:${good.length}: bad tube name length -1; nothing readable in the remaining 7 bytes`,
      ),
      r.logs.join("\n"),
    );
    assert.ok(r.logs.some((l) => /^imported .* 1 job: .* 1 problem; next id 2$/.test(l)), r.logs.join("\n"));
    assert.deepEqual(view(r.queue, 1), [1, "t", "ready", 10, "job 1\r\n"]);
    r.wal.close();
  });

  it("a beanstalkd file it cannot read stops the start, with no marker written", async () => {
    const { files } = beanstalkdDir();
    const read = files.read.bind(files);
    files.read = (path: string) => {
      if (path.endsWith("/binlog.3")) throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
      return read(path);
    };
    const r = await start(files);
    assert.deepEqual(r.outcome, {
      kind: "failed",
      message: `cannot read ${DIR}/binlog.3: EACCES: permission denied ` +
        "(tubeway only reads beanstalkd's files; run it as a user who can)",
    });
    assert.ok(!files.list(DIR).includes(IMPORT_MARKER));
    r.wal.close();
  });

  it("says so when beanstalkd wrote files after the import, and imports nothing more", async () => {
    const { files } = beanstalkdDir();
    (await start(files)).wal.close();
    files.put(`${DIR}/binlog.5`, encodeV7([job(20)]));
    const r = await start(files);
    assert.equal(r.outcome.kind, "none");
    assert.ok(
      r.logs.includes(
        `${DIR}: beanstalkd files written after the import are not read (binlog.5); remove ${DIR}/${IMPORT_MARKER} to import again`,
      ),
      r.logs.join("\n"),
    );
    assert.equal(r.queue.peek(20), undefined);
    r.wal.close();
  });

  it("does nothing on a directory with no beanstalkd files", async () => {
    const files = new MemoryFiles([DIR]);
    const r = await start(files);
    assert.equal(r.outcome.kind, "none");
    assert.ok(!files.list(DIR).includes(IMPORT_MARKER));
    r.wal.close();
  });
});

describe("export-binlog", () => {
  it("writes what tubeway holds as one v7 file: states, bury order, passed delays as ready", async () => {
    const { files } = beanstalkdDir();
    const s = await start(files);
    const c = s.queue.connect(() => {});
    s.queue.use(c, "new");
    assert.equal(
      (s.queue.put(c, { id: s.queue.takeId(), pri: 1, delaySec: 0, ttrSec: 10, body: enc.encode("fresh\r\n") }) as {
        id: number;
      }).id,
      9001,
    );
    assert.ok(s.wal.flush());
    s.wal.close();
    const said: string[] = [];
    const r = exportBinlog(DIR, OUT, files, (m) => said.push(m), WALL0 + 120_000);
    assert.equal(r.kind, "done", JSON.stringify(r));
    if (r.kind !== "done") return;
    assert.deepEqual(files.list(OUT), ["binlog.1"]);
    const back = readBeanstalkdLog([{ name: "binlog.1", bytes: files.read(`${OUT}/binlog.1`) }]);
    assert.deepEqual(back.problems, []);
    // ids tubeway handed out (and reserved) stay used: the file ends with a job put and deleted at the floor
    assert.ok(back.maxId > 9001, `maxId ${back.maxId}`);
    assert.deepEqual(back.jobs.map((j) => [j.id, j.tube, j.state]), [
      [3, "a", "ready"],
      [7, "t", "ready"],
      [9001, "new", "ready"],
      [5, "t", "buried"],
      [4, "t", "buried"],
    ]);
    assert.deepEqual(r.lines, [
      `exported 5 jobs (3 ready, 0 delayed, 2 buried) to ${OUT}/binlog.1; start beanstalkd with -b ${OUT}`,
    ]);
  });

  it("includes beanstalkd's jobs not imported yet, as a start would, and changes nothing in DIR", () => {
    const { files } = beanstalkdDir();
    const before = files.list(DIR);
    const r = exportBinlog(DIR, OUT, files, () => {}, WALL0);
    assert.equal(r.kind, "done");
    assert.deepEqual(
      r.kind === "done" && r.lines[0],
      `included 4 jobs from beanstalkd's files in ${DIR} (not imported yet)`,
    );
    const back = readBeanstalkdLog([{ name: "binlog.1", bytes: files.read(`${OUT}/binlog.1`) }]);
    assert.deepEqual(back.jobs.map((j) => [j.id, j.state]), [[3, "ready"], [7, "delayed"], [5, "buried"], [
      4,
      "buried",
    ]]);
    assert.equal(back.maxId, 9000, "the deleted job's id stays used");
    assert.deepEqual(files.list(DIR), before);
  });

  it("refuses a locked directory and an output that already holds a beanstalkd log", async () => {
    const { files } = beanstalkdDir();
    const s = await start(files);
    const locked = exportBinlog(DIR, OUT, files, () => {}, WALL0);
    assert.deepEqual(locked.kind === "failed" && [locked.locked, /failed to lock/.test(locked.message)], [true, true]);
    s.wal.close();
    files.put(`${OUT}/binlog.9`, new Uint8Array(4));
    const busy = exportBinlog(DIR, OUT, files, () => {}, WALL0);
    assert.deepEqual(busy, {
      kind: "failed",
      message: `${OUT} already holds a beanstalkd log; give an empty directory`,
      locked: false,
    });
  });

  it("parses its arguments", () => {
    assert.deepEqual(parseExportArgs(["-b", "d", "o"]), { kind: "run", dir: "d", out: "o" });
    assert.deepEqual(parseExportArgs(["o", "-bd"]), { kind: "run", dir: "d", out: "o" });
    assert.deepEqual(parseExportArgs(["-h"]), { kind: "help" });
    assert.equal(parseExportArgs(["o"]).kind, "error");
    assert.equal(parseExportArgs(["-b", "d"]).kind, "error");
    assert.equal(parseExportArgs(["-b", "d", "o", "p"]).kind, "error");
    assert.equal(parseExportArgs(["-x", "-b", "d", "o"]).kind, "error");
  });
});
