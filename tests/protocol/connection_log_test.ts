// The log as a connection sees it (in process, over in-memory files): the records
// of one batch of commands are written with one append before any of the batch's
// replies goes out; when that write fails, none of them goes out and the connection
// is dropped; in durable-ack mode no reply goes out before its fsync.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { openBinlog } from "../../core/memory/binlog/open.ts";
import type { AppendFile } from "../../core/files.ts";
import { MemoryFiles } from "../harness/files_memory.ts";
import { systemClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { Service } from "../../protocol/service.ts";
import { Connection } from "../../protocol/connection.ts";

const DIR = "/wal";
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Records "append" for every write to a log file, in the same list as what connections send. */
class EventFiles extends MemoryFiles {
  constructor(readonly events: string[]) {
    super([DIR]);
  }

  override open(path: string, mode: "new" | "any"): AppendFile {
    const h = super.open(path, mode);
    if (!/\/tubeway\.\d+$/.test(path)) return h;
    return {
      path: h.path,
      size: () => h.size(),
      append: (b: Uint8Array) => {
        h.append(b);
        this.events.push("append");
      },
      truncate: (n: number) => h.truncate(n),
      sync: () => h.sync(),
      syncNow: () => h.syncNow(),
      close: () => h.close(),
    };
  }
}

function setup(durableAcks: boolean) {
  const events: string[] = [];
  const errors: string[] = [];
  const files = new EventFiles(events);
  const live: { queue?: Queue } = {};
  const { wal } = openBinlog(
    { dir: DIR, fsyncMs: durableAcks ? 0 : 50, durableAcks, maxFileSize: 1 << 20, maxJobSize: 65535, log: () => {} },
    files,
    systemClock,
    (id) => live.queue?.liveRecord(id),
  );
  const queue = new Queue({ clock: systemClock, wal });
  live.queue = queue;
  const svc = new Service(queue, { log: () => {}, error: (l) => errors.push(l) });
  /** A connection whose writes go to `events` ("name: text"); `hold` makes the next write pending. */
  const connect = (name: string) => {
    let held: (() => void) | undefined;
    let hold = false;
    const conn = new Connection(svc, {
      write(piece) {
        events.push(`${name}: ${dec.decode(piece)}`);
        if (hold) {
          hold = false;
          return new Promise<void>((r) => (held = r));
        }
      },
      close() {
        events.push(`${name}: closed`);
      },
    });
    return {
      conn,
      send(text: string) {
        conn.push(enc.encode(text));
      },
      holdNextWrite: () => (hold = true),
      finishWrite: () => held?.(),
    };
  };
  /** The first put grows the ballast and reserves ids: do it before what a test watches, then forget its events. */
  const warm = async (c: { send(text: string): void }) => {
    c.send(puts(1, "warm"));
    await tick();
    events.length = 0;
  };
  return { events, errors, files, wal, queue, svc, connect, warm };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

/** Everything `name` sent, as one string (replies of a batch may go out as one piece). */
function sentBy(events: string[], name: string): string {
  return events.filter((e) => e.startsWith(`${name}: `)).map((e) => e.slice(name.length + 2)).join("");
}

function puts(n: number, tag: string): string {
  let s = "";
  for (let i = 0; i < n; i++) s += `put 0 0 60 ${tag.length + String(i).length}\r\n${tag}${i}\r\n`;
  return s;
}

describe("the log under a connection", () => {
  test("a batch of commands: one append, before any of its replies", async () => {
    const t = setup(false);
    const a = t.connect("a");
    await t.warm(a);
    a.send(puts(20, "x") + "reserve-with-timeout 0\r\n");
    a.send("bury 1 5\r\nkick 1\r\n" + puts(3, "y"));
    await tick();
    // the replies wait for the turn's append; the second batch waits for the first's replies
    const first = t.events.indexOf("append", 1);
    assert.deepEqual(t.events[0], "append", "the first batch's records, then its replies");
    assert.ok(t.events.slice(1, first).every((e) => e.startsWith("a: ")), t.events.join("|"));
    assert.deepEqual(t.events[first], "append", "the second batch's records, then its replies");
    assert.ok(t.events.slice(first + 1).every((e) => e.startsWith("a: ")), t.events.join("|"));
    const replies = sentBy(t.events, "a");
    assert.equal((replies.match(/INSERTED \d+\r\n/g) ?? []).length, 23);
    assert.match(replies, /RESERVED 1 5\r\nwarm0\r\n/);
    assert.match(replies, /BURIED\r\nKICKED 1\r\n/);
    t.wal.close();
  });

  test("a failed write: none of the batch's replies, the connection is dropped, the others go on", async () => {
    const t = setup(false);
    const a = t.connect("a");
    const b = t.connect("b");
    await t.warm(b);
    t.files.failAppend(1, { code: "EIO" });
    a.send(puts(5, "lost") + "stats\r\n");
    await tick();
    assert.equal(sentBy(t.events, "a"), "closed");
    assert.equal(t.errors.length, 1);
    assert.match(t.errors[0]!, /binlog write failed/);
    assert.ok(a.conn.closed);
    b.send(puts(2, "later"));
    await tick();
    assert.equal(sentBy(t.events, "b"), "INSERTED 7\r\nINSERTED 8\r\n");
    t.wal.close();
  });

  test("batches of several connections in one turn: one append for all, then their replies", async () => {
    const t = setup(false);
    const cs = ["a", "b", "c"].map((n) => t.connect(n));
    await t.warm(cs[0]!);
    for (const c of cs) c.send(puts(2, "x"));
    assert.equal(t.events.length, 0, "nothing written or sent before the end of the turn");
    await tick();
    assert.deepEqual(t.events.filter((e) => e === "append"), ["append"], t.events.join("|"));
    assert.equal(t.events[0], "append", "the records, then the replies");
    for (const n of ["a", "b", "c"]) assert.match(sentBy(t.events, n), /^INSERTED \d+\r\nINSERTED \d+\r\n$/);
    t.wal.close();
  });

  test("a lone client's batch is answered at the end of the microtasks, without waiting a turn of the loop", async () => {
    const t = setup(false);
    const a = t.connect("a");
    await t.warm(a);
    a.send(puts(1, "x"));
    await Promise.resolve();
    assert.deepEqual(t.events[0], "append");
    assert.match(sentBy(t.events, "a"), /^INSERTED \d+\r\n$/);
    t.wal.close();
  });

  test("clients served one callback at a time (as on Bun) share one append once they are many, and alone again later", async () => {
    const t = setup(false);
    const cs = ["a", "b", "c"].map((n) => t.connect(n));
    const oneCallbackEach = async () => {
      for (const c of cs) {
        c.send(puts(1, "x"));
        await Promise.resolve(); // the runtime drains the microtasks between two sockets' callbacks
      }
      await t.svc.afterIO();
    };
    await oneCallbackEach(); // two appends in one turn of the loop: many clients
    assert.ok(t.queue.logTurn!.late);
    t.events.length = 0;
    await oneCallbackEach();
    assert.deepEqual(t.events.filter((e) => e === "append"), ["append"], t.events.join("|"));
    for (const n of ["a", "b", "c"]) assert.match(sentBy(t.events, n), /^INSERTED \d+\r\n$/);
    for (let i = 0; i < 64; i++) {
      cs[0]!.send(puts(1, "alone"));
      await t.svc.afterIO();
    }
    assert.equal(t.queue.logTurn!.late, false, "a lone client again: no extra turn of the loop");
    t.wal.close();
  });

  test("a failed shared append: every connection in it is dropped without its replies, later ones go on", async () => {
    const t = setup(false);
    const [a, b, c] = ["a", "b", "c"].map((n) => t.connect(n));
    await t.warm(c!);
    t.files.failAppend(1, { code: "EIO" });
    a!.send(puts(2, "lost"));
    b!.send(puts(1, "lost"));
    await tick();
    assert.equal(sentBy(t.events, "a"), "closed");
    assert.equal(sentBy(t.events, "b"), "closed");
    assert.equal(t.errors.length, 2, t.errors.join("|"));
    c!.send(puts(1, "later"));
    await tick();
    assert.match(sentBy(t.events, "c"), /^INSERTED \d+\r\n$/);
    t.wal.close();
  });

  test("a reserve handed a job whose put is not yet written waits for the append", async () => {
    const t = setup(false);
    const a = t.connect("a");
    const b = t.connect("b");
    a.send(puts(1, "warm") + "delete 1\r\n");
    await tick();
    b.send("reserve\r\n");
    await tick();
    t.events.length = 0;
    a.send(puts(1, "job"));
    await tick();
    const append = t.events.indexOf("append");
    const reserved = t.events.findIndex((e) => e.startsWith("b: RESERVED"));
    assert.ok(append >= 0 && reserved > append, t.events.join("|"));
    t.wal.close();
  });

  test("durable acks: no reply before its fsync, also when an earlier write completes meanwhile", async () => {
    const t = setup(true);
    const a = t.connect("a");
    a.holdNextWrite();
    a.send(puts(1, "first"));
    await tick(); // fsynced; its reply is being written (the socket is slow)
    assert.equal(sentBy(t.events, "a"), "INSERTED 1\r\n");
    const release = t.files.holdSyncs();
    a.send(puts(2, "second")); // logged; its fsync is held
    a.finishWrite(); // the first write completes while that fsync runs
    await tick();
    assert.equal(sentBy(t.events, "a"), "INSERTED 1\r\n");
    release();
    await tick();
    assert.equal(sentBy(t.events, "a"), "INSERTED 1\r\nINSERTED 2\r\nINSERTED 3\r\n");
    t.wal.close();
  });

  // A client that sends one command at a time sends its next one only after the reply,
  // but an adapter that stops reading for every fsync pays for it anyway: on Bun, a
  // pause() and resume() of the socket are two epoll changes and two extra turns of the
  // event loop per put. So the connection keeps reading (up to a bound) while its batch
  // waits for the disk, and processes what came only once that batch is answered.
  test("durable acks: reading goes on while a batch waits for its fsync; its commands wait", async () => {
    const t = setup(true);
    const a = t.connect("a");
    await t.warm(a);
    const release = t.files.holdSyncs();
    a.send(puts(1, "first"));
    assert.equal(a.conn.wantsInput, true, "still reading while the fsync runs");
    a.send(puts(1, "second") + "stats-job 2\r\n");
    await tick();
    assert.deepEqual(t.events, ["append"], "the second batch is neither logged nor answered yet");
    release();
    await tick();
    const replies = sentBy(t.events, "a");
    assert.match(replies, /^INSERTED 2\r\nINSERTED 3\r\nOK \d+\r\n/);
    assert.match(replies, /state: ready/, "the stats-job ran after the put before it");
    assert.equal(t.events.filter((e) => e === "append").length, 2);
    // Bounded: a client that floods while the fsync runs is stopped at WAIT_READ_MAX.
    const hold = t.files.holdSyncs();
    a.send(puts(1, "third"));
    a.send(puts(3000, "flood-flood-flood"));
    assert.equal(a.conn.wantsInput, false, "no more reading past the bound");
    hold();
    await tick();
    assert.equal(a.conn.wantsInput, true);
    t.wal.close();
  });
});
