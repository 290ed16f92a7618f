// The scale rows: memory per ready job at 1M jobs, memory per idle connection at 10k,
// and reserve+delete with 10k other tubes each watched by a blocked connection.
import { check, prefill, query, runLoad, yamlNum } from "./gen.ts";
import { HOST, sleep } from "./host.ts";
import { baseRow, fromLoad, loadSpec, type Row, type Workload } from "./rows.ts";
import type { RunSpec } from "./loadgen_run.ts";
import { Server } from "./server.ts";
import { rdWarmup } from "./workloads_load.ts";

/** How many jobs, connections and tubes the scale rows use. */
function scale(quick: boolean) {
  return { jobs: quick ? 3000 : 1_000_000, conns: quick ? 200 : 10_000, tubes: quick ? 200 : 10_000 };
}

export function scaleWorkloads(quick: boolean): Workload[] {
  const SCALE = scale(quick);
  const w: Workload[] = [
    {
      row: "mem-1m",
      title: `${SCALE.jobs.toLocaleString("en")} ready 100-byte jobs: put, memory, drain`,
      group: "scale",
      run: async (ctx) => {
        const n = SCALE.jobs;
        await sleep(quick ? 10 : 300);
        const before = ctx.server.mem().rss;
        const put = fromLoad(
          ctx,
          { ...baseRow(ctx, w[0]!), row: "mem-1m put" },
          await runLoad(
            ctx.pool,
            ctx.server,
            loadSpec(ctx, {
              kind: "put",
              clients: 50,
              depth: 16,
              body: 100,
              tube: "mem",
              budget: n,
              duration: 0,
            }),
          ),
          "puts/s",
        );
        put.notes.unshift(`${n.toLocaleString("en")} puts in ${((n / put.value!) || 0).toFixed(2)} s`);
        await sleep(quick ? 10 : 500);
        const after = ctx.server.mem().rss;
        const stats = await query(ctx.pool, ctx.server.port, ["stats-tube mem"]);
        const ready = yamlNum(stats[0] ?? "", "current-jobs-ready");
        const mem: Row = {
          ...baseRow(ctx, w[0]!),
          row: "mem-1m",
          value: (after - before) / n,
          unit: "B/job",
          better: "lower",
          rssMiB: after / 1048576,
          notes: [`RSS ${(before / 1048576).toFixed(1)} → ${(after / 1048576).toFixed(1)} MiB`],
        };
        if (ready !== n) {
          mem.status = "FAILED";
          mem.notes.push(`stats-tube says ${ready} ready jobs, expected ${n}`);
        }
        if (put.status !== "ok") mem.status = "FAILED";
        const drain = fromLoad(
          ctx,
          { ...baseRow(ctx, w[0]!), row: "mem-1m drain" },
          await runLoad(
            ctx.pool,
            ctx.server,
            loadSpec(ctx, { kind: "rd", clients: 50, depth: 16, body: 100, tube: "mem", budget: n, duration: 0 }),
          ),
          "jobs/s",
        );
        drain.notes.unshift(`${n.toLocaleString("en")} reserve+delete in ${((n / drain.value!) || 0).toFixed(2)} s`);
        return [put, mem, drain];
      },
    },
    {
      row: "conns-10k",
      title: `${SCALE.conns.toLocaleString("en")} idle connections held`,
      group: "scale",
      run: async (ctx) => {
        const row: Row = { ...baseRow(ctx, w[1]!), better: "lower", unit: "B/conn" };
        const n = SCALE.conns;
        await sleep(quick ? 10 : 300);
        const before = ctx.server.mem().rss;
        const cpu0 = ctx.server.cpuMs();
        const id = ctx.pool.nextId();
        const tag = `conns${id}`;
        const held = check(
          await ctx.pool.first.request(
            { op: "hold", id, host: HOST, port: ctx.server.port, conns: n, tag, setup: [] },
            "held",
          ),
        );
        await sleep(quick ? 10 : 500);
        const after = ctx.server.mem().rss;
        const stats = await query(ctx.pool, ctx.server.port, ["stats"]);
        const cur = yamlNum(stats[0] ?? "", "current-connections");
        const rel = check(await ctx.pool.first.request({ op: "release", id: ctx.pool.nextId(), tag }, "released"));
        row.value = (after - before) / n;
        row.rssMiB = after / 1048576;
        row.srvCpuMs = ctx.server.cpuMs() - cpu0;
        row.notes.push(
          `${n} connected in ${(held.ms / 1000).toFixed(2)} s; RSS ${(before / 1048576).toFixed(1)} → ${
            (after / 1048576).toFixed(1)
          } MiB`,
        );
        if (!(cur >= n + 1)) {
          row.status = "FAILED";
          row.notes.push(`stats says current-connections ${cur}, expected ≥ ${n + 1}`);
        }
        if (rel.errors.length) {
          row.status = "FAILED";
          row.notes.push(...rel.errors);
        }
        return [row];
      },
    },
    {
      row: "tubes-10k",
      title: `reserve+delete with ${
        SCALE.tubes.toLocaleString("en")
      } other tubes watched (idle conns blocked in reserve) vs with 1 tube`,
      group: "scale",
      run: async (ctx) => {
        const n = SCALE.tubes;
        const d = quick ? ctx.cfg.duration : Math.max(1, ctx.cfg.duration / 2);
        const jobs = quick ? 4000 : Math.min(1_000_000, Math.ceil((rdWarmup(ctx) + d) * 150_000));
        // fill first: with many tubes a put may cost more (it does on beanstalkd)
        await prefill(ctx.pool, ctx.server.port, "td", jobs, 100);
        await sleep(quick ? 10 : 300);
        const before = ctx.server.mem().rss;
        const id = ctx.pool.nextId();
        const tag = `tubes${id}`;
        const held = check(
          await ctx.pool.first.request(
            {
              op: "hold",
              id,
              host: HOST,
              port: ctx.server.port,
              conns: n,
              tag,
              setup: [["watch t{i}", "WATCHING 2"], ["ignore default", "WATCHING 1"]],
              tail: "reserve",
            },
            "held",
          ),
        );
        await sleep(quick ? 10 : 500);
        const after = ctx.server.mem().rss;
        const stats = await query(ctx.pool, ctx.server.port, ["stats"]);
        const tubes = yamlNum(stats[0] ?? "", "current-tubes");
        const waiting = yamlNum(stats[0] ?? "", "current-waiting");
        const s = loadSpec(ctx, {
          kind: "rd",
          clients: 50,
          depth: 16,
          body: 100,
          tube: "td",
          budget: jobs,
          duration: d,
          warmup: rdWarmup(ctx),
        });
        const many = fromLoad(
          ctx,
          { ...baseRow(ctx, w[2]!), row: `tubes-10k @${n}` },
          await runLoad(ctx.pool, ctx.server, s),
          "jobs/s",
        );
        const rel = check(await ctx.pool.first.request({ op: "release", id: ctx.pool.nextId(), tag }, "released"));
        many.notes.push(
          `${n} watchers set up in ${(held.ms / 1000).toFixed(2)} s, ${
            ((after - before) / n).toFixed(0)
          } B RSS per tube+watcher`,
        );
        if (!(tubes >= n + 1) || !(waiting >= n)) {
          many.status = "FAILED";
          many.notes.push(`stats says current-tubes ${tubes}, current-waiting ${waiting}; expected ≥ ${n + 1}, ≥ ${n}`);
        }
        if (rel.errors.length) {
          many.status = "FAILED";
          many.notes.push(...rel.errors);
        }
        // does the server notice that the blocked watchers went away?
        await sleep(quick ? 50 : 1000);
        const left = yamlNum((await query(ctx.pool, ctx.server.port, ["stats"]))[0] ?? "", "current-connections");
        if (left > 2) {
          many.notes.push(`${left - 1} connections still counted ${quick ? 0.05 : 1} s after the ${n} watchers closed`);
        }
        // the 1-tube run on a fresh server, filled the same way
        const fresh = new Server(ctx.target, ctx.cfg.tools);
        let one: Row;
        try {
          await fresh.start();
          await prefill(ctx.pool, fresh.port, "td", jobs, 100);
          one = fromLoad(
            ctx,
            { ...baseRow(ctx, w[2]!), row: "tubes-10k @1" },
            await runLoad(ctx.pool, fresh, { ...s, port: fresh.port }),
            "jobs/s",
          );
          if (fresh.exited) {
            one.status = "FAILED";
            one.notes.push(`server ${fresh.exited}`);
          }
        } finally {
          await fresh.stop();
        }
        if (one.status === "ok" && many.status === "ok") {
          const k = many.value! / one.value!;
          many.checks = `${k.toFixed(2)}× of the 1-tube rate: ${k >= 0.8 ? "pass" : "MISS"} (≥0.8)`;
        }
        return [many, one];
      },
    },
    besideLimit(quick),
  ];
  return w;
}

/**
 * e2e-50 (25 producers → 25 consumers blocked in reserve) with every client also
 * watching a second tube: held at its concurrency limit with jobs ready in it (@limit),
 * or empty with no limit (@none, on a fresh server). A reserve held back by a limit must
 * cost the other tubes nothing: @limit within 5% of @none. tubeway only.
 */
function besideLimit(quick: boolean): Workload {
  const held = quick ? 50 : 1000;
  const w: Workload = {
    row: "beside-limit",
    title: `e2e-50 with the consumers also watching a tube held at its concurrency limit (${held} jobs held back)` +
      " vs the same tube empty, no limit",
    group: "scale",
    run: async (ctx) => {
      const e2e = (port: number): RunSpec => ({
        ...loadSpec(ctx, { kind: "e2e", clients: 50, producers: 25, window: 4, depth: 1, body: 100, tube: "bl" }),
        port,
        alsoWatch: "held",
      });
      const set = await query(ctx.pool, ctx.server.port, ["set-concurrency held 1"]);
      if (!(set[0] ?? "").startsWith("CONCURRENCY_SET")) {
        return [{ ...baseRow(ctx, w), status: "skipped", notes: ["no set-concurrency on this target"] }];
      }
      await prefill(ctx.pool, ctx.server.port, "held", held, 100);
      const id = ctx.pool.nextId();
      const tag = `holder${id}`;
      check(
        await ctx.pool.first.request(
          {
            op: "hold",
            id,
            host: HOST,
            port: ctx.server.port,
            conns: 1,
            tag,
            setup: [["watch held", "WATCHING 2"]],
            tail: "reserve",
          },
          "held",
        ),
      );
      let reserved = 0;
      for (let i = 0; i < 100 && reserved !== 1; i++) {
        await sleep(10);
        reserved = yamlNum(
          (await query(ctx.pool, ctx.server.port, ["stats-tube held"]))[0] ?? "",
          "current-jobs-reserved",
        );
      }
      const limited = fromLoad(
        ctx,
        { ...baseRow(ctx, w), row: "beside-limit @limit" },
        await runLoad(ctx.pool, ctx.server, e2e(ctx.server.port)),
        "jobs/s",
      );
      const st = (await query(ctx.pool, ctx.server.port, ["stats-tube held"]))[0] ?? "";
      if (reserved !== 1 || yamlNum(st, "current-jobs-ready") !== held - 1) {
        limited.status = "FAILED";
        limited.notes.push(
          `the held tube was not held: ${reserved} reserved, ${yamlNum(st, "current-jobs-ready")} ready`,
        );
      }
      check(await ctx.pool.first.request({ op: "release", id: ctx.pool.nextId(), tag }, "released"));
      const fresh = new Server(ctx.target, ctx.cfg.tools);
      let none: Row;
      try {
        await fresh.start();
        none = fromLoad(
          ctx,
          { ...baseRow(ctx, w), row: "beside-limit @none" },
          await runLoad(ctx.pool, fresh, e2e(fresh.port)),
          "jobs/s",
        );
      } finally {
        await fresh.stop();
      }
      if (limited.status === "ok" && none.status === "ok") {
        const k = limited.value! / none.value!;
        const cpu = limited.usPerOp! / none.usPerOp!;
        limited.checks = `${k.toFixed(3)}× @none's jobs/s, ${cpu.toFixed(3)}× its µs/op: ${
          k >= 0.95 ? "pass" : "MISS"
        } (≥0.95)`;
      }
      return [limited, none];
    },
  };
  return w;
}
