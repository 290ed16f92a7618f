// The SQL of the extension commands (docs/extensions.md) on the PostgreSQL engine, one
// statement per command (CTEs where it touches several tables), as statements.ts is for
// the stock ones. Their counts go to the extension slot's rows (schema.ts EXT_SLOT);
// policies are applied by the jobs_attempt trigger of migration 3, so the stock release
// and sweep statements need not know them.
import { BURIED, DELAYED, EXT_SLOT, READY, RESERVED } from "./schema.ts";

const MS = "interval '1 millisecond'";

/** put-at's and put-unique's delay cap: 2^32-1 s, as put's. */
const MAX_DELAY_MS = 4294967295000;

export function extStatements(S: string) {
  /** Tube $1 exists: referenced on this node ($here), has jobs, a policy or limits. */
  const found = (here: string) =>
    `(${here}::boolean or exists (select 1 from ${S}.policies where tube = $1)
      or exists (select 1 from ${S}.tubes where name = $1 and (max_reserved > 0 or rate_count > 0))
      or (select coalesce(sum(jobs), 0) from ${S}.tube_counts where tube = $1) > 0)`;
  /** One put's count rows: the tube's and the node's ($node), in the extension slot. */
  const counted = (from: string, tube: string, node: string) =>
    `t as (insert into ${S}.tube_counts as x (tube, node, slot, jobs, total_jobs)
        select ${tube}, ${node}, ${EXT_SLOT}, 1, 1 from ${from}
      on conflict (tube, node, slot) do update set jobs = x.jobs + 1, total_jobs = x.total_jobs + 1),
    n as (insert into ${S}.node_counts as x (node, slot, total_jobs) select ${node}, ${EXT_SLOT}, 1 from ${from}
      on conflict (node, slot) do update set total_jobs = x.total_jobs + 1)`;
  return {
    /**
     * Before a delete-tube without a state: lock every job of tube $1, whatever its state
     * (an OR of the states, so each arm uses its partial index, and a row another
     * transaction is moving between states is waited for and locked in its new state).
     * Then none of them changes state under the delete-tube statement that follows, so
     * none escapes both the delete (not reserved) and the doom (reserved).
     */
    lockTube: `select count(*)::float8 as n from (select id from ${S}.jobs
        where tube = $1 and (state = ${READY} or state = ${RESERVED} or state = ${DELAYED} or state = ${BURIED})
        for update) as l`,

    /**
     * delete-tube $1 on node $2 ($3: referenced here): the jobs in the states $4 (ready),
     * $5 (delayed), $6 (buried) are deleted; with $7, the reserved ones are doomed (the
     * jobs_doomed trigger deletes each when it comes back). One row: found, n deleted,
     * doomed, and the tube's jobs left.
     */
    deleteTube: `with e as (select ${found("$3")} as found),
      r as (delete from ${S}.jobs where tube = $1 and state = ${READY} and $4::boolean and (select found from e)
        returning 1),
      d as (delete from ${S}.jobs where tube = $1 and state = ${DELAYED} and $5::boolean and (select found from e)
        returning 1),
      b as (delete from ${S}.jobs where tube = $1 and state = ${BURIED} and $6::boolean and (select found from e)
        returning 1),
      m as (update ${S}.jobs set doomed = true
        where state = ${RESERVED} and tube = $1 and doomed is not true and $7::boolean and (select found from e)
        returning 1),
      k as (select (select count(*) from r) + (select count(*) from d) + (select count(*) from b) as n),
      c as (insert into ${S}.tube_counts as x (tube, node, slot, jobs, cmd_delete)
          select $1, $2, ${EXT_SLOT}, -n, n from k where n > 0
        on conflict (tube, node, slot) do update set jobs = x.jobs + excluded.jobs,
          cmd_delete = x.cmd_delete + excluded.cmd_delete)
      select (select found from e) as found, (select n from k)::float8 as n, (select count(*) from m)::float8 as doomed,
        ((select coalesce(sum(jobs), 0) from ${S}.tube_counts where tube = $1) - (select n from k))::float8 as left`,

    /**
     * kick-tube: up to $2 jobs of tube $1 ($4: referenced here), $3 = ${BURIED} buried,
     * ${DELAYED} delayed, -1 as kick (buried ones if the tube has any). One row: found, n.
     */
    kickTube: `with e as (select ${found("$4")} as found),
      b as (select case when $3::int4 = -1 then exists (select 1 from ${S}.jobs where state = ${BURIED} and tube = $1)
        else $3::int4 = ${BURIED} end as buried),
      k as (select id from ${S}.jobs, b
        where tube = $1 and state = case when b.buried then ${BURIED} else ${DELAYED} end and (select found from e)
        order by case when b.buried then buried_seq end, ready_at, id limit $2::int8 for update skip locked),
      u as (update ${S}.jobs j set state = ${READY}, kicks = j.kicks + 1, ready_at = now(), buried_seq = null
        from k where j.id = k.id returning j.id)
      select (select found from e) as found, (select count(*) from u)::float8 as n`,

    /**
     * put-at: job $2 in tube $3 by node $1, pri $4, ready at Unix time $5 (numeric
     * seconds) by the database's clock (at or before now: ready), ttr $6 ms, body $7.
     * Returns its delay.
     */
    putAt: `with d as (select greatest(0, least(floor($5::numeric * 1000 - extract(epoch from now()) * 1000),
          ${MAX_DELAY_MS}))::int8 as ms),
      ${counted("d", "$3::text", "$1::int8")}
      insert into ${S}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, body)
        select $2, $3, case when d.ms > 0 then ${DELAYED} else ${READY} end, $4, d.ms, $6, now(), now() + d.ms * ${MS},
          $7::bytea from d
      returning delay_ms::float8 as delay_ms`,

    /**
     * put-unique: as put (node $1, id $2, tube $3, pri $4, delay $5 s, ttr $6 ms, body $7)
     * with key $8, unless a live job of the tube holds the key (the jobs_ukey index, so
     * across nodes too). Row: the inserted id (new true), or the holder's (new false);
     * none when the holder went between the insert and the look (run it again).
     */
    putUnique: `with i as (
        insert into ${S}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, body, ukey)
          values ($2, $3, case when $5::int8 > 0 then ${DELAYED} else ${READY} end, $4, $5::int8 * 1000, $6, now(),
            now() + $5::int8 * 1000 * ${MS}, $7::bytea, $8::text)
        on conflict (tube, ukey) where ukey is not null do nothing returning id),
      ${counted("i", "$3::text", "$1::int8")}
      select id::float8 as id, true as new from i
      union all select id::float8, false from ${S}.jobs where tube = $3 and ukey = $8 and not exists (select 1 from i)`,

    /** set-dlq $1: limit $2, dead tube $3 (no limit: none). The tube's jobs, to know whether it still exists. */
    setDlq: `insert into ${S}.policies as p (tube, max_attempts, dead_tube)
        values ($1, $2::int8, case when $2::int8 > 0 then $3::text else '' end)
      on conflict (tube) do update set max_attempts = excluded.max_attempts, dead_tube = excluded.dead_tube`,
    /** set-backoff $1: base $2 s, cap $3 s (no base: no cap). */
    setBackoff: `insert into ${S}.policies as p (tube, backoff_base, backoff_cap)
        values ($1, $2::int8, case when $2::int8 > 0 then $3::int8 else 0 end)
      on conflict (tube) do update set backoff_base = excluded.backoff_base, backoff_cap = excluded.backoff_cap`,
    /** After a set: a policy that does nothing is no policy. Row: whether one is left, and the tube's jobs. */
    policyLeft:
      `with g as (delete from ${S}.policies where tube = $1 and max_attempts = 0 and backoff_base = 0 returning 1)
      select not exists (select 1 from g) as kept,
        (select coalesce(sum(jobs), 0) from ${S}.tube_counts where tube = $1)::float8 as jobs`,
  };
}

export type ExtStatements = ReturnType<typeof extStatements>;
