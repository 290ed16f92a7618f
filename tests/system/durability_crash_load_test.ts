// Durability through the real process, 2: a crash under load with durable acks (-f 0):
// every acknowledged change is there after kill -9.
//
// Run: node_modules/.bin/deno test -A tests/system/durability_crash_load_test.ts
//      node_modules/.bin/bun test --timeout 120000 tests/system/durability_crash_load_test.ts
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { type Address, dial, type Wire } from "../harness/wire.ts";
import { expectReply, HERE, kill9, Scope, sleep, statsOf, within, Yaml } from "../harness/durability.ts";
import { putId } from "../harness/wire_checks.ts";

// ---- 2. a crash under load, durable acks ----------------------------------------------

type LState = "ready" | "delayed" | "buried" | "absent";

/** A logged change of one job, in the order the server applied them. */
interface LOp {
  to: LState;
  acked: boolean;
}

interface TJob {
  id: number;
  body: string;
  tube: string;
  ops: LOp[];
}

/** What the clients were told, per job. */
class Tracker {
  jobs = new Map<number, TJob>();
  /** Bodies put whose INSERTED has not arrived (and no one reserved them yet). */
  pendingPuts = new Map<string, { tube: string; to: LState }>();
  /** Buried or delayed jobs (as acknowledged) that a client may kick-job. */
  kickable: number[] = [];
  problems: string[] = [];
  maxIdSeen = 0;
  killed = false;
  stats = { puts: 0, deletes: 0, buries: 0, releases: 0, kicks: 0, reserves: 0 };

  problem(s: string): void {
    if (this.problems.length < 20) this.problems.push(s);
  }

  /** The states the job may be in after a crash: after any prefix that includes every acked op. */
  allowed(j: TJob): Set<LState> {
    let k = -1;
    j.ops.forEach((o, i) => {
      if (o.acked) k = i;
    });
    const out = new Set<LState>(k < 0 ? ["absent"] : []);
    for (let i = Math.max(k, 0); i < j.ops.length; i++) out.add(j.ops[i]!.to);
    return out;
  }

  inserted(id: number, body: string, tube: string, to: LState): void {
    this.maxIdSeen = Math.max(this.maxIdSeen, id);
    this.pendingPuts.delete(body);
    const j = this.jobs.get(id);
    if (j) {
      if (j.body !== body) this.problem(`INSERTED ${id} for a body another reply gave a different id`);
      j.ops[0]!.acked = true;
      return;
    }
    this.jobs.set(id, { id, body, tube, ops: [{ to, acked: true }] });
    if (to === "delayed") this.kickable.push(id);
  }

  /** A job a reserve returned; it may be one whose INSERTED has not arrived yet. */
  reserved(id: number, body: string): TJob | undefined {
    this.maxIdSeen = Math.max(this.maxIdSeen, id);
    const j = this.jobs.get(id);
    if (j) {
      if (j.body !== body) this.problem(`RESERVED ${id} with a body other than the one put`);
      return j;
    }
    const p = this.pendingPuts.get(body);
    if (!p) {
      this.problem(`RESERVED ${id} with a body no client put: ${JSON.stringify(body.slice(0, 60))}`);
      return undefined;
    }
    this.pendingPuts.delete(body);
    const n: TJob = { id, body, tube: p.tube, ops: [{ to: p.to, acked: false }] };
    this.jobs.set(id, n);
    return n;
  }
}

function loadBody(client: number, round: number, n: number): string {
  let s = `c${client}.r${round}.n${n}|`;
  const extra = Math.floor(Math.random() * 200);
  for (let i = 0; i < extra; i++) {
    s += Math.random() < 0.03 ? "\r\n" : String.fromCharCode(32 + Math.floor(Math.random() * 95));
  }
  return s;
}

/** One load client: put, reserve + delete/bury/release, kick-job, until `until` or the crash. */
async function loadClient(tr: Tracker, addr: Address, idx: number, round: number, until: number): Promise<void> {
  let w: Wire;
  try {
    w = await dial(addr);
  } catch (e) {
    if (!tr.killed) tr.problem(`client ${idx}: cannot connect: ${e}`);
    return;
  }
  const tube = `load.${idx % 2}`;
  try {
    await expectReply(w, `use ${tube}`, `USING ${tube}`);
    await expectReply(w, "watch load.0", "WATCHING 2");
    await expectReply(w, "watch load.1", "WATCHING 3");
    for (let n = 0; n < 1_000_000 && Date.now() < until && !tr.killed; n++) {
      const r = Math.random();
      if (r < 0.45) {
        const body = loadBody(idx, round, n);
        const delayed = Math.random() < 0.08;
        const to: LState = delayed ? "delayed" : "ready";
        tr.pendingPuts.set(body, { tube, to });
        const reply = await w.put(body, n % 1000, delayed ? 3600 : 0, 120);
        const m = /^INSERTED (\d+)\r\n$/.exec(reply);
        if (!m) return tr.problem(`client ${idx}: put: ${JSON.stringify(reply)}`);
        tr.stats.puts++;
        tr.inserted(Number(m[1]), body, tube, to);
      } else if (r < 0.92) {
        const reply = await w.cmd("reserve-with-timeout 0");
        if (reply === "TIMED_OUT\r\n") continue;
        const m = /^RESERVED (\d+) (\d+)\r\n/.exec(reply);
        if (!m) return tr.problem(`client ${idx}: reserve-with-timeout 0: ${JSON.stringify(reply)}`);
        tr.stats.reserves++;
        const id = Number(m[1]);
        const j = tr.reserved(id, reply.slice(m[0].length, -2));
        if (!j) return;
        const a = Math.random();
        const [line, want, to]: [string, string, LState] = a < 0.5
          ? [`delete ${id}`, "DELETED", "absent"]
          : a < 0.75
          ? [`bury ${id} ${n % 100}`, "BURIED", "buried"]
          : [`release ${id} ${n % 100} 0`, "RELEASED", "ready"];
        const op: LOp = { to, acked: false };
        j.ops.push(op);
        const got = await w.cmd(line);
        if (got !== want + "\r\n") return tr.problem(`client ${idx}: ${line}: ${JSON.stringify(got)}`);
        op.acked = true;
        if (to === "buried") tr.kickable.push(id);
        if (to === "absent") tr.stats.deletes++;
        else if (to === "buried") tr.stats.buries++;
        else tr.stats.releases++;
      } else if (tr.kickable.length > 0) {
        const i = Math.floor(Math.random() * tr.kickable.length);
        const id = tr.kickable[i]!;
        tr.kickable[i] = tr.kickable[tr.kickable.length - 1]!;
        tr.kickable.pop();
        const op: LOp = { to: "ready", acked: false };
        tr.jobs.get(id)!.ops.push(op);
        const got = await w.cmd(`kick-job ${id}`);
        if (got !== "KICKED\r\n") return tr.problem(`client ${idx}: kick-job ${id}: ${JSON.stringify(got)}`);
        op.acked = true;
        tr.stats.kicks++;
      }
    }
  } catch (e) {
    // after the kill every client loses its connection; before it, that is a failure
    if (!tr.killed) tr.problem(`client ${idx}: ${e}`);
  } finally {
    w.close();
  }
}

interface Seen {
  id: number;
  state: string;
  tube: string;
  body: string;
}

/** Every job of the ids given (pipelined stats-job + peek), after the restart. */
async function scanJobs(w: Wire, ids: number[]): Promise<Seen[]> {
  const out: Seen[] = [];
  for (let i = 0; i < ids.length; i += 400) {
    const chunk = ids.slice(i, i + 400);
    w.send(chunk.map((id) => `stats-job ${id}\r\npeek ${id}\r\n`).join(""));
    for (const id of chunk) {
      const st = await w.reply(10000);
      const pk = await w.reply(10000);
      if (st === "NOT_FOUND\r\n") {
        assert.equal(pk, "NOT_FOUND\r\n", `job ${id}: stats-job NOT_FOUND but peek ${JSON.stringify(pk)}`);
        continue;
      }
      const y = new Yaml(st);
      const m = /^FOUND (\d+) (\d+)\r\n/.exec(pk);
      assert.ok(m && Number(m[1]) === id, `peek ${id}: ${JSON.stringify(pk.slice(0, 80))}`);
      out.push({ id, state: y.str("state"), tube: y.str("tube"), body: pk.slice(m[0].length, -2) });
    }
  }
  return out;
}

describe(`crash under load with durable acks (-f 0): ${HERE.name}`, () => {
  const sc = new Scope();
  after(() => sc.cleanup());

  test("every acknowledged change survives kill -9 at a random moment (3 rounds)", async () => {
    const CLIENTS = 8;
    const ROUNDS = 3;
    const LOAD_MS = 1500;
    const t0 = Date.now();
    const deadline = t0 + 28000;
    const dir = sc.dir();
    const flags = ["-b", dir, "-f", "0"];
    const tr = new Tracker();
    let server = await sc.start(HERE, flags);
    let lo = 1; // the lowest id this round's puts can get
    const lines: string[] = [];
    let rounds = 0;
    for (let round = 1; round <= ROUNDS && Date.now() < deadline - 8000; round++) {
      tr.killed = false;
      Object.assign(tr.stats, { puts: 0, deletes: 0, buries: 0, releases: 0, kicks: 0, reserves: 0 });
      const start = Date.now();
      const until = start + LOAD_MS;
      const killAt = 200 + Math.floor(Math.random() * (LOAD_MS - 300));
      const clients = Array.from({ length: CLIENTS }, (_, i) => loadClient(tr, server.addr, i, round, until));
      await sleep(killAt);
      tr.killed = true;
      await kill9(server);
      await within(Promise.all(clients), 15000, "the load clients to stop");
      assert.deepEqual(tr.problems, [], `round ${round}: problems during the load`);

      server = await sc.start(HERE, flags);
      const w = await dial(server.addr);
      const probe = await putId(w, "probe after the restart");
      assert.ok(probe > tr.maxIdSeen, `round ${round}: id ${probe} after the restart, ${tr.maxIdSeen} seen before`);
      const ids = new Set<number>(tr.jobs.keys());
      for (let id = lo; id <= Math.min(tr.maxIdSeen + 64, probe - 1); id++) ids.add(id);
      const seen = await scanJobs(w, [...ids].sort((a, b) => a - b));
      await expectReply(w, `delete ${probe}`, "DELETED");
      const st = await statsOf(w, "stats");
      const total = ["ready", "reserved", "delayed", "buried"].reduce((n, k) => n + st.num(`current-jobs-${k}`), 0);
      w.close();
      assert.equal(seen.length, total, `round ${round}: the scan found ${seen.length} jobs, stats counts ${total}`);

      const byId = new Map(seen.map((s) => [s.id, s]));
      const bodies = new Set<string>();
      const wrong: string[] = [];
      const note = (s: string) => wrong.length < 20 && wrong.push(s);
      let acked = 0;
      for (const s of seen) {
        if (bodies.has(s.body)) note(`job ${s.id}: a body that another job also has`);
        bodies.add(s.body);
        if (s.state === "reserved") note(`job ${s.id} is reserved right after a restart`);
        const j = tr.jobs.get(s.id);
        if (j) {
          if (j.body !== s.body) {
            note(
              `job ${s.id}: body ${JSON.stringify(s.body.slice(0, 60))}, put ${JSON.stringify(j.body.slice(0, 60))}`,
            );
          }
          if (j.tube !== s.tube) note(`job ${s.id}: tube ${s.tube}, put in ${j.tube}`);
          continue;
        }
        const p = tr.pendingPuts.get(s.body);
        if (!p) {
          note(`job ${s.id} (${s.state}, ${s.tube}): a body no client put: ${JSON.stringify(s.body.slice(0, 60))}`);
          continue;
        }
        if (p.to !== s.state || p.tube !== s.tube) {
          note(`job ${s.id}: unacknowledged put came back ${s.state} in ${s.tube}`);
        }
        tr.pendingPuts.delete(s.body);
      }
      for (const j of tr.jobs.values()) {
        const s = byId.get(j.id);
        const state = (s ? s.state : "absent") as LState;
        const ok = tr.allowed(j);
        if (j.ops.some((o) => o.acked)) acked++;
        if (!ok.has(state)) {
          note(
            `job ${j.id}: ${state} after the restart; allowed ${[...ok].join("/")}; ops ${
              j.ops.map((o) => o.to + (o.acked ? "(acked)" : "(no reply)")).join(" > ")
            }`,
          );
        }
      }
      assert.deepEqual(wrong, [], `round ${round}: jobs after the restart`);
      const s = tr.stats;
      lines.push(
        `round ${round}: killed at ${killAt} ms; acked puts ${s.puts}, reserves ${s.reserves}, deletes ${s.deletes}, ` +
          `buries ${s.buries}, releases ${s.releases}, kick-jobs ${s.kicks}; ${acked} tracked jobs with acks checked, ` +
          `${seen.length} present after the restart`,
      );

      // what the restarted server holds is the starting point of the next round
      tr.jobs = new Map(
        seen.map((
          x,
        ) => [x.id, { id: x.id, body: x.body, tube: x.tube, ops: [{ to: x.state as LState, acked: true }] }]),
      );
      tr.pendingPuts.clear();
      tr.kickable = seen.filter((x) => x.state === "buried" || x.state === "delayed").map((x) => x.id);
      tr.maxIdSeen = probe;
      lo = probe + 1;
      rounds++;
    }
    await kill9(server);
    console.log(`durability (${HERE.name}) crash under load, ${Date.now() - t0} ms:\n  ${lines.join("\n  ")}`);
    assert.equal(rounds, ROUNDS, `only ${rounds} rounds fitted in the time bound`);
    assert.ok(Date.now() - t0 < 30000, `took ${Date.now() - t0} ms`);
  });
});
