// `tubeway migrate` through the real executable of this runtime and a real PostgreSQL
// (harness/postgres.ts): a log directory beanstalkd 1.12 wrote, and one a running
// tubeway wrote, go into PostgreSQL, and a tubeway --pg node serves every job with
// every field (stats-job, peek), the tubes' and the cluster's counts as a single node
// restarted on the directory shows them, the bury order and ids above the old ones;
// the way back (--to DIR) is served by a single tubeway -b DIR with the same jobs;
// and the refusals: a directory in use, a schema that holds jobs or is being served,
// a non-empty target directory, a database that cannot be used (69), bad usage (5).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, RUNTIME, skipUnless } from "../harness/paths.ts";
import { beanstalkd, buildBinary, freePort, type Running, runToEnd, startProcess } from "../harness/targets.ts";
import { STATS_KEYS, TUBE_KEYS } from "../harness/stats_keys.ts";
import { parseMigrateArgs } from "../../front/migrate_args.ts";
import { dial, type Wire } from "../harness/wire.ts";
import { acquirePostgres, type Postgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { assertSame, buriedOrder, killed, viewAll, WRITE_JOBS_Z, writeJobs } from "../harness/job_views.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const Z = String(WRITE_JOBS_Z);

const base = mkdtempSync(join(tmpdir(), "tubeway-migrate-"));
let dirs = 0;
const freshDir = () => mkdtempSync(join(base, `d${dirs++}-`));

let pg: Postgres | undefined;
let release = () => {};
before(async () => {
  if (skipWithoutPostgres) return;
  ({ pg, release } = await acquirePostgres());
});
after(() => {
  release();
  rmSync(base, { recursive: true, force: true });
});

/** The executable (this runtime's server.ts by default) with these arguments, to its end (bounded). */
const run = (args: string[], argv: string[] = SERVER) => runToEnd(argv, args);
const migrate = (...args: string[]) => run(["migrate", ...args]);
const pgNode = (schema: string) => startProcess(SERVER, ["--pg", pg!.url, "--pg-schema", schema, "-z", Z]);
const single = (dir: string) => startProcess(SERVER, ["-b", dir, "-z", Z]);
const where = () => `127.0.0.1:${pg!.port}/postgres`;

/** A YAML reply's keys (1.12 writes flat `key: value` lines). */
async function yaml(w: Wire, cmd: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const line of (await w.cmd(cmd)).split("\n").slice(2)) {
    const kv = /^([a-z-]+): "?(.*?)"?$/.exec(line);
    if (kv) out[kv[1]!] = kv[2]!;
  }
  return out;
}

/** The counts a migrate carries over (not the per-node and per-connection ones). */
const STATS: string[] = STATS_KEYS.filter((k) => /^current-jobs-|^total-jobs$|^job-timeouts$/.test(k));
const TUBE: string[] = TUBE_KEYS.filter((k) => k !== "name" && !/^current-(using|watching|waiting)$/.test(k));
const pick = (o: Record<string, string>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

/** The counts a client sees: stats, and stats-tube of every tube in list-tubes. */
async function counts(s: Running): Promise<Record<string, unknown>> {
  const w = await dial(s.addr);
  try {
    const tubes = (await w.cmd("list-tubes")).split("\n").filter((l) => l.startsWith("- ")).map((l) => l.slice(2));
    const out: Record<string, unknown> = { stats: pick(await yaml(w, "stats"), STATS), tubes };
    for (const t of tubes) out[t] = pick(await yaml(w, `stats-tube ${t}`), TUBE);
    return out;
  } finally {
    w.close();
  }
}

/** What a single tubeway started on (a copy of) `dir` shows: the reference a migrate must match. */
async function singleCounts(dir: string): Promise<Record<string, unknown>> {
  const copy = freshDir();
  cpSync(dir, copy, { recursive: true });
  const s = await single(copy);
  try {
    return await counts(s);
  } finally {
    await s.stop();
  }
}

const noPg = skipWithoutPostgres;
const noBeanstalkd = skipUnless(beanstalkd.unavailable() === undefined, "beanstalkd is not installed");

describe(`tubeway migrate (${RUNTIME})`, { skip: noPg }, () => {
  it(
    "copies a directory beanstalkd 1.12 wrote into PostgreSQL: every job and field, the counts, bury order, ids",
    { skip: noBeanstalkd, timeout: 60_000 },
    async () => {
      const dir = freshDir();
      const bs = await beanstalkd.start(["-b", dir, "-z", Z]);
      const { w, ids, buried } = await writeJobs(bs);
      const before = await viewAll(w, ids);
      const stoppedAt = Date.now();
      await killed(bs);
      w.close();
      const files = readdirSync(dir).sort();

      const schema = uniqueSchema("mig");
      const r = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", schema);
      assert.equal(r.code, 0, r.err);
      assert.equal(
        r.out,
        `included 11 jobs from beanstalkd's files in ${dir} (not imported yet)\n` +
          `migrated 11 jobs (7 ready, 2 delayed, 2 buried) from ${dir} into schema ${schema} at ${where()}; ` +
          `new ids go above 12; start tubeway with --pg\n`,
      );
      assert.deepEqual(readdirSync(dir).sort(), files, "the directory is only read");

      const want = await singleCounts(dir);
      const n = await pgNode(schema);
      try {
        const t = await dial(n.addr);
        const got = await viewAll(t, ids);
        const down = Math.ceil((Date.now() - stoppedAt) / 1000);
        for (const id of ids) assertSame(got.get(id), before.get(id), down);
        assert.deepEqual(await counts(n), want, "stats and stats-tube as a single node restarted on the directory");
        assert.deepEqual(await buriedOrder(t, "beta"), buried, "kick takes the buried jobs in bury order");
        const next = Number(/^INSERTED (\d+)\r\n$/.exec(await t.put("after the migrate"))?.[1]);
        assert.ok(next > 12, `new ids go above the migrated ones: ${next}`);
        t.close();
      } finally {
        await n.stop();
      }
    },
  );

  it(
    "copies a tubeway log directory into PostgreSQL and back into a directory a single tubeway serves",
    { timeout: 60_000 },
    async () => {
      const dir = freshDir();
      const s = await single(dir);
      let jobs;
      let before;
      try {
        jobs = await writeJobs(s);
        before = await viewAll(jobs.w, jobs.ids);
        const busy = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", uniqueSchema("busy"));
        assert.equal(busy.code, 10, "a running tubeway holds the directory");
        assert.match(busy.err, /^tubeway: migrate: failed to lock wal dir /);
        jobs.w.close();
      } finally {
        await s.stop();
      }
      const stoppedAt = Date.now();
      const schema = uniqueSchema("mig");
      const r = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", schema);
      assert.equal(r.code, 0, r.err);
      assert.equal(
        r.out,
        `migrated 11 jobs (7 ready, 2 delayed, 2 buried) from ${dir} into schema ${schema} at ${where()}; ` +
          `new ids go above ${/new ids go above (\d+)/.exec(r.out)?.[1]}; start tubeway with --pg\n`,
      );
      assert.ok(Number(/new ids go above (\d+)/.exec(r.out)![1]) >= 12);
      const want = await singleCounts(dir);

      const n = await pgNode(schema);
      let onPg;
      let added: number;
      try {
        const t = await dial(n.addr);
        onPg = await viewAll(t, jobs.ids);
        const down = Math.ceil((Date.now() - stoppedAt) / 1000);
        for (const id of jobs.ids) assertSame(onPg.get(id), before.get(id), down);
        assert.deepEqual(await counts(n), want, "stats and stats-tube as a single node restarted on the directory");
        added = Number(/^INSERTED (\d+)\r\n$/.exec(await t.put("put over PostgreSQL", 7, 0, 30))?.[1]);
        assert.ok(added > 12, `new ids go above the migrated ones: ${added}`);
        jobs.ids.push(added);
        assert.equal(await t.cmd("pause-tube alpha 600"), "PAUSED\r\n");
        // out of a schema a node serves: a snapshot, its reservation exported ready, and the summary says so
        assert.equal(await t.cmd("reserve-job 1"), "RESERVED 1 5\r\nplain\r\n");
        const live = join(freshDir(), "live");
        const snap = await migrate("--to", live, "--pg", pg!.url, "--pg-schema", schema);
        assert.equal(snap.code, 0, snap.err);
        assert.deepEqual(snap.out.split("\n").slice(1), [
          "dropped the pauses of 1 tube: alpha",
          "1 reserved job exported ready",
          `1 tubeway node(s) are serving schema ${schema}: their changes after this snapshot are not in ${live}`,
          "",
        ]);
        assert.equal(await t.cmd("release 1 5 0"), "RELEASED\r\n");
        onPg = await viewAll(t, jobs.ids);
        t.close();

        const served = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", schema);
        assert.equal(served.code, 1);
        assert.equal(
          served.err,
          `tubeway: migrate: 1 tubeway node(s) are serving schema ${schema} at ${where()}: stop them first ` +
            `(they hold id blocks the migrated ids could collide with)\n`,
        );
      } finally {
        await n.stop();
      }
      const again = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", schema);
      assert.equal(again.code, 1);
      assert.equal(
        again.err,
        `tubeway: migrate: schema ${schema} at ${where()} already holds 12 jobs: give an empty schema (--pg-schema), ` +
          `or --merge to add these\n`,
      );
      const merged = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", schema, "--merge");
      assert.equal(merged.code, 1);
      assert.match(
        merged.err,
        /^tubeway: migrate: a job id is in both .* and schema \w+: Key \(id\)=\(\d+\) already exists/,
      );

      // the way back
      const out = join(freshDir(), "back");
      const back = await migrate("--to", out, "--pg", pg!.url, "--pg-schema", schema);
      assert.equal(back.code, 0, back.err);
      assert.equal(
        back.out,
        `exported 12 jobs (8 ready, 2 delayed, 2 buried) of schema ${schema} at ${where()} to ${out}; ` +
          `start tubeway with -b ${out}\n` +
          "dropped the pauses of 1 tube: alpha\n",
      );
      const exportedAt = Date.now();
      const full = await migrate("--to", out, "--pg", pg!.url, "--pg-schema", schema);
      assert.deepEqual([full.code, full.err], [
        1,
        `tubeway: migrate: ${out} is not empty: give a new or empty directory\n`,
      ]);

      const s2 = await single(out);
      try {
        const t = await dial(s2.addr);
        const got = await viewAll(t, jobs.ids);
        const down = Math.ceil((Date.now() - exportedAt) / 1000) + 1;
        for (const id of jobs.ids) assertSame(got.get(id), onPg.get(id), down);
        assert.deepEqual(await buriedOrder(t, "beta"), jobs.buried, "kick takes the buried jobs in bury order");
        const next = Number(/^INSERTED (\d+)\r\n$/.exec(await t.put("after the way back"))?.[1]);
        assert.ok(next > added, `new ids go above every id of the schema: ${next}`);
        t.close();
      } finally {
        await s2.stop();
      }
    },
  );

  it("--merge refuses a put-unique key the schema holds in the same tube, and writes nothing", {
    timeout: 30_000,
  }, async () => {
    const schema = uniqueSchema("keys");
    const n = await pgNode(schema);
    try {
      const w = await dial(n.addr);
      w.send("put-unique k 0 0 60 2\r\npg\r\n");
      assert.equal(await w.reply(), "INSERTED 1\r\n");
      w.close();
    } finally {
      await n.stop();
    }
    const dir = freshDir();
    const s = await single(dir);
    try {
      const w = await dial(s.addr);
      assert.equal(await w.put("filler"), "INSERTED 1\r\n");
      w.send("put-unique k 0 0 60 3\r\ndir\r\n");
      assert.equal(await w.reply(), "INSERTED 2\r\n");
      assert.equal(await w.cmd("delete 1"), "DELETED\r\n");
      w.close();
    } finally {
      await s.stop();
    }
    const m = await migrate("-b", dir, "--pg", pg!.url, "--pg-schema", schema, "--merge");
    assert.equal(m.code, 1, m.err);
    assert.match(m.err, /^tubeway: migrate: a put-unique key is in both .* and schema keys_\w+: /);
    const back = await migrate("--to", join(freshDir(), "out"), "--pg", pg!.url, "--pg-schema", schema);
    assert.match(back.out, /^exported 1 job /, "nothing of the directory was written");
  });

  it("refuses a database it cannot use (69), a schema without tubeway's tables, and bad usage (5)", {
    timeout: 30_000,
  }, async () => {
    const port = await freePort(); // nothing listens there
    const dir = freshDir();
    const bad = await migrate("-b", dir, "--pg", `postgres://tubeway:s3cret@127.0.0.1:${port}/jobs`);
    assert.equal(bad.code, 69, bad.err);
    assert.match(
      bad.err,
      new RegExp(`^tubeway: migrate: cannot use PostgreSQL at 127\\.0\\.0\\.1:${port}/jobs: .*ECONNREFUSED`),
    );
    assert.doesNotMatch(bad.err, /s3cret|^\s+at /m, "no password, no stack trace");
    const out = join(freshDir(), "out");
    const badOut = await migrate("--to", out, "--pg", `postgres://127.0.0.1:${port}/jobs`);
    assert.equal(badOut.code, 69, badOut.err);
    const noTls = await migrate("--to", out, "--pg", `${pg!.url}?sslmode=require`); // the cluster has no TLS
    assert.deepEqual(
      [noTls.code, noTls.err],
      [
        69,
        `tubeway: migrate: cannot use PostgreSQL at ${where()}: the server at ${where().split("/")[0]} ` +
        "does not support TLS, and sslmode=require asks for it\n",
      ],
    );
    const deep = join(freshDir(), "new", "out");
    const none = await migrate("--to", deep, "--pg", pg!.url, "--pg-schema", "no_such_schema");
    assert.deepEqual(
      [none.code, none.err],
      [1, `tubeway: migrate: schema no_such_schema at ${where()} has no tubeway tables\n`],
    );
    // a failed export leaves no directory it made (a directory that was there stays)
    for (const made of [out, join(deep, "..")]) assert.equal(existsSync(made), false, made);
    const there = freshDir();
    assert.equal((await migrate("--to", there, "--pg", pg!.url, "--pg-schema", "no_such_schema")).code, 1);
    assert.equal(existsSync(there), true);
    const missing = await migrate("-b", join(dir, "nope"), "--pg", pg!.url, "--pg-schema", uniqueSchema("none"));
    assert.equal(missing.code, 10, missing.err);
    const usage = await migrate("--pg", pg!.url);
    assert.equal(usage.code, 5);
    assert.match(
      usage.err,
      /^tubeway: migrate: give -b DIR \(into the database\) or --to DIR \(out of it\)\nUse: tubeway migrate /,
    );
    const help = await migrate("--help");
    assert.equal(help.code, 0);
    assert.match(help.out, /^Use: tubeway migrate -b DIR /);
  });

  it(
    "works in the compiled executable: --merge adds to a schema with jobs; policies, keys and dead letters both ways",
    { timeout: 60_000 },
    async () => {
      const bin = [await buildBinary()];
      const dir = freshDir();
      /** A single tubeway of the binary on `dir`, these commands (or commands made of the replies so far) and their replies, stopped. */
      const session = async (cmds: [string | ((replies: string[]) => string), RegExp][]) => {
        const s = await startProcess(bin, ["-b", dir]);
        const w = await dial(s.addr);
        const replies: string[] = [];
        for (const [c, want] of cmds) {
          const cmd = typeof c === "string" ? c : c(replies);
          replies.push(await w.cmd(cmd));
          assert.match(replies.at(-1)!, want, cmd);
        }
        w.close();
        await s.stop();
        return replies;
      };
      await session([["put 3 0 20 15\r\nfrom the binary", /^INSERTED 1\r\n$/]]);
      const schema = uniqueSchema("bin");
      const r = await run(["migrate", "-b", dir, "--pg", pg!.url, "--pg-schema", schema], bin);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /^migrated 1 job \(1 ready, 0 delayed, 0 buried\)/);

      // a restart takes the next block of ids: the directory's next job cannot collide with job 1
      const replies = await session([
        ["delete 1", /^DELETED\r\n$/],
        ["set-dlq default 3 dead", /^DLQ_SET\r\n$/],
        ["put-unique k1 5 0 20 6\r\nunique", /^INSERTED \d+\r\n$/],
        // a dead letter: tube dl allows one attempt
        ["set-dlq dl 1 dead", /^DLQ_SET\r\n$/],
        ["set-backoff dl 7 0", /^BACKOFF_SET\r\n$/],
        ["use dl", /^USING dl\r\n$/],
        ["watch dl", /^WATCHING 2\r\n$/],
        ["ignore default", /^WATCHING 1\r\n$/],
        ["put 9 0 20 4\r\ndead", /^INSERTED \d+\r\n$/],
        ["reserve-with-timeout 0", /^RESERVED \d+ 4\r\ndead\r\n$/],
        [(r) => `release ${/^RESERVED (\d+)/.exec(r.at(-1)!)![1]} 9 0`, /^RELEASED\r\n$/],
      ]);
      const m = await run(["migrate", "-b", dir, "--pg", pg!.url, "--pg-schema", schema, "--merge"], bin);
      assert.equal(m.code, 0, m.err);
      const lines = m.out.split("\n");
      assert.match(lines[0]!, /^migrated 2 jobs \(1 ready, 0 delayed, 1 buried\) from /);
      assert.deepEqual(lines.slice(1), [""], "nothing dropped");
      // in the database, the key holds and the policies apply
      const unique = Number(/^INSERTED (\d+)/.exec(replies[2]!)![1]);
      const node = await startProcess(bin, ["--pg", pg!.url, "--pg-schema", schema]);
      try {
        const w = await dial(node.addr);
        w.send("put-unique k1 0 0 20 1\r\nx\r\n");
        assert.equal(await w.reply(), `EXISTS ${unique}\r\n`);
        assert.match(await w.cmd("stats-tube dl"), /\ndlq-max-attempts: 1\ndlq-tube: dead\nbackoff-base: 7\n/);
        w.close();
      } finally {
        await node.stop();
      }

      const out = join(freshDir(), "back");
      const b = await run(["migrate", "--to", out, "--pg", pg!.url, "--pg-schema", schema], bin);
      assert.equal(b.code, 0, b.err);
      assert.match(b.out, /^exported 3 jobs \(2 ready, 0 delayed, 1 buried\)/);
      assert.doesNotMatch(b.out, /dropped/);
      const s2 = await startProcess(bin, ["-b", out]);
      try {
        const t = await dial(s2.addr);
        assert.equal(await t.cmd("peek 1"), "FOUND 1 15\r\nfrom the binary\r\n");
        assert.equal(await t.cmd("peek-ready"), "FOUND 1 15\r\nfrom the binary\r\n", "pri 3 before pri 5");
        assert.ok(unique > 1, `${unique}`);
        assert.equal(await t.cmd(`peek ${unique}`), `FOUND ${unique} 6\r\nunique\r\n`);
        assert.match(await t.cmd(`stats-job ${unique}`), /\nunique-key: k1\n/);
        t.send("put-unique k1 0 0 20 1\r\nx\r\n");
        assert.equal(await t.reply(), `EXISTS ${unique}\r\n`, "the key came back with its job");
        assert.match(await t.cmd("stats-tube default"), /\ndlq-max-attempts: 3\ndlq-tube: dead\n/);
        assert.match(await t.cmd("stats-tube dl"), /\ndlq-max-attempts: 1\ndlq-tube: dead\nbackoff-base: 7\n/);
        const dead = Number(/^RESERVED (\d+)/.exec(replies[9]!)![1]);
        assert.match(
          await t.cmd(`stats-job ${dead}`),
          /\ntube: dead\nstate: buried\npri: 9\n[\s\S]*\ndlq-from-tube: dl\n/,
        );
        t.close();
      } finally {
        await s2.stop();
      }
    },
  );
});

describe("tubeway migrate's arguments", () => {
  it("reads values attached or next, TUBEWAY_PG_URL unless --pg, and refuses what is unclear", () => {
    assert.deepEqual(parseMigrateArgs(["-b/d", "--pg=postgres://h/x", "--pg-schema", "q", "--merge"], undefined), {
      kind: "in",
      dir: "/d",
      url: "postgres://h/x",
      schema: "q",
      merge: true,
    });
    assert.deepEqual(parseMigrateArgs(["--to", "/o"], "postgres://env/x"), {
      kind: "out",
      dir: "/o",
      url: "postgres://env/x",
      schema: "tubeway",
    });
    const error = (args: string[]) => {
      const r = parseMigrateArgs(args, undefined);
      return r.kind === "error" ? r.message : r.kind;
    };
    assert.equal(error(["-b", "/d", "--to", "/o"]), "give -b DIR or --to DIR, not both");
    assert.equal(error(["--to", "/o", "--merge"]), "--merge is for -b DIR only");
    assert.equal(
      error(["-b", "/d", "--pg-schema", "Bad-Name"]),
      "--pg-schema wants a lower-case SQL name (letters, digits, _), not Bad-Name",
    );
    assert.equal(error(["-b"]), "-b needs a value");
    assert.equal(error(["-b", "/d", "-x"]), "unknown flag: -x");
    assert.equal(error(["-b", "/d", "extra"]), "unexpected argument: extra");
    assert.equal(error(["-b", "/d", "-h"]), "help");
  });
});
