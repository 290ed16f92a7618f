// tubeway benchmark: the same workloads against beanstalkd 1.12, the fixed-answer
// "ceiling" server of each runtime and tubeway on Deno and on Bun, without the log
// and in beanstalkd's two log modes, on loopback, printed as one table with ratios.
//
//   deno run -A bench/main.ts [options]        (deno task bench)
//   bun run bench/main.ts [options]
//
// Options:
//   --quick                smoke run with tiny counts, a few seconds in all (also
//                          BENCH_QUICK=1); one server per target. Its figures mean
//                          nothing; it only proves the bench still runs.
//   --only NAME[,NAME]     run only these rows: put-1, put-50, put-50x16,
//                          put-50x16-16k, rd-50x16, e2e-50, mix-50, mem-1m,
//                          conns-10k, tubes-10k, beside-limit, wake-1,
//                          put-50-sustained, e2e-50-sustained; "load" = the
//                          first 7, "scale" = mem-1m, conns-10k, tubes-10k,
//                          beside-limit, "pg" = the last 3;
//                          "put*" = every name starting with "put"
//   --targets A,B,...      default: beanstalkd, fixed-deno, deno, fixed-bun, bun,
//                          then NAME+b and NAME+bf0 for beanstalkd, deno and bun:
//                            fixed-deno, fixed-bun  the fixed-answer server of that
//                                         runtime (bench/fixed_server.ts): the
//                                         ceiling tubeway is printed against (×ceil);
//                                         put rows only ("fixed" = fixed-bun)
//                            NAME+b       `-b <fresh dir>` (compared with beanstalkd+b;
//                                         rows put-50, put-50x16)
//                            NAME+bf0     `-b <fresh dir> -f 0` (fsync before every ack;
//                                         compared with beanstalkd+bf0; rows put-1,
//                                         put-50, put-50x16, e2e-50)
//                            NAME+pg      `--pg $BENCH_PG_URL --pg-schema <fresh>`: deno
//                                         or bun over PostgreSQL (compared with
//                                         beanstalkd+bf0; rows put-1, put-50,
//                                         put-50x16, e2e-50, wake-1 and the
//                                         sustained rows); not in the default set
//                            NAME+pg3     three such nodes on one schema, the
//                                         connections spread over them (e2e and
//                                         wake-1: producers on the first node, the
//                                         workers on the others); rows put-50,
//                                         e2e-50, wake-1 and the sustained rows
//                            pgbench[:C[:B]]  what PostgreSQL itself allows: pgbench
//                                         (Debian's postgresql package) running the
//                                         engine's batched statements, C clients (6),
//                                         B jobs per statement (25), on a schema a
//                                         node made (bench/pgbench.ts); rows put-50,
//                                         e2e-50 and the sustained rows
//                            NAME=CMD...  any server command; -l/-p are appended
//                            NAME@PORT/PID  a server already listening on
//                                         127.0.0.1:PORT, process PID (left running;
//                                         bench/agree.ts uses it)
//   --server-flags T=FLAGS extra flags for target T (repeatable), e.g.
//                          --server-flags 'deno=-z 65536'
//   --duration SECONDS     seconds of load per workload (default 4)
//   --warmup SECONDS       unrecorded load before each timed window (default 2, at
//                          most 0.5 for reserve/delete; lets the Deno/Bun JIT settle:
//                          Bun's compiler threads share the server's core)
//   --seconds SECONDS      run the sustained rows (put-50-sustained,
//                          e2e-50-sustained: one server for SECONDS, a row per
//                          window with the jobs table's live and dead tuples and
//                          vacuums, and the load average); not run without it
//   --window SECONDS       the sustained rows' window (default 30)
//   --json FILE            also write the results as JSON
//   --client native|bun|deno  the load generator: native = bench/native/*.c, built
//                          with cc at the start (the default); bun or deno =
//                          bench/loadgen.ts on that runtime (the fallback when no C
//                          compiler is found; BENCH_CC="" forces it)
//   --procs N              load generator processes sharing the generator CPU(s)
//                          (every CPU but 0; default: one per such CPU, at most 4)
//   --no-pin               do not pin with taskset
//   --nice N               run servers and generators at nice N (e.g. -10 as root,
//                          so other work on the machine disturbs less; default 0)
// Environment: BENCH_PG_URL=postgres://... or auto (a throwaway cluster for the run,
// started as the tests start theirs: Debian's postgresql package) (the database of the +pg targets and
// pgbench; each server gets a fresh schema, dropped when it stops; psql and pgbench
// from Debian's postgresql package read the tables' figures and run pgbench),
// BENCH_QUICK=1 (= --quick), BENCH_BEANSTALKD=PATH (another binary;
// empty = run as if not installed), BENCH_CC=CMD (the C compiler; empty = none),
// BENCH_TRANSPORT=node (the JS generator on node:net instead of Bun's sockets).
//
// How it measures: row by row, each target in turn is started on 127.0.0.1 (pinned
// to CPU 0 with taskset when present, fd limit raised to 65536): every row gets a
// fresh server (except --quick), and the servers a ratio compares run back to back.
// The load generator processes (bench/native/ or bench/loadgen.ts, pinned to the
// other CPUs) share the connections, run closed loops and check every reply; an
// error, lost connection, stall or timeout marks the row FAILED and it gets no
// ratio. Server CPU time and RSS come from /proc/PID/stat and /proc/PID/status over
// the measured window; core0/1 is how busy each core was (from /proc/stat: loopback
// TCP work is charged to no process). The generators' CPU is printed; when they
// used ≥90% of their core(s), or that core was ≥95% busy, the row says SAT and its
// figure gets a "≥": it is then client-bound. bench/README.md says how the figures
// were checked against an independent generator written in C.
//
// Workload details: e2e producers keep at most 4 undelivered jobs each (latency =
// put written → RESERVED read, stamped in the body; no backlog can build up); mix
// pipelines the commands that do not depend on a reply; rd drains a tube pre-filled
// with 150k jobs per second of run (a faster server just empties it sooner);
// tubes-10k compares reserve/delete with 10,000 other tubes each watched by an idle
// connection blocked in reserve against a fresh server with no other tube;
// beside-limit compares e2e-50 whose clients also watch a tube held at its concurrency
// limit (jobs ready in it) with the same run beside that tube empty and unlimited
// (tubeway only: beanstalkd has no limits).
//
// Exit status: 0 when every row that ran succeeded, 1 when any FAILED, 2 on bad usage.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { genCpus, GenError, type GenProgram, Pool } from "./gen.ts";
import { cpuBusy, cpuTimes, findTools, pinSelf, proc, sleep, type Tools, version } from "./host.ts";
import { buildNative } from "./native.ts";
import { parseArgs } from "./options.ts";
import { judge, render, si } from "./report.ts";
import { type Row, RULES, type RunCfg, type Workload } from "./rows.ts";
import { Server } from "./server.ts";
import { makeTarget, PG_URL_ENV, type Target } from "./targets.ts";
import { LOAD_WORKLOADS } from "./workloads_load.ts";
import { scaleWorkloads } from "./workloads_scale.ts";
import { pgWorkloads } from "./workloads_pg.ts";
import { pgbenchRows, pgbenchTarget } from "./pgbench.ts";

function usage(msg: string): never {
  console.error(`bench: ${msg}\nsee the comment at the top of bench/main.ts for usage`);
  proc.exit(2);
  throw new Error(msg);
}

function versions(t: Tools) {
  return {
    beanstalkd: version(t.beanstalkd, ["-v"]).replace(/^beanstalkd /, ""),
    deno: version(t.deno, ["--version"]).replace(/^deno /, ""),
    bun: version(t.bun, ["--version"]),
  };
}

/**
 * Run one workload on one target, on a fresh server (with --quick, on the target's
 * shared server, started on first use and kept in `shared`).
 */
async function runOne(cfg: RunCfg, pool: Pool, target: Target, w: Workload, rows: Row[], shared: Map<Target, Server>) {
  let server: Server | undefined;
  const rowStart = performance.now();
  try {
    if (target.pgbench) {
      rows.push(
        ...(await pgbenchRows(cfg, target, w)),
      );
    } else if (cfg.quick) {
      server = shared.get(target) ?? new Server(target, cfg.tools);
      shared.set(target, server);
      if (!server.started) await server.start();
    } else {
      server = new Server(target, cfg.tools);
      await server.start();
    }
    if (server) {
      const got = await w.run({ cfg, pool, target, server });
      const exited = [server, ...server.others].find((s) => s.exited)?.exited;
      if (exited) {
        for (const r of got) {
          r.status = "FAILED";
          r.notes.push(`server ${exited}`);
        }
      }
      rows.push(...got);
    }
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const row: Row = { row: w.row, title: w.title, target: target.name, status: "FAILED", notes: [msg.slice(0, 400)] };
    if (server?.exited) row.notes.push(`server ${server.exited}: ${server.log.trim().slice(-300)}`);
    rows.push(row);
    if (!(e instanceof GenError) || pool.gens.some((g) => g.dead)) await pool.heal();
  } finally {
    if (!cfg.quick) await server?.stop();
  }
  const last = rows[rows.length - 1];
  proc.stderr.write(
    `  ${target.name.padEnd(14)} ${w.row.padEnd(14)} ${last?.status ?? ""} ${
      last?.value !== undefined ? si(last.value) + " " + (last.unit ?? "") : ""
    } (${((performance.now() - rowStart) / 1000).toFixed(1)} s)\n`,
  );
}

/**
 * The native generator unless --client names a runtime; the JS one (bench/loadgen.ts
 * on Bun, else Deno) when it cannot be built, with the note that says so.
 */
function pickGenerator(client: string | undefined, tools: Tools): { program: GenProgram; fallback?: string } {
  if (client !== undefined && !["native", "bun", "deno"].includes(client)) {
    usage(`--client ${client}: native, bun or deno`);
  }
  if (client === undefined || client === "native") {
    const built = buildNative();
    if ("path" in built) return { program: { kind: "native", path: built.path } };
    if (client === "native") usage(`--client native: ${built.missing}`);
    const rt = tools.bun ? "bun" : tools.deno ? "deno" : usage("no C compiler and no runtime for the load generator");
    return {
      program: { kind: rt },
      fallback: `load generator: the JS fallback on ${rt}, no native one: ${built.missing}; ` +
        "it saturates its core on the fastest rows (SAT)",
    };
  }
  if (!tools[client as "bun" | "deno"]) usage(`--client ${client}: not installed`);
  return { program: { kind: client as "bun" | "deno" } };
}

/**
 * BENCH_PG_URL=auto: a throwaway PostgreSQL cluster for this run (scripts/postgres.ts, as the tests use:
 * initdb in a temporary directory, a free port, fsync and synchronous_commit on; as
 * root it runs as the `postgres` user), stopped and removed when the run ends.
 */
async function throwawayPostgres(): Promise<void> {
  const { startPostgres } = await import("../scripts/postgres.ts");
  const pg = await startPostgres();
  proc.env[PG_URL_ENV] = pg.url;
  proc.on("exit", () => pg.stop());
  for (const sig of ["SIGINT", "SIGTERM"]) {
    proc.on(sig, () => {
      pg.stop();
      proc.exit(130);
    });
  }
  console.log(`PostgreSQL: a throwaway cluster at ${pg.url} (BENCH_PG_URL=auto)`);
}

async function main() {
  const parsed = parseArgs(proc.argv.slice(2), proc.env, findTools(false, 0).ncpu);
  if (typeof parsed === "string") usage(parsed);
  const opts = parsed;
  if (opts.help) {
    console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\nimport ")[0]);
    proc.exit(0);
  }
  const tools = findTools(opts.pin, opts.nice);
  if (proc.env[PG_URL_ENV] === "auto") await throwawayPostgres();
  const sustain = opts.seconds > 0 ? { seconds: opts.seconds, window: Math.min(opts.window, opts.seconds) } : undefined;
  const cfg: RunCfg = { quick: opts.quick, duration: opts.duration, warmup: opts.warmup, tools, sustain };
  const targets = opts.targets.map((s) => {
    const t = pgbenchTarget(s) ?? makeTarget(s, tools, opts.serverFlags);
    return typeof t === "string" ? usage(t) : t;
  });
  const all = [...LOAD_WORKLOADS, ...pgWorkloads(sustain), ...scaleWorkloads(opts.quick)];
  const wanted = (row: string, group: string) =>
    opts.only.length === 0 ||
    opts.only.some((o) => o === group || row === o || (o.endsWith("*") && row.startsWith(o.slice(0, -1))));
  const workloads = all.filter((w) => wanted(w.row, w.group));
  if (!workloads.length) usage(`--only ${opts.only.join(",")} matches no row`);
  const { program, fallback } = pickGenerator(opts.client, tools);
  const clientRt = program.kind;
  // the coordinator is idle while measuring: keep it off the server's core
  pinSelf(tools, genCpus(tools));

  const v = versions(tools);
  console.log(`tubeway bench — ${new Date().toISOString()} — ${tools.ncpu} CPUs — coordinator on ${tools.runtime}`);
  console.log(
    `servers: beanstalkd ${v.beanstalkd}, deno ${v.deno}, bun ${v.bun}` +
      ` | load generator: ${opts.procs}× ${
        program.kind === "native" ? "native (bench/native, C)" : fallback ? `${clientRt} (JS fallback)` : clientRt
      }` +
      (tools.pin ? ` | server on CPU 0, generators on CPU ${genCpus(tools)}` : " (not pinned: no taskset or 1 CPU)") +
      ` | ${opts.duration} s per workload after ${opts.warmup} s warm-up${opts.quick ? " (quick)" : ""}`,
  );
  const notes: string[] = [];
  if (!tools.beanstalkd) {
    notes.push("beanstalkd is not installed (apt-get install -y beanstalkd): running without ratios");
  }
  for (const t of targets) if (t.missing) notes.push(`${t.name}: skipped, ${t.missing}`);
  if (fallback) notes.push(fallback);

  // other load on the machine makes every figure noisy: say so
  const idle0 = cpuTimes();
  await sleep(opts.quick ? 100 : 1000);
  const quiet = cpuBusy(idle0, cpuTimes());
  if (opts.quick) notes.push("--quick: tiny counts and windows; the figures mean nothing");
  else if (quiet.some((b) => b > 0.1)) {
    notes.push(
      `machine not idle before the run (CPU busy ${quiet.map((b) => (100 * b).toFixed(0) + "%").join("/")}): ` +
        "other processes compete with the measurement",
    );
  }

  const pool = new Pool(tools, program, opts.procs);
  const hellos = await Promise.all(
    pool.gens.map((g) =>
      Promise.race([g.hello, sleep(30000).then(() => ({ ev: "error", message: "load generator did not start" }))])
    ),
  );
  for (const h of hellos) if (h.ev !== "hello") usage(`load generator failed: ${"message" in h ? h.message : h.ev}`);

  const rows: Row[] = [];
  const t0 = performance.now();
  // row by row, every target back to back: the ratios compare figures taken minutes
  // apart at most, not a whole run apart (load from elsewhere drifts)
  const shared = new Map<Target, Server>();
  for (const w of workloads) {
    for (const t of targets) {
      // the rows of the PostgreSQL engine run on the targets that list them, or when named
      const named = w.group !== "pg" || opts.only.includes(w.row);
      if (!t.missing && (t.rows ? t.rows.includes(w.row) : named)) await runOne(cfg, pool, t, w, rows, shared);
    }
  }
  for (const s of shared.values()) await s.stop();
  pool.close();

  judge(rows, targets);
  console.log(render(rows, notes));
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  if (opts.json) {
    const json = {
      date: new Date().toISOString(),
      cpus: tools.ncpu,
      pinned: tools.pin,
      duration: opts.duration,
      quick: opts.quick,
      client: clientRt,
      procs: opts.procs,
      versions: v,
      rules: RULES,
      rows,
      notes,
    };
    writeFileSync(opts.json, JSON.stringify(json, null, 2) + "\n");
  }
  proc.exit(rows.some((r) => r.status === "FAILED") ? 1 : 0);
}

await main();
