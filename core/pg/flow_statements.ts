// The SQL of flow control and recurring jobs on the PostgreSQL engine (migration 4,
// schema.ts): the claim of a watch set that has a tube with limits, the limits commands,
// and the schedules. The stock claim (statements.ts) passes over tubes with limits in the
// same lookup that passes over paused ones; a node sends the watch sets that have one
// here (flow.ts knows which tubes have limits).
import { EXT_SLOT, READY, RESERVED } from "./schema.ts";

const MS = "interval '1 millisecond'";
/** Milliseconds from now() to a timestamptz expression (negative when past), as float8. */
const msUntil = (t: string) => `(extract(epoch from (${t}) - now()) * 1000)::float8`;
/** A tube row with limits. */
const LIMITED = "(p.max_reserved > 0 or p.rate_count > 0)";

/**
 * reserve-job $3 for node $1 connection $2: any job not reserved, in any tube; counted
 * under its tube's limits when it has some (it takes the job whatever they say, as
 * whatever a pause says). statements.ts's reserveJob.
 */
export function reserveJobCounted(S: string): string {
  return `with l as (select p.name, p.rate_count, p.rate_window_ms, p.rate_times from ${S}.tubes p
      where p.name = (select tube from ${S}.jobs where id = $3 and state <> ${RESERVED}) and ${LIMITED} for update),
    z as (select l.name, coalesce((select array_agg(t.at order by t.at) from (
          select at from unnest(l.rate_times || clock_timestamp()) as a(at)
          where l.rate_count > 0 and at > clock_timestamp() - l.rate_window_ms * ${MS}
          order by at desc limit l.rate_count) as t), '{}') as times
      from l),
    counted as (update ${S}.tubes p set reserved = p.reserved + 1, rate_times = z.times,
        rate_free_at = case when p.rate_count > 0 and cardinality(z.times) >= p.rate_count
          then z.times[1] + p.rate_window_ms * ${MS} end
      from z where p.name = z.name)
    update ${S}.jobs j set state = ${RESERVED}, node = $1, conn = $2, deadline = now() + j.ttr_ms * ${MS},
      reserves = j.reserves + 1, buried_seq = null, limited = case when exists (select 1 from l) then true end
    where j.id = $3 and j.state <> ${RESERVED} returning j.id::float8 as id, j.body`;
}

export function flowStatements(S: string, dueMs: string) {
  return {
    /**
     * As statements.ts's claims ($1 node, $2 connections, $3 their watched tubes, $4 how
     * many), for a watch set with tubes that have limits. Their rows are locked, in name
     * order, before anything is counted: the claims of two nodes on one such tube run one
     * after the other, and the second sees the first's reservations (FOR UPDATE reads the
     * newest row). A tube with limits gives at most the room they leave: its concurrency
     * less what is reserved under it, its rate less its reservations within the window
     * (the database's clock as it runs, clock_timestamp(): a claim that waited for the lock
     * counts from when it took it). What it takes is counted and marked `limited`.
     */
    claims: `with w as (
        select tube from unnest($3::text[]) as u(tube)
        where not exists (select 1 from ${S}.tubes p where p.name = u.tube and p.pause_until > now())),
      l as (select p.name, p.max_reserved, p.reserved, p.rate_count, p.rate_window_ms, p.rate_times
        from ${S}.tubes p where p.name in (select tube from w) and ${LIMITED} order by p.name for update),
      r as (select l.name, least(
          case when l.max_reserved > 0 then greatest(0, l.max_reserved - l.reserved) else $4::int8 end,
          case when l.rate_count > 0 then greatest(0, l.rate_count - (select count(*) from unnest(l.rate_times) as t(at)
            where t.at > clock_timestamp() - l.rate_window_ms * ${MS})) else $4::int8 end) as room
        from l),
      h as (select x.id, x.pri, w.tube, r.name is not null as limited from w left join r on r.name = w.tube
        cross join lateral (select id, pri from ${S}.jobs where state = ${READY} and tube = w.tube
          order by pri, id limit least($4::int8, coalesce(r.room, $4::int8)) for update skip locked) as x),
      c as (select id, tube, limited, row_number() over (order by pri, id) as rn
        from (select id, pri, tube, limited from h order by pri, id limit $4::int8) as b),
      u as (update ${S}.jobs j set state = ${RESERVED}, node = $1, conn = ($2::int8[])[c.rn::int4],
          deadline = now() + j.ttr_ms * ${MS}, reserves = j.reserves + 1, limited = case when c.limited then true end
        from c where j.id = c.id returning j.id, j.body, j.conn, j.tube, j.limited),
      n as (select tube, count(*) as k from u where limited group by tube),
      z as (select l.name, coalesce((select array_agg(t.at order by t.at) from (
            select at from unnest(l.rate_times || array_fill(clock_timestamp(), array[n.k::int4])) as a(at)
            where l.rate_count > 0 and at > clock_timestamp() - l.rate_window_ms * ${MS}
            order by at desc limit l.rate_count) as t), '{}') as times
        from n join l on l.name = n.tube),
      counted as (update ${S}.tubes p set reserved = p.reserved + n.k, rate_times = z.times,
          rate_free_at = case when p.rate_count > 0 and cardinality(z.times) >= p.rate_count
            then z.times[1] + p.rate_window_ms * ${MS} end
        from n join z on z.name = n.tube where p.name = n.tube),
      s as (select conn, ${msUntil("min(deadline)")} as soon_ms from ${S}.jobs
        where state = ${RESERVED} and node = $1 and conn = any($2::int8[]) group by conn)
      select k.conn::float8 as conn, u.id::float8 as id, u.body, s.soon_ms, ${dueMs} as due_ms
      from unnest($2::int8[]) as k(conn) left join u on u.conn = k.conn left join s on s.conn = k.conn`,

    /**
     * A tube's limits from now on ($1 tube; $2 concurrency, $3 rate count, $4 window ms,
     * each null: as it was; all zero: none). A tube that takes limits counts the
     * reservations it has now and marks them (one that another transaction's stock claim
     * makes meanwhile is not counted, and ends uncounted); one that had limits keeps its
     * count. Row: whether the tube has limits now, and its jobs.
     */
    setLimits: `with o as (select max_reserved, rate_count, rate_window_ms from ${S}.tubes where name = $1 for update),
      e as (select coalesce($2::int8, (select max_reserved from o), 0) as mr,
          coalesce($3::int8, (select rate_count from o), 0) as rc,
          coalesce($4::int8, (select rate_window_ms from o), 0) as rw,
          coalesce((select max_reserved > 0 or rate_count > 0 from o), false) as had),
      m as (update ${S}.jobs set limited = true
        where state = ${RESERVED} and tube = $1 and limited is not true
          and ((select mr from e) > 0 or (select rc from e) > 0) and not (select had from e)
        returning 1),
      u as (insert into ${S}.tubes as x (name, seq, max_reserved, rate_count, rate_window_ms, reserved)
          select $1, nextval('${S}.tube_seq'), mr, rc, case when rc > 0 then rw else 0 end,
            (select count(*) from ${S}.jobs where state = ${RESERVED} and tube = $1) from e
        on conflict (name) do update set max_reserved = excluded.max_reserved, rate_count = excluded.rate_count,
          rate_window_ms = excluded.rate_window_ms, seq = coalesce(x.seq, excluded.seq),
          reserved = case when x.max_reserved > 0 or x.rate_count > 0 then x.reserved else excluded.reserved end,
          rate_times = case when excluded.rate_count > 0 then x.rate_times else '{}' end,
          rate_free_at = case when excluded.rate_count > 0 then x.rate_free_at end
        returning x.max_reserved > 0 or x.rate_count > 0 as kept)
      select (select kept from u) as kept,
        (select coalesce(sum(jobs), 0) from ${S}.tube_counts where tube = $1)::float8 as jobs`,
    /** After limits are removed: the row goes unless a pause or its count needs it. */
    dropLimitRow: `delete from ${S}.tubes where name = $1 and max_reserved = 0 and rate_count = 0
      and pause_until is null and cmd_pause = 0`,
    /** The tubes that have limits (which watch sets claim through `claims` above). */
    limitedTubes: `select name from ${S}.tubes p where ${LIMITED}`,

    /** The database's time (whole Unix seconds) and schedule $1's runs done up to (null: none such). */
    scheduleState: `select extract(epoch from now())::int8::float8 as now_sec,
      (select after_sec::float8 from ${S}.schedules where name = $1 for update) as after_sec`,
    /** schedule: $1 name, $2 tube, $3 spec, $4 pri, $5 ttr ms, $6 body, $7 after (s), $8 next due (s). */
    setSchedule: `insert into ${S}.schedules as x (name, tube, spec, pri, ttr_ms, body, after_sec, next_due)
        values ($1, $2, $3, $4::int8, $5::int8, $6::bytea, $7::int8, $8::int8)
      on conflict (name) do update set tube = excluded.tube, spec = excluded.spec, pri = excluded.pri,
        ttr_ms = excluded.ttr_ms, body = excluded.body, after_sec = excluded.after_sec, next_due = excluded.next_due`,
    unschedule: `delete from ${S}.schedules where name = $1 returning 1`,
    listSchedules: `select name, tube, spec, pri::float8 as pri, ttr_ms::float8 as ttr_ms,
        (octet_length(body) - 2)::float8 as size, next_due::float8 as next_due, last_due::float8 as last_due
      from ${S}.schedules order by name`,
    /**
     * The schedules due now by the database's clock, locked: another node's run of the
     * same due time skips them, and once it committed finds them no longer due.
     */
    dueSchedules: `select name, tube, spec, pri::float8 as pri, ttr_ms::float8 as ttr_ms, body,
        after_sec::float8 as after_sec, next_due::float8 as next_due, extract(epoch from now())::int8::float8 as now_sec
      from ${S}.schedules where next_due <= extract(epoch from now()) order by next_due, name
      limit 100 for update skip locked`,
    /**
     * One run: schedule $2 did its due time $3 (next due $4), and its job goes into tube
     * $6 (id $5, pri $7, ttr $8 ms, body $9) with the key <name>@<due>, unless that key
     * is there already; counted for node $1. Row: whether the job was put.
     */
    runSchedule: `with s as (update ${S}.schedules set after_sec = $3::int8, last_due = $3::int8, next_due = $4::int8
        where name = $2 returning 1),
      i as (insert into ${S}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, body, ukey)
          select $5, $6, ${READY}, $7::int8, 0, greatest($8::int8, 1000), now(), now(), $9::bytea, $2 || '@' || $3::int8
          from s
        on conflict (tube, ukey) where ukey is not null do nothing returning 1),
      t as (insert into ${S}.tube_counts as x (tube, node, slot, jobs, total_jobs)
          select $6, $1::int8, ${EXT_SLOT}, 1, 1 from i
        on conflict (tube, node, slot) do update set jobs = x.jobs + 1, total_jobs = x.total_jobs + 1),
      n as (insert into ${S}.node_counts as x (node, slot, total_jobs) select $1::int8, ${EXT_SLOT}, 1 from i
        on conflict (node, slot) do update set total_jobs = x.total_jobs + 1)
      select exists (select 1 from i) as put`,
    /** Ms until the next schedule is due by the database's clock (null: none). */
    nextSchedule: `select (min(next_due) * 1000 - extract(epoch from now()) * 1000)::float8 as ms from ${S}.schedules`,
  };
}

export type FlowStatements = ReturnType<typeof flowStatements>;
