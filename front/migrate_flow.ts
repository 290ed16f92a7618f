// `tubeway migrate`'s part for the tubes' limits and the schedules (migrate.ts moves the
// jobs and policies): into the schema's tubes and schedules tables (migration 4), and
// back into a log directory through the binlog writer. A schedule keeps its last run
// and the due times done, so a move never repeats a run; the runs that fall due while
// nothing serves it put one job when something does again, as after a restart.
import type { Sql } from "../core/pg/sql.ts";
import type { ScheduleRecord, TubeLimits, Wal } from "../core/memory/wal.ts";
import { parseSpec } from "../core/schedule_spec.ts";

/** The first schema version with limits and schedules. */
const FLOW_VERSION = 4;

export interface Flow {
  limits: ReadonlyMap<string, TubeLimits>;
  schedules: ReadonlyMap<string, ScheduleRecord>;
}

/** Limits and schedules into the schema (with --merge, a directory's replace the schema's of a tube or name). */
export async function insertFlow(tx: Sql, schema: string, f: Flow): Promise<void> {
  for (const [tube, l] of f.limits) {
    await tx.query(
      `insert into ${schema}.tubes as x (name, seq, max_reserved, rate_count, rate_window_ms)
        values ($1, nextval('${schema}.tube_seq'), $2::int8, $3::int8, $4::int8)
      on conflict (name) do update set max_reserved = excluded.max_reserved, rate_count = excluded.rate_count,
        rate_window_ms = excluded.rate_window_ms, seq = coalesce(x.seq, excluded.seq)`,
      [tube, l.concurrency, l.rateCount, l.rateWindowSec * 1000],
    );
  }
  for (const s of f.schedules.values()) {
    const next = parseSpec(s.spec)?.next(s.afterSec);
    await tx.query(
      `insert into ${schema}.schedules as x (name, tube, spec, pri, ttr_ms, body, after_sec, last_due, next_due)
        values ($1, $2, $3, $4::int8, $5::int8, $6::bytea, $7::int8, $8::int8, $9::int8)
      on conflict (name) do update set tube = excluded.tube, spec = excluded.spec, pri = excluded.pri,
        ttr_ms = excluded.ttr_ms, body = excluded.body, after_sec = excluded.after_sec,
        last_due = excluded.last_due, next_due = excluded.next_due`,
      [
        s.name,
        s.tube,
        s.spec,
        s.pri,
        s.ttrSec * 1000,
        s.body,
        s.afterSec,
        s.lastDueSec,
        next === undefined || next === Infinity ? null : next,
      ],
    );
  }
}

/** The schema's limits and schedules, in the snapshot's transaction (none before migration 4). */
export async function readFlow(tx: Sql, schema: string, version: number): Promise<Flow> {
  const limits = new Map<string, TubeLimits>();
  const schedules = new Map<string, ScheduleRecord>();
  if (version < FLOW_VERSION) return { limits, schedules };
  const ls = await tx.query(
    `select name, max_reserved::float8 as c, rate_count::float8 as n, rate_window_ms::float8 as w from ${schema}.tubes
      where max_reserved > 0 or rate_count > 0 order by seq`,
  );
  for (const r of ls) {
    limits.set(String(r.name), { concurrency: Number(r.c), rateCount: Number(r.n), rateWindowSec: Number(r.w) / 1000 });
  }
  const ss = await tx.query(
    `select name, tube, spec, pri::float8 as pri, ttr_ms::float8 as ttr_ms, body, after_sec::float8 as after_sec,
        last_due::float8 as last_due
      from ${schema}.schedules order by name`,
  );
  for (const r of ss) {
    schedules.set(String(r.name), {
      name: String(r.name),
      tube: String(r.tube),
      spec: String(r.spec),
      pri: Number(r.pri),
      ttrSec: Number(r.ttr_ms) / 1000,
      afterSec: Number(r.after_sec),
      lastDueSec: Number(r.last_due),
      body: r.body as Uint8Array,
    });
  }
  return { limits, schedules };
}

/** Limits and schedules into a log being written; a string says what could not be written. */
export function writeFlow(wal: Wal, f: Flow): string | undefined {
  for (const [tube, l] of f.limits) if (!wal.limits(tube, l)) return `the limits of tube ${tube}`;
  for (const s of f.schedules.values()) if (!wal.schedule(s)) return `the schedule ${s.name}`;
  return undefined;
}
