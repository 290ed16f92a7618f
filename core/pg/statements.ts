// The engine's SQL, one constant per statement, for one schema. Each command is one
// statement (CTEs where it touches several tables), so a turn's statements can be
// pipelined without waiting for each other. Times are the database's: now() is the
// transaction's start, the same for every statement of a turn.
import { BURIED, DELAYED, READY, RESERVED } from "./schema.ts";
import { reserveJobCounted } from "./flow_statements.ts";

const MS = "interval '1 millisecond'";
/** Milliseconds from now() to a timestamptz expression (negative when past), as float8. */
const msUntil = (t: string) => `(extract(epoch from (${t}) - now()) * 1000)::float8`;
/** The columns a reserved or found job is shown with. */
const OUT = "j.id::float8 as id, j.body";
/** What a job that goes back to ready without a counter moving gets. */
const UNRESERVE = "state = " + READY + ", ready_at = now(), node = null, conn = null, deadline = null";

/**
 * A job's state as the next turn's sweep would leave it: the counts are read outside
 * the turns (they scan), so they must not depend on when the last sweep ran.
 */
const NOW_READY =
  `(state = ${READY} or (state = ${DELAYED} and ready_at <= now()) or (state = ${RESERVED} and deadline <= now()))`;
const NOW_RESERVED = `(state = ${RESERVED} and deadline > now())`;
const NOW_DELAYED = `(state = ${DELAYED} and ready_at > now())`;

/**
 * Ms until the next delayed job is due, a TTR ends, or a tube's pause ends or its rate
 * limit lets the next reservation through, anywhere; null when nothing is.
 */
export function dueMsOf(S: string): string {
  return msUntil(`least(
        (select min(ready_at) from ${S}.jobs where state = ${DELAYED}),
        (select min(deadline) from ${S}.jobs where state = ${RESERVED}),
        (select least(min(pause_until) filter (where pause_until > now()),
          min(rate_free_at) filter (where rate_free_at > now())) from ${S}.tubes))`);
}

function listJobs(S: string, state: number, order: string): string {
  return `select id::float8 as id, pri::float8 as pri, delay_ms::float8 as delay_ms, ttr_ms::float8 as ttr_ms,
      reserves, timeouts, releases, buries, kicks, -${msUntil("created_at")} as age_ms,
      greatest(0, ${msUntil("ready_at")}) as left_ms, body
    from ${S}.jobs where tube = $1 and state = ${state} order by ${order} limit $2::int8 offset $3::int8`;
}

/** A put's per-job arrays (statements.put). */
const PUT_ROWS = "$2::int8[], $3::text[], $4::int8[], $5::int8[], $6::int8[], $8::int4[], $9::int4[]";

export function statements(S: string) {
  const dueMs = dueMsOf(S);
  /** A put's counts: per tube, and the node's total, in the turn's slot. */
  const putCounts = `t as (
        insert into ${S}.tube_counts as x (tube, node, slot, jobs, total_jobs)
          select tube, $1, $10::int2, count(*), count(*) from unnest($3::text[]) as u(tube) group by tube order by tube
        on conflict (tube, node, slot) do update set jobs = x.jobs + excluded.jobs,
          total_jobs = x.total_jobs + excluded.total_jobs),
      n as (insert into ${S}.node_counts as x (node, slot, total_jobs) values ($1, $10::int2, cardinality($2::int8[]))
        on conflict (node, slot) do update set total_jobs = x.total_jobs + excluded.total_jobs)`;
  return {
    /** Delayed jobs whose time has come, and reservations whose TTR ended, back to ready; $1 node, $2 slot. */
    sweep: `with p as (
        update ${S}.jobs j set state = ${READY} from (
          select id from ${S}.jobs where state = ${DELAYED} and ready_at <= now() for update skip locked) d
        where j.id = d.id returning j.tube),
      t as (
        update ${S}.jobs j set ${UNRESERVE}, timeouts = j.timeouts + 1 from (
          select id from ${S}.jobs where state = ${RESERVED} and deadline <= now() for update skip locked) d
        where j.id = d.id returning j.tube),
      n as (insert into ${S}.node_counts as x (node, slot, job_timeouts)
          select $1, $2::int2, count(*) from t having count(*) > 0
        on conflict (node, slot) do update set job_timeouts = x.job_timeouts + excluded.job_timeouts)
      select tube from p union all select tube from t`,

    /** Renew this node's lease ($1 node, $2 ms) and release the reservations of nodes whose lease lapsed. */
    lease: `with l as (update ${S}.nodes set lease_until = now() + $2::int8 * ${MS} where id = $1),
      r as (update ${S}.jobs j set ${UNRESERVE} from (
          select id from ${S}.jobs where state = ${RESERVED} and node in (
            select id from ${S}.nodes where lease_until < now() and id <> $1) for update skip locked) d
        where j.id = d.id returning j.tube)
      select tube from r`,

    /** A new node life with its lease ($1 ms), on host $2 as pid $3; its id. */
    register: `insert into ${S}.nodes (lease_until, host, pid)
      values (now() + $1::int8 * ${MS}, $2::text, $3::int4) returning id::float8 as id`,
    /** The nodes whose lease has not lapsed (the dashboard's cluster view). */
    liveNodes: `select id::float8 as id, host, pid, ${msUntil("lease_until")} as lease_ms
      from ${S}.nodes where lease_until > now() order by id`,
    /** This node stops: its lease ends now, so any node may release what it still holds. */
    retire: `update ${S}.nodes set lease_until = now() - interval '1 second' where id = $1`,
    /** A block of ID_BLOCK ids starts here. */
    idBlock: `select nextval('${S}.job_ids')::float8 as id`,

    /**
     * Every put of a turn: $1 node, then per job id, tube, pri, delay ms, ttr ms, and the
     * body as offset/length into $7, all the bodies in one bytea (a bytea[] parameter
     * is not something every driver sends); $10 the turn's slot.
     */
    put: `with ${putCounts}
      insert into ${S}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, body)
        select id, tube, case when d > 0 then ${DELAYED} else ${READY} end, pri, d, ttr, now(), now() + d * ${MS},
          substring($7::bytea from o for l)
        from unnest(${PUT_ROWS}) as u(id, tube, pri, d, ttr, o, l)`,
    /**
     * put, where some jobs go to connections of this node waiting in reserve: $11 per job
     * the connection it is handed to (0: none), $12 the tubes that connection watches
     * (joined by spaces: a tube name has none). A job is handed (inserted reserved by
     * that connection, as a claim would leave it) only if its tube is neither paused nor
     * limited and no tube the connection watches holds a ready job that comes before it
     * (the turn's sweep ran first); the rows are the jobs handed.
     */
    putHanding: `with ${putCounts},
      u as (select u.*, u.h > 0
          and not exists (select 1 from ${S}.tubes p where p.name = u.tube
            and (p.pause_until > now() or p.max_reserved > 0 or p.rate_count > 0))
          and not exists (select 1 from ${S}.jobs r where r.state = ${READY}
            and r.tube = any(string_to_array(u.w, ' ')) and (r.pri, r.id) < (u.pri, u.id)) as handed
        from unnest(${PUT_ROWS}, $11::int8[], $12::text[]) as u(id, tube, pri, d, ttr, o, l, h, w)),
      i as (insert into ${S}.jobs (id, tube, state, pri, delay_ms, ttr_ms, created_at, ready_at, body, node, conn,
          deadline, reserves)
        select id, tube, case when d > 0 then ${DELAYED} when handed then ${RESERVED} else ${READY} end, pri, d, ttr,
          now(), now() + d * ${MS}, substring($7::bytea from o for l), case when handed then $1 end,
          case when handed then h end, case when handed then now() + ttr * ${MS} end, case when handed then 1 else 0 end
        from u
        returning id, conn)
      select id::float8 as id from i where conn is not null`,

    /**
     * Every delete of a turn: $1 node, $2 ids, $3 the deleting connections (a reserved
     * job only by its holder), $4 the turn's slot. Rows: k 'd' per deleted id with the connection whose
     * delete it was; k 't' per tube left without jobs.
     */
    delete: `with d as (
        delete from ${S}.jobs j using unnest($2::int8[], $3::int8[]) as u(id, conn)
        where j.id = u.id and (j.state <> ${RESERVED} or (j.node = $1 and j.conn = u.conn))
        returning j.id, j.tube, u.conn),
      c as (select tube, count(*) as n from d group by tube),
      t as (insert into ${S}.tube_counts as x (tube, node, slot, jobs, cmd_delete)
          select tube, $1, $4::int2, -n, n from c order by tube
        on conflict (tube, node, slot) do update set jobs = x.jobs + excluded.jobs, cmd_delete = x.cmd_delete + excluded.cmd_delete
        returning x.tube, x.jobs)
      select 'd' as k, id::float8 as id, conn::float8 as conn, tube from d
      union all select 't', null, null, t.tube from t
        where t.jobs + (select coalesce(sum(o.jobs), 0) from ${S}.tube_counts o
          where o.tube = t.tube and (o.node, o.slot) <> ($1, $4::int2)) <= 0`,

    /**
     * reserve, for the connections $2 of node $1 (first come first served) that watch
     * the same tubes $3 ($4 of them): the best (pri, id) ready jobs of those tubes that
     * are not paused and have no limits (in the same lookup: those are
     * flow_statements.ts's), the first to the first connection. Per tube, the head of its
     * (tube, pri, id) index, LIMIT $4 FOR UPDATE SKIP LOCKED (a row another transaction
     * is claiming or deleting is passed over; no sort of the whole queue); then the best
     * $4 of those heads. Heads not chosen stay locked until COMMIT, so a concurrent
     * claim on another node may pass over them (docs/pg.md). One row per connection:
     * its job (or nulls), soon_ms (to its nearest TTR end before this claim: DEADLINE_SOON)
     * and due_ms (see due; for one that will wait).
     */
    claims: `with w as (
        select tube from unnest($3::text[]) as u(tube)
        where not exists (select 1 from ${S}.tubes p where p.name = u.tube
          and (p.pause_until > now() or p.max_reserved > 0 or p.rate_count > 0))),
      h as (select x.id, x.pri from w cross join lateral (
          select id, pri from ${S}.jobs where state = ${READY} and tube = w.tube
          order by pri, id limit $4::int8 for update skip locked) as x),
      c as (select id, row_number() over (order by pri, id) as rn
        from (select id, pri from h order by pri, id limit $4::int8) as b),
      u as (update ${S}.jobs j set state = ${RESERVED}, node = $1, conn = ($2::int8[])[c.rn::int4],
          deadline = now() + j.ttr_ms * ${MS}, reserves = j.reserves + 1
        from c where j.id = c.id returning j.id, j.body, j.conn),
      s as (select conn, ${msUntil("min(deadline)")} as soon_ms from ${S}.jobs
        where state = ${RESERVED} and node = $1 and conn = any($2::int8[]) group by conn)
      select k.conn::float8 as conn, u.id::float8 as id, u.body, s.soon_ms, ${dueMs} as due_ms
      from unnest($2::int8[]) as k(conn) left join u on u.conn = k.conn left join s on s.conn = k.conn`,
    /** reserve-job $3 for node $1 connection $2 (flow_statements.ts: counted under its tube's limits). */
    reserveJob: reserveJobCounted(S),
    /** release $3 (held by $1/$2) with pri $4 and delay $5 s. */
    release: `update ${S}.jobs j set state = case when $5::int8 > 0 then ${DELAYED} else ${READY} end, pri = $4::int8,
        delay_ms = $5::int8 * 1000, ready_at = now() + $5::int8 * 1000 * ${MS}, releases = j.releases + 1,
        node = null, conn = null, deadline = null
      where j.id = $3 and j.state = ${RESERVED} and j.node = $1 and j.conn = $2 returning j.tube`,
    /** bury $3 (held by $1/$2) with pri $4: last in its tube's buried FIFO. */
    bury: `update ${S}.jobs j set state = ${BURIED}, pri = $4::int8, buries = j.buries + 1,
        buried_seq = nextval('${S}.bury_seq'), node = null, conn = null, deadline = null
      where j.id = $3 and j.state = ${RESERVED} and j.node = $1 and j.conn = $2 returning j.id`,
    /** touch $3 (held by $1/$2): a fresh full TTR. */
    touch: `update ${S}.jobs j set deadline = now() + j.ttr_ms * ${MS}
      where j.id = $3 and j.state = ${RESERVED} and j.node = $1 and j.conn = $2 returning j.id`,
    /** kick up to $2 jobs of tube $1: buried ones (oldest-buried first) if it has any, else delayed (soonest first). */
    kick: `with b as (select exists (select 1 from ${S}.jobs where state = ${BURIED} and tube = $1) as buried),
      k as (select id from ${S}.jobs, b
        where tube = $1 and state = case when b.buried then ${BURIED} else ${DELAYED} end
        order by case when b.buried then buried_seq end, ready_at, id limit $2::int8 for update skip locked)
      update ${S}.jobs j set state = ${READY}, kicks = j.kicks + 1, ready_at = now(), buried_seq = null
      from k where j.id = k.id returning j.id`,
    /** kick-job $1: a buried or delayed job in any tube. */
    kickJob: `update ${S}.jobs j set state = ${READY}, kicks = j.kicks + 1, ready_at = now(), buried_seq = null
      where j.id = $1 and j.state in (${BURIED}, ${DELAYED}) returning j.tube`,
    /**
     * The jobs connections $2 of node $1 hold reserved now, by id (stats-conn): a TTR that
     * ended holds nothing, swept or not (as the counts).
     */
    reservedIds: `select conn::float8 as conn, id::float8 as id from ${S}.jobs
      where state = ${RESERVED} and node = $1 and conn = any($2::int8[]) and deadline > now() order by id`,
    /** A closed connection's reservations ($1 node, $2 connection) straight back to ready. */
    disconnect: `update ${S}.jobs j set ${UNRESERVE}
      where j.state = ${RESERVED} and j.node = $1 and j.conn = $2 returning j.tube`,

    peek: `select ${OUT} from ${S}.jobs j where j.id = $1`,
    peekReady: `select ${OUT} from ${S}.jobs j where j.state = ${READY} and j.tube = $1 order by j.pri, j.id limit 1`,
    peekDelayed:
      `select ${OUT} from ${S}.jobs j where j.state = ${DELAYED} and j.tube = $1 order by j.ready_at, j.id limit 1`,
    peekBuried:
      `select ${OUT} from ${S}.jobs j where j.state = ${BURIED} and j.tube = $1 order by j.buried_seq limit 1`,
    // As the counts: a job the turn's sweep skipped (another transaction held its row) is
    // shown as the sweep will leave it, so stats-tube and stats-job agree.
    statsJob: `select tube, case when ${NOW_READY} then ${READY} else state end as state, pri::float8 as pri,
        delay_ms::float8 as delay_ms, ttr_ms::float8 as ttr_ms, reserves,
        timeouts + (case when state = ${RESERVED} and deadline <= now() then 1 else 0 end) as timeouts,
        releases, buries, kicks, -${msUntil("created_at")} as age_ms,
        ${
      msUntil(`case when ${NOW_READY} then null when state = ${RESERVED} then deadline
          when state = ${DELAYED} then ready_at end`)
    } as left_ms,
        ukey, dlq_from
      from ${S}.jobs where id = $1`,
    /** Per-state counts of tube $1 (counted), its counters and its pause (zeros for a tube the database does not know). */
    statsTube: `select
        (select coalesce(sum(jobs), 0)::float8 from ${S}.tube_counts where tube = $1) as jobs,
        (select coalesce(sum(total_jobs), 0)::float8 from ${S}.tube_counts where tube = $1) as total_jobs,
        (select coalesce(sum(cmd_delete), 0)::float8 from ${S}.tube_counts where tube = $1) as cmd_delete,
        coalesce(p.cmd_pause, 0)::float8 as cmd_pause, coalesce(p.pause_ms, 0)::float8 as pause_ms,
        coalesce(${msUntil("p.pause_until")}, 0) as pause_left_ms,
        (select count(*)::float8 from ${S}.jobs where tube = $1 and ${NOW_READY} and pri < 1024) as urgent,
        (select count(*)::float8 from ${S}.jobs where tube = $1 and ${NOW_READY}) as ready,
        (select count(*)::float8 from ${S}.jobs where tube = $1 and ${NOW_RESERVED}) as reserved,
        (select count(*)::float8 from ${S}.jobs where tube = $1 and ${NOW_DELAYED}) as delayed,
        (select count(*)::float8 from ${S}.jobs where tube = $1 and state = ${BURIED}) as buried,
        r.max_attempts::float8 as dlq_max, r.dead_tube as dlq_tube, r.backoff_base::float8 as backoff_base,
        r.backoff_cap::float8 as backoff_cap,
        case when p.max_reserved > 0 or p.rate_count > 0 then p.max_reserved::float8 end as max_reserved,
        p.rate_count::float8 as rate_count, p.rate_window_ms::float8 as rate_window_ms,
        coalesce((p.max_reserved > 0 and p.reserved >= p.max_reserved) or p.rate_free_at > now(), false) as held
      from (select 1) as one left join ${S}.tubes p on p.name = $1 left join ${S}.policies r on r.tube = $1`,
    /**
     * The cluster's job gauges (counted: a scan of the jobs table) and counters. A TTR that
     * ended is ready here before a sweep moves it, so its timeout is counted here too: the
     * sweep counts it in node_counts in the same statement that moves it, and this one
     * statement sees both rows before that or both after, never one of them.
     */
    stats: `select
        count(*) filter (where ${NOW_READY} and pri < 1024)::float8 as urgent,
        count(*) filter (where ${NOW_READY})::float8 as ready,
        count(*) filter (where ${NOW_RESERVED})::float8 as reserved,
        count(*) filter (where ${NOW_DELAYED})::float8 as delayed,
        count(*) filter (where state = ${BURIED})::float8 as buried,
        (select coalesce(sum(total_jobs), 0)::float8 from ${S}.node_counts) as total_jobs,
        (select coalesce(sum(job_timeouts), 0)::float8 from ${S}.node_counts)
          + count(*) filter (where state = ${RESERVED} and deadline <= now())::float8 as job_timeouts
      from ${S}.jobs`,
    /** Tubes with jobs, a policy or limits (extensions), in the order they were first counted. */
    tubeNames: `select name from (
        select tube as name, min(seq) as seq from ${S}.tube_counts group by tube having sum(jobs) > 0
        union all select tube, seq from ${S}.policies
        union all select name, seq from ${S}.tubes where max_reserved > 0 or rate_count > 0) as x
      group by name order by min(seq)`,
    /**
     * pause-tube $1 for $2 s ($3: referenced here, so it exists even without jobs). No
     * row when there is no such tube.
     */
    pause: `insert into ${S}.tubes as x (name, cmd_pause, pause_ms, pause_until)
        select $1::text, 1, $2::int8 * 1000, case when $2::int8 > 0 then now() + $2::int8 * 1000 * ${MS} end
        where $3::boolean or (select coalesce(sum(jobs), 0) from ${S}.tube_counts where tube = $1) > 0
          or exists (select 1 from ${S}.policies where tube = $1)
          or exists (select 1 from ${S}.tubes where name = $1 and (max_reserved > 0 or rate_count > 0))
      on conflict (name) do update set cmd_pause = x.cmd_pause + 1, pause_ms = excluded.pause_ms,
        pause_until = excluded.pause_until
      returning 1`,
    /**
     * Forget tubes $1 that have no jobs and no policy: their pause and counters go with
     * them. Their count rows (one per node and slot that counted for them) are locked
     * first, so a put or delete counting on one right now is waited for, and go only
     * if their jobs add up to 0: the sums stay right whatever runs at the same time (a
     * count row made after this statement began is another transaction's, and stays).
     */
    dropTubes: `with l as materialized (
        select tube, jobs from ${S}.tube_counts where tube = any($1::text[]) order by tube, node, slot for update),
      g as (
        select name from unnest($1::text[]) as u(name)
        where name <> 'default' and not exists (select 1 from ${S}.policies where tube = u.name)
          and not exists (select 1 from ${S}.tubes where name = u.name and (max_reserved > 0 or rate_count > 0))
          and (select coalesce(sum(jobs), 0) from l where l.tube = u.name) = 0),
      c as (delete from ${S}.tube_counts x using g where x.tube = g.name)
      delete from ${S}.tubes x using g where x.name = g.name`,
    /** Ms until the next delayed job is due, a TTR ends or a pause ends, anywhere; null when nothing is. */
    due: `select ${dueMs} as ms`,
    notify: "select pg_notify($1, $2)",
    /**
     * The jobs table's dead rows and dead index entries gone (vacuum.ts): a claim
     * walks its tube's ready index from the head, where the deleted jobs' entries pile up.
     * skip_locked: a vacuum another node runs is enough.
     */
    vacuum: `vacuum (skip_locked) ${S}.jobs`,
    /**
     * Up to $2 jobs of tube $1 in a state, in serving order, after the first $3 (list-jobs,
     * the dashboard): one statement per state, so that its plan uses that state's index.
     */
    listJobs: {
      ready: listJobs(S, READY, "pri, id"),
      delayed: listJobs(S, DELAYED, "ready_at, id"),
      buried: listJobs(S, BURIED, "buried_seq"),
    },
  };
}

export type Statements = ReturnType<typeof statements>;
