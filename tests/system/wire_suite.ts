// The wire-level suite, written once against dial() and registered per target by
// wire_test.ts: every command's happy path and errors, scheduling, timing, stats.
//
// One server per target is shared by the tests that do not interfere (each test uses
// its own tube names and reads job ids from the replies); drain mode gets its own
// server. The tests that wait for real time (delay, TTR, pause, timeouts) run their
// scenarios concurrently inside one test, so a target takes about three seconds.
//
// Where tubeway deliberately differs from 1.12 (spec §0, waiter order), the suite
// holds the real beanstalkd (target `beanstalkd`) to the 1.12 answer, so the
// expectations here can themselves be checked against the reference binary.
import { after, before, describe, it as baseIt } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as os from "node:os";
import { skipUnless } from "../harness/paths.ts";
import { beanstalkd, type Running, type Target } from "../harness/targets.ts";
import { type Address, dial, type Wire } from "../harness/wire.ts";
import { JOB_KEYS, STATS_KEYS, TUBE_KEYS } from "../harness/stats_keys.ts";
import { scalar } from "../../protocol/yaml.ts";

// ---- helpers shared with bad_input_test.ts -------------------------------------------

/** `<WORD> <id> <bytes>\r\n<body>\r\n` (latin1: one char, one byte). */
export function jobReply(word: "FOUND" | "RESERVED", id: number, body: string): string {
  return `${word} ${id} ${body.length}\r\n${body}\r\n`;
}

/** `OK <n>\r\n<yaml>\r\n`. */
export function ok(yaml: string): string {
  return `OK ${yaml.length}\r\n${yaml}\r\n`;
}

/** A list-tubes / list-tubes-watched reply. */
export function list(...names: string[]): string {
  return ok("---\n" + names.map((n) => `- ${n}\n`).join(""));
}

let seq = 0;
/** A tube name no other test on the same server uses. */
export function tubeName(prefix: string): string {
  return `${prefix}.${++seq}`;
}

/** put and return the new job id (asserting INSERTED). */
export async function putId(w: Wire, body: string, pri = 0, delay = 0, ttr = 60): Promise<number> {
  const r = await w.put(body, pri, delay, ttr);
  const m = /^INSERTED (\d+)\r\n$/.exec(r);
  assert.ok(m, `put ${pri} ${delay} ${ttr}: expected INSERTED <id>, got ${JSON.stringify(r)}`);
  return Number(m[1]);
}

/** Parse an `OK <n>` YAML reply into [key, value] pairs, checking the byte count and framing. */
export function yamlPairs(reply: string): Array<[string, string]> {
  const m = /^OK (\d+)\r\n([\s\S]*)\r\n$/.exec(reply);
  assert.ok(m, `expected OK <n> with data, got ${JSON.stringify(reply)}`);
  const doc = m[2]!;
  assert.equal(Number(m[1]), doc.length, "OK <n> must count the YAML bytes");
  assert.ok(doc.startsWith("---\n") && doc.endsWith("\n"), `YAML framing: ${JSON.stringify(doc)}`);
  return doc.slice(4, -1).split("\n").map((l) => {
    const i = l.indexOf(": ");
    assert.ok(i > 0, `YAML line ${JSON.stringify(l)}`);
    return [l.slice(0, i), l.slice(i + 2)] as [string, string];
  });
}

/** A YAML reply as a map with a numeric getter that fails loudly on a missing key. */
export class Yaml {
  readonly keys: string[];
  readonly map: Map<string, string>;
  constructor(reply: string) {
    const pairs = yamlPairs(reply);
    this.keys = pairs.map(([k]) => k);
    this.map = new Map(pairs);
  }
  str(k: string): string {
    const v = this.map.get(k);
    assert.ok(v !== undefined, `missing key ${k} in ${JSON.stringify(this.keys)}`);
    return v;
  }
  num(k: string): number {
    const v = this.str(k);
    assert.match(v, /^-?\d+$/, `${k} should be an integer, got ${JSON.stringify(v)}`);
    return Number(v);
  }
}

export async function stats(w: Wire): Promise<Yaml> {
  return new Yaml(await w.cmd("stats"));
}
export async function statsJob(w: Wire, id: number): Promise<Yaml> {
  return new Yaml(await w.cmd(`stats-job ${id}`));
}
export async function statsTube(w: Wire, tube: string): Promise<Yaml> {
  return new Yaml(await w.cmd(`stats-tube ${tube}`));
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Poll `probe` until `done` holds: at most `timeoutMs`, at most 200 tries. For state
 * that no reply announces (another connection's close being noticed, a signal landing).
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 3000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (let i = 0; i < 200; i++) {
    last = await probe();
    if (done(last)) return last;
    if (Date.now() > deadline) break;
    await sleep(15);
  }
  assert.fail(`${what}: still not so after ${timeoutMs} ms; last ${JSON.stringify(last)}`);
}

/** Wait until `n` connections wait in reserve on `tube` (seen through `obs`). */
export async function waitersOn(obs: Wire, tube: string, n: number): Promise<void> {
  await eventually(
    `${n} waiting on ${tube}`,
    async () => (await statsTube(obs, tube)).num("current-waiting"),
    (v) => v === n,
  );
}

/** Connections opened by one test, all closed when it ends (pass or fail). */
export class Conns {
  readonly #addr: Address;
  readonly #open: Wire[] = [];
  constructor(addr: Address) {
    this.#addr = addr;
  }
  async dial(): Promise<Wire> {
    const w = await dial(this.#addr);
    this.#open.push(w);
    return w;
  }
  closeAll(): void {
    for (const w of this.#open) w.close();
    this.#open.length = 0;
  }
}

/** Run `body` with a fresh set of connections to `srv`, closing them afterwards. */
export async function withConns(srv: () => Running, body: (c: Conns) => Promise<void>): Promise<void> {
  const c = new Conns(srv().addr);
  try {
    await body(c);
  } finally {
    c.closeAll();
  }
}

/** Milliseconds `p` takes. */
export async function timed<T>(p: Promise<T>): Promise<[T, number]> {
  const t0 = Date.now();
  const v = await p;
  return [v, Date.now() - t0];
}

// ---- expected stats shapes -------------------------------------------------------------

function kernelVersion(): string {
  try {
    return readFileSync("/proc/sys/kernel/version", "utf8").trim();
  } catch {
    return os.version();
  }
}

// ---- the suite -------------------------------------------------------------------------

/** How a target that is several servers behind one address runs the suite. */
export interface WireSuiteOptions {
  /**
   * Tests (by name) that read a view one server keeps of its own (its pid, its
   * connections, its list of tubes, its waiting clients), each with the reason: every
   * connection of such a test goes to the first of `Running.nodes`, the others running.
   */
  oneNode?: Record<string, string>;
}

/** Register the wire suite for one target. */
export function wireSuite(target: Target, options: WireSuiteOptions = {}): void {
  /** The reference 1.12 binary: held to 1.12's answers where tubeway deliberately differs. */
  const v112 = target === beanstalkd;
  /** A string value as stats/stats-job/stats-tube write it (tubeway quotes only values a YAML reader would misread). */
  const q = (s: string) => (v112 ? s : scalar(s));
  const missing = target.unavailable();

  describe(target.name, { skip: skipUnless(missing === undefined, missing ?? "") }, () => {
    let running: Running | undefined;
    /** Set while a test of options.oneNode runs. */
    let pinned = false;
    const srv = (): Running => {
      assert.ok(running, "server did not start");
      if (!pinned) return running;
      assert.ok(running.nodes?.[0], "a oneNode test needs a target with nodes");
      return running.nodes[0];
    };
    const names: string[] = [];
    const it = (name: string, fn: () => Promise<void>) => {
      names.push(name);
      baseIt(name, async () => {
        pinned = options.oneNode?.[name] !== undefined;
        try {
          await fn();
        } finally {
          pinned = false;
        }
      });
    };
    const session = (body: (c: Conns) => Promise<void>) => withConns(srv, body);

    before(async () => {
      running = await target.start([]);
    });
    after(async () => {
      await running?.stop();
    });

    // ---- put / peek / delete ---------------------------------------------------------

    it("put, peek and delete: happy path", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("put");
        assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`);
        const id = await putId(w, "hello");
        assert.equal(await w.cmd(`peek ${id}`), jobReply("FOUND", id, "hello"));
        assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", id, "hello"));
        const sj = await statsJob(w, id);
        assert.equal(sj.str("tube"), q(t));
        assert.equal(sj.str("state"), "ready");
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        assert.equal(await w.cmd(`delete ${id}`), "NOT_FOUND\r\n");
        assert.equal(await w.cmd(`peek ${id}`), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("peek-ready"), "NOT_FOUND\r\n");
        // Zero-length body, extreme pri, ttr 0 raised to 1.
        const z = await putId(w, "", 4294967295, 0, 0);
        assert.equal(await w.cmd(`peek ${z}`), jobReply("FOUND", z, ""));
        const zs = await statsJob(w, z);
        assert.equal(zs.num("pri"), 4294967295);
        assert.equal(zs.num("ttr"), 1);
        assert.equal(await w.cmd(`delete ${z}`), "DELETED\r\n");
        // Several spaces between arguments are fine.
        w.send("put  1   0  5    1\r\nx\r\n");
        const m = /^INSERTED (\d+)\r\n$/.exec(await w.reply());
        assert.ok(m);
        assert.equal(await w.cmd(`delete ${m[1]}`), "DELETED\r\n");
      }));

    it("put errors: bad lines, EXPECTED_CRLF uses an id, JOB_TOO_BIG, the 65535 limit", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("puterr");
        await w.cmd(`use ${t}`);
        assert.equal(await w.cmd("put"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("put 0 0 60"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("put -1 0 60 1"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("put 4294967296 0 60 1"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("put 0 x 60 1"), "BAD_FORMAT\r\n");
        // BAD_FORMAT consumes no body: the body line is read as a command.
        w.send("put 0 0 60 1 junk\r\nx\r\n");
        assert.equal(await w.reply(), "BAD_FORMAT\r\n");
        assert.equal(await w.reply(), "UNKNOWN_COMMAND\r\n");
        const a = await putId(w, "a");
        w.send("put 0 0 60 3\r\nabcde\r\n");
        assert.equal(await w.reply(), "EXPECTED_CRLF\r\n");
        assert.equal(await w.reply(), "UNKNOWN_COMMAND\r\n", "the bytes after the body are the next command");
        const b = await putId(w, "b");
        assert.equal(b, a + 2, "EXPECTED_CRLF uses up a job id");
        const max = "m".repeat(65535);
        const big = await putId(w, max);
        assert.equal(await w.cmd(`peek ${big}`), jobReply("FOUND", big, max));
        w.send(`put 0 0 60 65536\r\n${"m".repeat(65536)}\r\n`);
        assert.equal(await w.reply(), "JOB_TOO_BIG\r\n");
        const after = await putId(w, "c");
        assert.equal(after, big + 1, "JOB_TOO_BIG uses up no id");
        for (const id of [a, b, big, after]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("peek: any tube, any state; peek-ready/-delayed/-buried look at the used tube", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("peek");
        await w.cmd(`use ${t}`);
        assert.equal(await w.cmd("peek-ready"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("peek-delayed"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("peek-buried"), "NOT_FOUND\r\n");
        const late = await putId(w, "late", 0, 99);
        const soon = await putId(w, "soon", 0, 50);
        const r2 = await putId(w, "r2", 7);
        const r1 = await putId(w, "r1", 3);
        assert.equal(await w.cmd("peek-delayed"), jobReply("FOUND", soon, "soon"), "earliest deadline first");
        assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", r1, "r1"), "lowest pri first");
        // From another connection using another tube: peek <id> still finds it; peek-ready does not.
        const o = await c.dial();
        assert.equal(await o.cmd(`peek ${late}`), jobReply("FOUND", late, "late"));
        assert.equal(await o.cmd("peek-ready"), "NOT_FOUND\r\n", "default tube has nothing ready from this test");
        assert.equal(await w.cmd("peek 0"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("peek 18446744073709551615"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("peek 18446744073709551616"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("peek 111foo"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("peek"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("peek-ready "), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd(`peek 000${r2}`), jobReply("FOUND", r2, "r2"), "leading zeros");
        for (const id of [late, soon, r2, r1]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    // ---- use / watch / ignore / lists ------------------------------------------------

    it("use and list-tube-used; tube name rules", () =>
      session(async (c) => {
        const w = await c.dial();
        assert.equal(await w.cmd("list-tube-used"), "USING default\r\n");
        const t = tubeName("use");
        assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`);
        assert.equal(await w.cmd("list-tube-used"), `USING ${t}\r\n`);
        const id = await putId(w, "in-used-tube");
        assert.equal((await statsJob(w, id)).str("tube"), q(t));
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        const odd = "Az09-+/;.$_()";
        assert.equal(await w.cmd(`use ${odd}`), `USING ${odd}\r\n`);
        const n200 = "n".repeat(200);
        assert.equal(await w.cmd(`use ${n200}`), `USING ${n200}\r\n`);
        for (
          const bad of ["n".repeat(201), "-lead", "a*b", "a b", "", " two", "trail ", "caf\xe9", "a\tb"]
        ) {
          assert.equal(await w.cmd(`use ${bad}`), "BAD_FORMAT\r\n", `use ${JSON.stringify(bad)}`);
        }
        assert.equal(await w.cmd("use"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("list-tube-used"), `USING ${n200}\r\n`, "a bad use changes nothing");
        assert.equal(await w.cmd("list-tube-used x"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("use default"), "USING default\r\n");
      }));

    it("watch, ignore, list-tubes-watched (order after removal), NOT_IGNORED", () =>
      session(async (c) => {
        const w = await c.dial();
        const [a, b, t3] = [tubeName("wa"), tubeName("wb"), tubeName("wc")];
        assert.equal(await w.cmd("list-tubes-watched"), list("default"));
        assert.equal(await w.cmd(`watch ${a}`), "WATCHING 2\r\n");
        assert.equal(await w.cmd(`watch ${a}`), "WATCHING 2\r\n", "watching twice counts once");
        assert.equal(await w.cmd(`watch ${b}`), "WATCHING 3\r\n");
        assert.equal(await w.cmd(`watch ${t3}`), "WATCHING 4\r\n");
        assert.equal(await w.cmd("list-tubes-watched"), list("default", a, b, t3));
        assert.equal(await w.cmd(`ignore ${a}`), "WATCHING 3\r\n");
        // Removal moves the last entry into the freed slot (1.12's multiset).
        assert.equal(await w.cmd("list-tubes-watched"), list("default", t3, b));
        assert.equal(await w.cmd(`ignore ${tubeName("never")}`), "WATCHING 3\r\n", "ignoring an unwatched tube");
        assert.equal(await w.cmd("ignore default"), "WATCHING 2\r\n");
        assert.equal(await w.cmd(`ignore ${b}`), "WATCHING 1\r\n");
        assert.equal(await w.cmd(`ignore ${t3}`), "NOT_IGNORED\r\n");
        assert.equal(await w.cmd("list-tubes-watched"), list(t3));
        assert.equal(await w.cmd("watch -x"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("ignore a*"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("watch"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("ignore"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("list-tubes-watched "), "BAD_FORMAT\r\n");
      }));

    it("tubes are created by use/watch and removed when nothing references them", () =>
      session(async (c) => {
        const obs = await c.dial();
        const w = await c.dial();
        const tubes = async () => (await obs.cmd("list-tubes")).split("\n").slice(1, -1).map((l) => l.slice(2));
        const [u, v, j, p] = [tubeName("life-use"), tubeName("life-watch"), tubeName("life-job"), tubeName("life-p")];
        assert.ok(!(await tubes()).includes(u));
        assert.equal(await obs.cmd(`stats-tube ${u}`), "NOT_FOUND\r\n", "stats-tube does not create");
        assert.equal(await obs.cmd(`pause-tube ${u} 10`), "NOT_FOUND\r\n", "pause-tube does not create");
        assert.equal(await obs.cmd(`ignore ${u}`), "WATCHING 1\r\n", "ignore does not create");
        assert.ok(!(await tubes()).includes(u));
        await w.cmd(`use ${u}`);
        assert.ok((await tubes()).includes(u), "use creates");
        await w.cmd("use default");
        assert.ok(!(await tubes()).includes(u), "unused tube removed");
        await w.cmd(`watch ${v}`);
        assert.ok((await tubes()).includes(v), "watch creates");
        assert.equal((await statsTube(obs, v)).num("current-watching"), 1);
        await w.cmd(`ignore ${v}`);
        assert.ok(!(await tubes()).includes(v), "unwatched tube removed");
        await w.cmd(`use ${j}`);
        const id = await putId(w, "keeps the tube");
        await w.cmd("use default");
        assert.ok((await tubes()).includes(j), "a job keeps its tube");
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        assert.ok(!(await tubes()).includes(j), "tube removed with its last job");
        await w.cmd(`use ${p}`);
        assert.equal(await obs.cmd(`pause-tube ${p} 100`), "PAUSED\r\n");
        await w.cmd("use default");
        assert.ok(!(await tubes()).includes(p), "a pause does not keep a tube");
        await w.cmd(`use ${p}`);
        assert.equal((await statsTube(obs, p)).num("pause"), 0, "the pause went with the tube");
        // A closing connection drops its references too.
        w.close();
        await eventually("tube of a closed connection removed", tubes, (ts) => !ts.includes(p));
        assert.ok((await tubes()).includes("default"), "default is never removed");
      }));

    // ---- reserve family --------------------------------------------------------------

    it("reserve and reserve-with-timeout: RESERVED at once, TIMED_OUT at once for 0, errors", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("res");
        await w.cmd(`use ${t}`);
        await w.cmd(`watch ${t}`);
        await w.cmd("ignore default");
        const id = await putId(w, "job body");
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "job body"));
        const sj = await statsJob(w, id);
        assert.equal(sj.str("state"), "reserved");
        assert.equal(sj.num("reserves"), 1);
        assert.ok(sj.num("time-left") >= 58 && sj.num("time-left") <= 60, `time-left ${sj.num("time-left")}`);
        const [r, ms] = await timed(w.cmd("reserve-with-timeout 0"));
        assert.equal(r, "TIMED_OUT\r\n");
        assert.ok(ms < 500, `reserve-with-timeout 0 took ${ms} ms`);
        const id2 = await putId(w, "second");
        assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id2, "second"));
        assert.equal(await w.cmd("reserve x"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("reserve "), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("reserve-with-timeout"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("RESERVE"), "UNKNOWN_COMMAND\r\n");
        for (const j of [id, id2]) assert.equal(await w.cmd(`delete ${j}`), "DELETED\r\n");
      }));

    it("reserve-job: ready, delayed, buried, in any tube; NOT_FOUND when reserved or unknown", () =>
      session(async (c) => {
        const p = await c.dial();
        const w = await c.dial();
        const t = tubeName("rj");
        await p.cmd(`use ${t}`);
        await p.cmd(`watch ${t}`);
        const ready = await putId(p, "ready");
        const delayed = await putId(p, "delayed", 0, 100);
        const buried = await putId(p, "buried", 5);
        assert.equal(await p.cmd(`reserve-job ${buried}`), jobReply("RESERVED", buried, "buried"));
        assert.equal(await p.cmd(`bury ${buried} 5`), "BURIED\r\n");
        // w watches only default: reserve-job ignores the watch list.
        assert.equal(await w.cmd(`reserve-job ${delayed}`), jobReply("RESERVED", delayed, "delayed"));
        assert.equal(await w.cmd(`reserve-job ${buried}`), jobReply("RESERVED", buried, "buried"));
        assert.equal(await w.cmd(`reserve-job ${ready}`), jobReply("RESERVED", ready, "ready"));
        assert.equal(await w.cmd(`reserve-job ${ready}`), "NOT_FOUND\r\n", "already reserved (by self)");
        assert.equal(await p.cmd(`reserve-job ${ready}`), "NOT_FOUND\r\n", "reserved by another");
        assert.equal(await w.cmd("reserve-job 0"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("reserve-job x"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("reserve-job"), "BAD_FORMAT\r\n");
        const sj = await statsJob(w, delayed);
        assert.equal(sj.str("state"), "reserved");
        assert.equal(sj.num("reserves"), 1);
        for (const id of [ready, delayed, buried]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("delete: ready, delayed, buried and own reserved jobs; NOT_FOUND for another's", () =>
      session(async (c) => {
        const a = await c.dial();
        const b = await c.dial();
        const t = tubeName("del");
        await a.cmd(`use ${t}`);
        await a.cmd(`watch ${t}`);
        await a.cmd("ignore default");
        const res = await putId(a, "res");
        assert.equal(await a.cmd("reserve"), jobReply("RESERVED", res, "res"));
        const ready = await putId(a, "ready");
        const delayed = await putId(a, "delayed", 0, 100);
        assert.equal(await a.cmd("reserve"), jobReply("RESERVED", ready, "ready"));
        assert.equal(await a.cmd(`bury ${ready} 0`), "BURIED\r\n");
        const ready2 = await putId(a, "ready2");
        assert.equal(await b.cmd(`delete ${res}`), "NOT_FOUND\r\n", "reserved by another connection");
        assert.equal(await b.cmd(`delete ${delayed}`), "DELETED\r\n");
        assert.equal(await b.cmd(`delete ${ready}`), "DELETED\r\n", "buried");
        assert.equal(await b.cmd(`delete ${ready2}`), "DELETED\r\n");
        assert.equal(await a.cmd(`delete ${res}`), "DELETED\r\n");
        assert.equal(await a.cmd("delete 18446744073709551615"), "NOT_FOUND\r\n");
        assert.equal(await a.cmd("delete"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await a.cmd("delete x"), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd("delete -1"), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd("delete 1 2"), "BAD_FORMAT\r\n");
      }));

    it("release: new pri, delay makes it delayed; NOT_FOUND unless reserved by this connection", () =>
      session(async (c) => {
        const a = await c.dial();
        const b = await c.dial();
        const t = tubeName("rel");
        await a.cmd(`use ${t}`);
        await a.cmd(`watch ${t}`);
        await a.cmd("ignore default");
        const id = await putId(a, "r", 10);
        assert.equal(await a.cmd(`release ${id} 1 0`), "NOT_FOUND\r\n", "not reserved yet");
        assert.equal(await a.cmd("reserve"), jobReply("RESERVED", id, "r"));
        assert.equal(await b.cmd(`release ${id} 1 0`), "NOT_FOUND\r\n", "reserved by another");
        assert.equal(await a.cmd(`release ${id} 1 0`), "RELEASED\r\n");
        let sj = await statsJob(a, id);
        assert.equal(sj.str("state"), "ready");
        assert.equal(sj.num("pri"), 1);
        assert.equal(sj.num("releases"), 1);
        assert.equal(await a.cmd("reserve"), jobReply("RESERVED", id, "r"));
        assert.equal(await a.cmd(`release ${id} 2 100`), "RELEASED\r\n");
        sj = await statsJob(a, id);
        assert.equal(sj.str("state"), "delayed");
        assert.equal(sj.num("delay"), 100);
        assert.equal(sj.num("releases"), 2);
        assert.equal(sj.num("reserves"), 2);
        assert.equal(await a.cmd("release 1 2"), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd("release 1 2 3 4"), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd(`release ${id} 4294967296 0`), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd("release"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("bury, peek-buried (oldest-buried first), kick prefers buried over delayed, kick-job", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("bury");
        await w.cmd(`use ${t}`);
        await w.cmd(`watch ${t}`);
        await w.cmd("ignore default");
        const x1 = await putId(w, "x1");
        const x2 = await putId(w, "x2");
        const d = await putId(w, "d", 0, 100);
        assert.equal(await w.cmd(`bury ${x1} 0`), "NOT_FOUND\r\n", "cannot bury an unreserved job");
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", x1, "x1"));
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", x2, "x2"));
        assert.equal(await w.cmd(`bury ${x2} 9`), "BURIED\r\n");
        assert.equal(await w.cmd(`bury ${x1} 8`), "BURIED\r\n");
        assert.equal(await w.cmd("peek-buried"), jobReply("FOUND", x2, "x2"), "oldest-buried, not lowest id");
        const sj = await statsJob(w, x2);
        assert.equal(sj.str("state"), "buried");
        assert.equal(sj.num("pri"), 9);
        assert.equal(sj.num("buries"), 1);
        assert.equal(await w.cmd("kick 1"), "KICKED 1\r\n");
        assert.equal((await statsJob(w, x2)).str("state"), "ready", "oldest-buried kicked first");
        assert.equal((await statsJob(w, x2)).num("kicks"), 1);
        assert.equal((await statsJob(w, x1)).str("state"), "buried");
        assert.equal(await w.cmd("kick 10"), "KICKED 1\r\n", "only the buried one, not the delayed one");
        assert.equal((await statsJob(w, d)).str("state"), "delayed");
        assert.equal(await w.cmd("kick 10"), "KICKED 1\r\n", "now the delayed one");
        assert.equal((await statsJob(w, d)).str("state"), "ready");
        assert.equal((await statsJob(w, d)).num("delay"), 100, "kick keeps the delay field");
        assert.equal(await w.cmd("kick 10"), "KICKED 0\r\n");
        assert.equal(await w.cmd("bury 1"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("bury x 1"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("bury"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("kick"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("kick x"), "BAD_FORMAT\r\n");
        // kick-job: buried or delayed only, any tube.
        const o = await c.dial();
        const kb = await putId(w, "kb");
        const kd = await putId(w, "kd", 0, 100);
        assert.equal(await o.cmd(`kick-job ${kb}`), "NOT_FOUND\r\n", "ready");
        assert.equal(await w.cmd(`reserve-job ${kb}`), jobReply("RESERVED", kb, "kb"));
        assert.equal(await o.cmd(`kick-job ${kb}`), "NOT_FOUND\r\n", "reserved");
        assert.equal(await w.cmd(`bury ${kb} 0`), "BURIED\r\n");
        assert.equal(await o.cmd(`kick-job ${kb}`), "KICKED\r\n");
        assert.equal(await o.cmd(`kick-job ${kb}`), "NOT_FOUND\r\n", "ready again");
        assert.equal(await o.cmd(`kick-job ${kd}`), "KICKED\r\n");
        assert.equal((await statsJob(o, kd)).str("state"), "ready");
        assert.equal((await statsJob(o, kd)).num("kicks"), 1);
        assert.equal(await o.cmd("kick-job 0"), "NOT_FOUND\r\n");
        assert.equal(await o.cmd("kick-job !@#"), "BAD_FORMAT\r\n");
        assert.equal(await o.cmd("kick-job"), "UNKNOWN_COMMAND\r\n", "no space: neither kick nor kick-job");
        for (const id of [x1, x2, d, kb, kd]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("touch: own reserved job only, restarts the TTR", () =>
      session(async (c) => {
        const a = await c.dial();
        const b = await c.dial();
        const t = tubeName("touch");
        await a.cmd(`use ${t}`);
        await a.cmd(`watch ${t}`);
        await a.cmd("ignore default");
        const id = await putId(a, "t", 0, 0, 100);
        assert.equal(await a.cmd(`touch ${id}`), "NOT_FOUND\r\n", "not reserved");
        assert.equal(await a.cmd("reserve"), jobReply("RESERVED", id, "t"));
        assert.equal(await b.cmd(`touch ${id}`), "NOT_FOUND\r\n", "reserved by another");
        assert.equal(await a.cmd(`touch ${id}`), "TOUCHED\r\n");
        const left = (await statsJob(a, id)).num("time-left");
        assert.ok(left >= 98 && left <= 100, `time-left after touch ${left}`);
        assert.equal(await a.cmd("touch 0"), "NOT_FOUND\r\n");
        assert.equal(await a.cmd("touch a111"), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd("touch 111a"), "BAD_FORMAT\r\n");
        assert.equal(await a.cmd("touch"), "UNKNOWN_COMMAND\r\n");
        assert.equal(await a.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("pause-tube: PAUSED/NOT_FOUND, reserve skips a paused tube, peek and reserve-job do not", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("pause");
        await w.cmd(`use ${t}`);
        await w.cmd(`watch ${t}`);
        await w.cmd("ignore default");
        const id = await putId(w, "p");
        assert.equal(await w.cmd(`pause-tube ${t} 100`), "PAUSED\r\n");
        const st = await statsTube(w, t);
        assert.equal(st.num("pause"), 100);
        assert.ok(st.num("pause-time-left") >= 99 && st.num("pause-time-left") <= 100);
        assert.equal(st.num("cmd-pause-tube"), 1);
        assert.equal(await w.cmd("reserve-with-timeout 0"), "TIMED_OUT\r\n", "paused tube skipped");
        assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", id, "p"));
        assert.equal(await w.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
        assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "p"), "unpaused");
        assert.equal((await statsTube(w, t)).num("pause"), 0);
        assert.equal(await w.cmd(`pause-tube ${tubeName("nope")} 1`), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("pause-tube"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd(`pause-tube ${t}`), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd(`pause-tube ${t} x`), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd(`pause-tube ${t} 4294967296`), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd(`pause-tube -${t} 1`), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("quit closes the connection with no reply", () =>
      session(async (c) => {
        const w = await c.dial();
        w.send("quit\r\n");
        await w.closed();
        assert.equal(w.pending, "");
      }));

    // ---- stats ---------------------------------------------------------------------

    it("stats: 51 keys in wire order with real values", () =>
      session(async (c) => {
        const w = await c.dial();
        const s = await stats(w);
        assert.deepEqual(s.keys, STATS_KEYS);
        for (const k of STATS_KEYS.slice(0, 37)) s.num(k);
        const pid = srv().child?.pid ?? process.pid;
        assert.equal(s.num("pid"), pid);
        assert.equal(s.str("version"), '"1.12"');
        assert.match(s.str("rusage-utime"), /^\d+\.\d{6}$/);
        assert.match(s.str("rusage-stime"), /^\d+\.\d{6}$/);
        assert.ok(s.num("uptime") >= 0);
        for (const k of STATS_KEYS.slice(41, 45)) assert.equal(s.num(k), 0, `${k} without -b`);
        assert.equal(s.num("binlog-max-size"), 10485760);
        assert.equal(s.num("max-job-size"), 65535);
        assert.equal(s.str("draining"), "false");
        assert.match(s.str("id"), /^[0-9a-f]{16}$/);
        assert.equal((await stats(w)).str("id"), s.str("id"), "id is fixed for the process");
        assert.equal(s.str("hostname"), q(os.hostname()));
        assert.equal(s.str("os"), q(kernelVersion()));
        assert.equal(s.str("platform"), q(os.machine()));
        assert.ok(s.num("current-connections") >= 1);
        assert.ok(s.num("total-connections") >= s.num("current-connections"));
        assert.ok(s.num("current-tubes") >= 1);
        assert.equal(await w.cmd("stats "), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("statsfoo"), "BAD_FORMAT\r\n");
      }));

    it("stats counters and gauges move as commands run", () =>
      session(async (c) => {
        const w = await c.dial();
        // Earlier tests' connections are closed; wait until the server has seen that.
        const s0 = await eventually("only this connection", () => stats(w), (s) => s.num("current-connections") === 1);
        const t = tubeName("ctr");
        assert.equal(await w.cmd(`use ${t}`), `USING ${t}\r\n`);
        const id = await putId(w, "counted");
        const s1 = await stats(w);
        assert.equal(s1.num("current-jobs-ready") - s0.num("current-jobs-ready"), 1);
        assert.equal(s1.num("current-jobs-urgent") - s0.num("current-jobs-urgent"), 1, "pri 0 < 1024 is urgent");
        assert.equal(s1.num("current-producers") - s0.num("current-producers"), 1);
        assert.equal(s1.num("current-tubes") - s0.num("current-tubes"), 1);
        assert.equal(s1.num("total-jobs") - s0.num("total-jobs"), 1);
        assert.equal(await w.cmd(`peek ${id}`), jobReply("FOUND", id, "counted"));
        assert.equal(await w.cmd("peek-ready"), jobReply("FOUND", id, "counted"));
        assert.equal(await w.cmd("peek-delayed"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("peek-buried"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd(`watch ${t}`), "WATCHING 2\r\n");
        assert.equal(await w.cmd("ignore default"), "WATCHING 1\r\n");
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "counted"));
        const s2 = await stats(w);
        assert.equal(s2.num("current-jobs-reserved") - s0.num("current-jobs-reserved"), 1);
        assert.equal(s2.num("current-jobs-ready"), s0.num("current-jobs-ready"));
        assert.equal(s2.num("current-workers") - s0.num("current-workers"), 1);
        assert.equal(await w.cmd(`touch ${id}`), "TOUCHED\r\n");
        assert.equal(await w.cmd(`release ${id} 2000 0`), "RELEASED\r\n");
        assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", id, "counted"));
        assert.equal(await w.cmd(`bury ${id} 2000`), "BURIED\r\n");
        const s3 = await stats(w);
        assert.equal(s3.num("current-jobs-buried") - s0.num("current-jobs-buried"), 1);
        assert.equal(await w.cmd("kick 1"), "KICKED 1\r\n");
        const s4 = await stats(w);
        assert.equal(s4.num("current-jobs-ready") - s0.num("current-jobs-ready"), 1);
        assert.equal(s4.num("current-jobs-urgent"), s0.num("current-jobs-urgent"), "pri 2000 is not urgent");
        await w.cmd(`stats-job ${id}`);
        await w.cmd(`stats-tube ${t}`);
        await w.cmd("list-tubes");
        await w.cmd("list-tube-used");
        await w.cmd("list-tubes-watched");
        assert.equal(await w.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
        assert.equal(await w.cmd(`kick-job ${id}`), "NOT_FOUND\r\n", "ready: not kickable (and not counted)");
        assert.equal(await w.cmd(`reserve-job ${id}`), jobReply("RESERVED", id, "counted"));
        assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        assert.equal(await w.cmd(`delete ${id}`), "NOT_FOUND\r\n", "NOT_FOUND still counts");
        const put2 = await putId(w, "delayed", 0, 100);
        const s5 = await stats(w);
        assert.equal(s5.num("current-jobs-delayed") - s0.num("current-jobs-delayed"), 1);
        const want: Record<string, number> = {
          "cmd-put": 2,
          "cmd-peek": 1,
          "cmd-peek-ready": 1,
          "cmd-peek-delayed": 1,
          "cmd-peek-buried": 1,
          "cmd-reserve": 1,
          "cmd-reserve-with-timeout": 1,
          "cmd-delete": 2,
          "cmd-release": 1,
          "cmd-use": 1,
          "cmd-watch": 1,
          "cmd-ignore": 1,
          "cmd-bury": 1,
          "cmd-kick": 1,
          "cmd-touch": 1,
          "cmd-stats": 5,
          "cmd-stats-job": 1,
          "cmd-stats-tube": 1,
          "cmd-list-tubes": 1,
          "cmd-list-tube-used": 1,
          "cmd-list-tubes-watched": 1,
          "cmd-pause-tube": 1,
          "job-timeouts": 0,
          "total-jobs": 2,
          "total-connections": 0,
        };
        for (const [k, d] of Object.entries(want)) assert.equal(s5.num(k) - s0.num(k), d, k);
        const st = await statsTube(w, t);
        assert.equal(st.num("cmd-delete"), 1, "per-tube cmd-delete counts successful deletes only");
        assert.equal(st.num("total-jobs"), 2);
        // A second connection is counted, and uncounted again when it goes.
        const o = await c.dial();
        const s6 = await stats(o);
        assert.equal(s6.num("total-connections") - s0.num("total-connections"), 1);
        assert.equal(s6.num("current-connections"), 2);
        o.close();
        await eventually("closed connection uncounted", () => stats(w), (s) => s.num("current-connections") === 1);
        assert.equal(await w.cmd(`delete ${put2}`), "DELETED\r\n");
      }));

    it("stats-job and stats-tube: keys in wire order, values, NOT_FOUND, BAD_FORMAT", () =>
      session(async (c) => {
        const w = await c.dial();
        const t = tubeName("sj");
        await w.cmd(`use ${t}`);
        const id = await putId(w, "abc", 1023, 100, 30);
        const sj = await statsJob(w, id);
        assert.deepEqual(sj.keys, JOB_KEYS);
        assert.equal(sj.num("id"), id);
        assert.equal(sj.str("tube"), q(t));
        assert.equal(sj.str("state"), "delayed");
        assert.equal(sj.num("pri"), 1023);
        assert.ok(sj.num("age") >= 0 && sj.num("age") <= 1);
        assert.equal(sj.num("delay"), 100);
        assert.equal(sj.num("ttr"), 30);
        assert.ok(sj.num("time-left") >= 99 && sj.num("time-left") <= 100, `time-left ${sj.num("time-left")}`);
        for (const k of JOB_KEYS.slice(8)) assert.equal(sj.num(k), 0, k);
        assert.equal(await w.cmd("stats-job 0"), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("stats-job 111ABC"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("stats-job 111 222"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("stats-job"), "BAD_FORMAT\r\n");
        const o = await c.dial();
        await o.cmd(`watch ${t}`);
        const ready = await putId(w, "r", 5);
        const st = await statsTube(w, t);
        assert.deepEqual(st.keys, TUBE_KEYS);
        const want: Record<string, number> = {
          "current-jobs-urgent": 1,
          "current-jobs-ready": 1,
          "current-jobs-reserved": 0,
          "current-jobs-delayed": 1,
          "current-jobs-buried": 0,
          "total-jobs": 2,
          "current-using": 1,
          "current-watching": 1,
          "current-waiting": 0,
          "cmd-delete": 0,
          "cmd-pause-tube": 0,
          pause: 0,
          "pause-time-left": 0,
        };
        assert.equal(st.str("name"), q(t));
        for (const [k, v] of Object.entries(want)) assert.equal(st.num(k), v, k);
        assert.equal((await statsJob(w, ready)).num("time-left"), 0, "a ready job shows time-left 0");
        assert.equal(await w.cmd(`stats-tube ${tubeName("none")}`), "NOT_FOUND\r\n");
        assert.equal(await w.cmd("stats-tube -x"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("stats-tube"), "BAD_FORMAT\r\n");
        for (const j of [id, ready]) assert.equal(await w.cmd(`delete ${j}`), "DELETED\r\n");
      }));

    it("list-tubes: exact YAML; new tubes appended", () =>
      session(async (c) => {
        const w = await c.dial();
        const before = await w.cmd("list-tubes");
        const t = tubeName("lt");
        await w.cmd(`use ${t}`);
        const yaml = before.slice(before.indexOf("\r\n") + 2, -2) + `- ${t}\n`;
        assert.equal(await w.cmd("list-tubes"), ok(yaml));
        assert.equal(await w.cmd("list-tubes x"), "BAD_FORMAT\r\n");
        assert.equal(await w.cmd("list-tubesX"), "BAD_FORMAT\r\n");
      }));

    // ---- scheduling ----------------------------------------------------------------

    it("a worker watching several tubes gets the best (pri, id) job among them", () =>
      session(async (c) => {
        const p = await c.dial();
        const w = await c.dial();
        const [ta, tb, tc] = [tubeName("sa"), tubeName("sb"), tubeName("sc")];
        await p.cmd(`use ${ta}`);
        const A = await putId(p, "A", 5);
        const B = await putId(p, "B", 3);
        await p.cmd(`use ${tb}`);
        const C = await putId(p, "C", 3);
        await p.cmd(`use ${tc}`);
        const D = await putId(p, "D", 1);
        const E = await putId(p, "E", 3);
        for (const t of [tc, tb, ta]) await w.cmd(`watch ${t}`);
        await w.cmd("ignore default");
        const got: string[] = [];
        for (let i = 0; i < 5; i++) got.push(await w.cmd("reserve-with-timeout 0"));
        assert.deepEqual(got, [
          jobReply("RESERVED", D, "D"),
          jobReply("RESERVED", B, "B"),
          jobReply("RESERVED", C, "C"),
          jobReply("RESERVED", E, "E"),
          jobReply("RESERVED", A, "A"),
        ]);
        for (const id of [A, B, C, D, E]) assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    it("a blocked reserve is woken by put, release, kick and pause-tube 0", () =>
      session(async (c) => {
        const h = await c.dial();
        const w = await c.dial();
        const t = tubeName("wake");
        await h.cmd(`use ${t}`);
        await h.cmd(`watch ${t}`);
        await h.cmd("ignore default");
        await w.cmd(`watch ${t}`);
        await w.cmd("ignore default");
        // put
        w.send("reserve\r\n");
        await waitersOn(h, t, 1);
        const j1 = await putId(h, "by put");
        assert.equal(await w.reply(), jobReply("RESERVED", j1, "by put"));
        assert.equal(await w.cmd(`delete ${j1}`), "DELETED\r\n");
        // release
        const j2 = await putId(h, "by release");
        assert.equal(await h.cmd("reserve"), jobReply("RESERVED", j2, "by release"));
        w.send("reserve\r\n");
        await waitersOn(h, t, 1);
        assert.equal(await h.cmd(`release ${j2} 0 0`), "RELEASED\r\n");
        assert.equal(await w.reply(), jobReply("RESERVED", j2, "by release"));
        assert.equal(await w.cmd(`delete ${j2}`), "DELETED\r\n");
        // kick (of a buried job)
        const j3 = await putId(h, "by kick");
        assert.equal(await h.cmd("reserve"), jobReply("RESERVED", j3, "by kick"));
        assert.equal(await h.cmd(`bury ${j3} 0`), "BURIED\r\n");
        w.send("reserve\r\n");
        await waitersOn(h, t, 1);
        assert.equal(await h.cmd("kick 1"), "KICKED 1\r\n");
        assert.equal(await w.reply(), jobReply("RESERVED", j3, "by kick"));
        assert.equal(await w.cmd(`delete ${j3}`), "DELETED\r\n");
        // kick-job (of a delayed job)
        const j4 = await putId(h, "by kick-job", 0, 100);
        w.send("reserve\r\n");
        await waitersOn(h, t, 1);
        assert.equal(await h.cmd(`kick-job ${j4}`), "KICKED\r\n");
        assert.equal(await w.reply(), jobReply("RESERVED", j4, "by kick-job"));
        assert.equal(await w.cmd(`delete ${j4}`), "DELETED\r\n");
        // pause-tube 0
        assert.equal(await h.cmd(`pause-tube ${t} 86400`), "PAUSED\r\n");
        const j5 = await putId(h, "by unpause");
        w.send("reserve\r\n");
        await waitersOn(h, t, 1);
        assert.ok(await w.silentFor(100), "paused: no job yet");
        assert.equal(await h.cmd(`pause-tube ${t} 0`), "PAUSED\r\n");
        assert.equal(await w.reply(), jobReply("RESERVED", j5, "by unpause"));
        assert.equal(await w.cmd(`delete ${j5}`), "DELETED\r\n");
      }));

    it(
      v112
        ? "waiting workers A,B,C,D are served A,B,D,C (1.12's rotating cursor)"
        : "waiting workers are served first come, first served (A,B,C,D)",
      () =>
        session(async (c) => {
          const p = await c.dial();
          const t = tubeName("fifo");
          await p.cmd(`use ${t}`);
          const workers: Wire[] = [];
          for (let i = 0; i < 4; i++) {
            const w = await c.dial();
            await w.cmd(`watch ${t}`);
            await w.cmd("ignore default");
            w.send("reserve\r\n");
            await waitersOn(p, t, i + 1);
            workers.push(w);
          }
          const ids: number[] = [];
          for (let i = 0; i < 4; i++) ids.push(await putId(p, `j${i}`));
          const got = await Promise.all(workers.map((w) => w.reply()));
          const order = v112 ? [0, 1, 3, 2] : [0, 1, 2, 3];
          assert.deepEqual(got, order.map((j) => jobReply("RESERVED", ids[j]!, `j${j}`)));
          for (const [i, w] of workers.entries()) {
            assert.equal(await w.cmd(`delete ${ids[order[i]!]}`), "DELETED\r\n");
          }
        }),
    );

    it("a reserved job goes back to ready when its holder disconnects, and when it quits", () =>
      session(async (c) => {
        const p = await c.dial();
        const t = tubeName("gone");
        await p.cmd(`use ${t}`);
        const id = await putId(p, "survivor");
        for (const how of ["close", "quit"]) {
          const holder = await c.dial();
          await holder.cmd(`watch ${t}`);
          await holder.cmd("ignore default");
          assert.equal(await holder.cmd("reserve"), jobReply("RESERVED", id, "survivor"));
          const w = await c.dial();
          await w.cmd(`watch ${t}`);
          await w.cmd("ignore default");
          w.send("reserve\r\n");
          await waitersOn(p, t, 1);
          if (how === "close") holder.close();
          else {
            holder.send("quit\r\n");
            await holder.closed();
          }
          assert.equal(await w.reply(), jobReply("RESERVED", id, "survivor"), how);
          const sj = await statsJob(p, id);
          assert.equal(sj.num("releases"), 0, "a disconnect is not a release");
          assert.equal(sj.num("timeouts"), 0, "nor a timeout");
          w.close();
          await eventually(`job back after ${how}`, async () =>
            (await statsJob(p, id)).str("state"), (s) =>
            s === "ready");
        }
        assert.equal(await p.cmd(`delete ${id}`), "DELETED\r\n");
      }));

    // ---- real time: the scenarios run concurrently --------------------------------------

    it("timing: delay, TTR expiry, DEADLINE_SOON (ttr 1 and 2), TIMED_OUT, pause 1 s, uptime", () =>
      session(async (c) => {
        const obs = await c.dial();
        const s0 = await stats(obs);
        /** A connection using and watching (only) a fresh tube. */
        const onTube = async (prefix: string): Promise<[Wire, string]> => {
          const w = await c.dial();
          const t = tubeName(prefix);
          await w.cmd(`use ${t}`);
          await w.cmd(`watch ${t}`);
          await w.cmd("ignore default");
          return [w, t];
        };

        const delayed = async () => {
          const [w] = await onTube("delay");
          const t0 = Date.now();
          const id = await putId(w, "later", 0, 1);
          const sj = await statsJob(w, id);
          assert.equal(sj.str("state"), "delayed");
          assert.ok(sj.num("time-left") <= 1);
          assert.equal(await w.cmd("peek-ready"), "NOT_FOUND\r\n");
          assert.equal(await w.cmd("reserve-with-timeout 5", 6000), jobReply("RESERVED", id, "later"));
          const ms = Date.now() - t0;
          assert.ok(ms >= 900 && ms < 3000, `delayed job became ready after ${ms} ms`);
          assert.equal((await statsJob(w, id)).num("delay"), 1);
          assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        };

        const ttrExpiry = async () => {
          const [holder, t] = await onTube("ttr");
          const id = await putId(holder, "slow", 0, 0, 1);
          assert.equal(await holder.cmd("reserve"), jobReply("RESERVED", id, "slow"));
          const t0 = Date.now();
          const other = await c.dial();
          await other.cmd(`watch ${t}`);
          await other.cmd("ignore default");
          const got = other.cmd("reserve-with-timeout 5", 6000);
          if (v112) {
            // 1.12's TTR race (spec §4.4, issues #262/#380) can leave the job reserved
            // until its holder sends any command; nudge it. tubeway must not need this.
            await sleep(1500);
            assert.equal(await holder.cmd("list-tube-used"), `USING ${t}\r\n`);
          }
          assert.equal(await got, jobReply("RESERVED", id, "slow"));
          const ms = Date.now() - t0;
          assert.ok(ms >= 700 && ms < 3000, `TTR 1 expired after ${ms} ms`);
          const sj = await statsJob(other, id);
          assert.equal(sj.num("timeouts"), 1);
          assert.equal(sj.num("reserves"), 2);
          assert.equal(sj.num("releases"), 0);
          assert.equal(await holder.cmd(`delete ${id}`), "NOT_FOUND\r\n", "no longer the holder's");
          assert.equal(await other.cmd(`delete ${id}`), "DELETED\r\n");
        };

        const deadlineSoonTtr1 = async () => {
          const [w] = await onTube("ds1");
          const id = await putId(w, "ttr1", 0, 0, 1);
          assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "ttr1"));
          const [r, ms] = await timed(w.cmd("reserve-with-timeout 5"));
          assert.equal(r, "DEADLINE_SOON\r\n");
          assert.ok(ms < 500, `ttr 1: DEADLINE_SOON after ${ms} ms, expected at once`);
          assert.equal((await statsJob(w, id)).str("state"), "reserved", "DEADLINE_SOON leaves the job reserved");
          assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        };

        const deadlineSoonTtr2 = async () => {
          const [w] = await onTube("ds2");
          const id = await putId(w, "ttr2", 0, 0, 2);
          assert.equal(await w.cmd("reserve"), jobReply("RESERVED", id, "ttr2"));
          const [r, ms] = await timed(w.cmd("reserve"));
          assert.equal(r, "DEADLINE_SOON\r\n");
          assert.ok(ms >= 700 && ms < 1900, `ttr 2: DEADLINE_SOON after ${ms} ms, expected about 1 s`);
          assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        };

        const timedOut = async () => {
          const [w] = await onTube("to");
          const [r, ms] = await timed(w.cmd("reserve-with-timeout 1"));
          assert.equal(r, "TIMED_OUT\r\n");
          assert.ok(ms >= 900 && ms < 3000, `reserve-with-timeout 1 answered after ${ms} ms`);
        };

        const pausedOneSecond = async () => {
          const [w, t] = await onTube("p1");
          const id = await putId(w, "paused");
          assert.equal(await w.cmd(`pause-tube ${t} 1`), "PAUSED\r\n");
          const [r, ms] = await timed(w.cmd("reserve", 5000));
          assert.equal(r, jobReply("RESERVED", id, "paused"));
          assert.ok(ms >= 800 && ms < 3000, `pause 1: reserved after ${ms} ms`);
          const st = await statsTube(w, t);
          assert.equal(st.num("pause"), 0, "an expired pause reads 0");
          assert.equal(st.num("pause-time-left"), 0);
          assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
        };

        await Promise.all([
          delayed(),
          ttrExpiry(),
          deadlineSoonTtr1(),
          deadlineSoonTtr2(),
          timedOut(),
          pausedOneSecond(),
        ]);
        const s1 = await stats(obs);
        assert.equal(s1.num("job-timeouts") - s0.num("job-timeouts"), 1, "exactly one TTR expiry");
        assert.ok(s1.num("uptime") > s0.num("uptime"), `uptime ${s0.num("uptime")} -> ${s1.num("uptime")}`);
      }));

    // ---- drain mode (its own server: draining is permanent) -------------------------------

    it("drain mode: put answers DRAINING, reserve and delete still work", async () => {
      const r = await target.start([]);
      const c = new Conns(r.addr);
      try {
        assert.ok(r.drain, "the target can drain");
        const w = await c.dial();
        const before = await putId(w, "before drain");
        r.drain();
        await eventually("stats shows draining", async () => (await stats(w)).str("draining"), (d) => d === "true");
        assert.equal(await w.put("after drain"), "DRAINING\r\n");
        w.send("put 0 0 60 3\r\nabcde\r\n");
        assert.equal(await w.reply(), "EXPECTED_CRLF\r\n", "the CRLF check comes first");
        assert.equal(await w.reply(), "UNKNOWN_COMMAND\r\n");
        assert.equal(await w.cmd("reserve-with-timeout 0"), jobReply("RESERVED", before, "before drain"));
        assert.equal(await w.cmd(`release ${before} 0 0`), "RELEASED\r\n");
        assert.equal(await w.cmd("use other"), "USING other\r\n");
        assert.equal(await w.cmd("reserve"), jobReply("RESERVED", before, "before drain"));
        assert.equal(await w.cmd(`delete ${before}`), "DELETED\r\n");
        const s = await stats(w);
        assert.equal(s.num("current-jobs-ready"), 0);
        assert.equal(s.num("total-jobs"), 1);
        assert.equal(s.num("cmd-put"), 3);
        // 1.12 logs every refused put as "server error: DRAINING"; tubeway does not: it is
        // the expected answer in drain mode, not a fault.
        if (v112) assert.match(r.output(), /server error: DRAINING/);
        else assert.doesNotMatch(r.output(), /server error/);
      } finally {
        c.closeAll();
        await r.stop();
      }
    });

    if (options.oneNode) {
      baseIt("every test named in oneNode is one of the suite's", () => {
        assert.deepEqual(Object.keys(options.oneNode!).filter((n) => !names.includes(n)), []);
      });
    }
  });
}
