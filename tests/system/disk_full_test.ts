// Disk trouble through a real connection: when the log cannot be written, put is
// refused with beanstalkd's OUT_OF_MEMORY, nothing unlogged is acknowledged, and
// everything that needs no write (and delete, which the ballast keeps room for)
// goes on working, for this client and every other.
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import { openBinlog } from "../../core/memory/binlog/open.ts";
import { MemoryFiles } from "../harness/files_memory.ts";
import { systemClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { Service } from "../../protocol/service.ts";
import { listen, type Listening } from "../../adapters/listen.ts";
import { dial } from "../harness/wire.ts";

const DIR = "/wal";
const files = new MemoryFiles([DIR]);
let queue: Queue | undefined = undefined;
const { wal } = openBinlog(
  { dir: DIR, fsyncMs: 50, durableAcks: false, maxFileSize: 64 * 1024, maxJobSize: 65535, log: () => {} },
  files,
  systemClock,
  (id) => queue?.liveRecord(id),
);
queue = new Queue({ clock: systemClock, wal });
const svc = new Service(queue, { log: () => {}, error: () => {} });
let server: Listening;

before(async () => {
  server = await listen(svc, { host: "127.0.0.1", port: 0 });
});
after(() => {
  server.close();
  svc.close();
  wal.close();
});

it("a full disk refuses put with OUT_OF_MEMORY and keeps serving everything else", { timeout: 60_000 }, async () => {
  const addr = { host: "127.0.0.1", port: (server.address as { port: number }).port };
  const a = await dial(addr);
  const b = await dial(addr);
  const body = "x".repeat(500);
  assert.equal(await a.put(body), "INSERTED 1\r\n");
  assert.equal(await a.put(body), "INSERTED 2\r\n");

  files.capacity = files.used(); // the disk is now full
  let refused = "";
  const inserted: number[] = [];
  for (let i = 0; i < 200 && !refused; i++) {
    const r = await a.put(body);
    const m = /^INSERTED (\d+)\r\n$/.exec(r);
    if (m) inserted.push(Number(m[1]));
    else refused = r;
  }
  assert.equal(refused, "OUT_OF_MEMORY\r\n", "put is refused once the log cannot grow");
  const before = Number(/current-jobs-ready: (\d+)/.exec(await b.cmd("stats"))![1]);
  assert.equal(await b.put(body), "OUT_OF_MEMORY\r\n", "for every client");
  assert.equal(
    Number(/current-jobs-ready: (\d+)/.exec(await b.cmd("stats"))![1]),
    before,
    "a refused put stores nothing",
  );

  assert.equal(await b.cmd("peek 1"), `FOUND 1 500\r\n${body}\r\n`, "reads still work");
  assert.equal(await b.cmd("list-tube-used"), "USING default\r\n");
  assert.equal(await a.cmd("delete 1"), "DELETED\r\n", "deletes still work on a full disk");
  assert.equal(await a.cmd("reserve-with-timeout 0"), "RESERVED 2 500\r\n" + body + "\r\n");
  // A release needs a record the log cannot take: refused, and the job stays reserved.
  assert.equal(await a.cmd("release 2 0 0"), "INTERNAL_ERROR\r\n");
  assert.match(await b.cmd("stats-job 2"), /\nstate: reserved\n/);
  assert.equal(await a.cmd("delete 2"), "DELETED\r\n");

  files.capacity = Infinity; // space comes back
  assert.match(await b.put(body), /^INSERTED \d+\r\n$/, "puts work again once there is room");
  a.close();
  b.close();
});

it(
  "once deletes free log space on a full disk, puts succeed again without a restart",
  { timeout: 60_000 },
  async () => {
    const addr = { host: "127.0.0.1", port: (server.address as { port: number }).port };
    const a = await dial(addr);
    const body = "y".repeat(4000);
    // A long-lived job in the oldest file: it must be moved forward before the files
    // behind it can go, on a disk that has no room for the move.
    const keeper = Number(/^INSERTED (\d+)/.exec(await a.put("keep me"))![1]);
    // Several log files' worth of jobs, then the disk is full at what they take.
    const ids: number[] = [];
    for (let i = 0; i < 60; i++) {
      const m = /^INSERTED (\d+)\r\n$/.exec(await a.put(body));
      assert.ok(m, `put ${i}`);
      ids.push(Number(m[1]));
    }
    files.capacity = files.used();
    let refused = "";
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await a.put(body);
      const m = /^INSERTED (\d+)\r\n$/.exec(r);
      if (m) ids.push(Number(m[1]));
      else refused = r;
    }
    assert.equal(refused, "OUT_OF_MEMORY\r\n");
    for (const id of ids) assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n", `delete ${id}`);
    // The capacity stays as it was: only the freed log files make room.
    const deadline = Date.now() + 10_000;
    let r = "";
    while (!/^INSERTED/.test(r = await a.put(body)) && Date.now() < deadline) {
      assert.equal(r, "OUT_OF_MEMORY\r\n");
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.match(
      r,
      /^INSERTED \d+\r\n$/,
      `still refused 10 s after the deletes (${files.used()} of ${files.capacity})`,
    );
    // And keeps succeeding: the room is real, not one lucky record.
    for (let i = 0; i < 20; i++) assert.match(await a.put(body), /^INSERTED \d+\r\n$/, `put ${i} after recovery`);
    assert.equal(await a.cmd(`peek ${keeper}`), `FOUND ${keeper} 7\r\nkeep me\r\n`);
    assert.ok(wal.usage().files <= 3, `the old files are gone (${wal.usage().files} left)`);
    files.capacity = Infinity;
    a.close();
  },
);
