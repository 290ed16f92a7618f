// The engine's tables, created and upgraded in place by numbered migrations. A node
// runs them at start inside one transaction that holds an advisory lock named after
// the schema, so several nodes starting at once against an empty database create it
// once (the others wait, then find it done). A database a newer tubeway upgraded is
// refused, not guessed at.
import type { Sql, SqlClient } from "./sql.ts";

/** A schema name tubeway accepts: a plain lower-case SQL identifier, used unquoted. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Slots of a node's count rows its turns may use, one per transaction in flight (engine.ts keeps one in flight). */
export const SLOTS = 2;

/** Ids are handed out in blocks of this many: the sequence steps by it (see ids.ts). */
export const ID_BLOCK = 1000;

/**
 * Job states as stored: smallint codes, in the partial indexes' predicates.
 * (The protocol's words are core/engine.ts's JobState.)
 */
export const READY = 0, RESERVED = 1, DELAYED = 2, BURIED = 3;

/**
 * Migration n (1-based) as SQL statements; `S` is the schema. Append only: a released
 * migration never changes, a change is a new one.
 */
function migrations(S: string): string[][] {
  return [
    [
      `create sequence ${S}.job_ids increment by ${ID_BLOCK} minvalue 1 start with 1`,
      `create sequence ${S}.bury_seq`,
      `create sequence ${S}.tube_seq`,
      // One row per node life, with its lease.
      `create table ${S}.nodes (
        id bigserial primary key,
        started_at timestamptz not null default now(),
        lease_until timestamptz not null)`,
      // The cluster's counters, one row per (node, slot): a node's transactions in flight
      // at once (slots) and other nodes never wait for each other's counter updates.
      `create table ${S}.node_counts (
        node bigint not null,
        slot smallint not null,
        total_jobs bigint not null default 0,
        job_timeouts bigint not null default 0,
        primary key (node, slot))`,
      // A tube's job count and counters, one row per (tube, node, slot): a transaction
      // only ever updates its own node's and slot's rows, so transactions putting to and
      // deleting from the same tube never wait for each other's commits on a shared
      // counter. A tube's figures are the sums (a row's jobs may be negative: it deleted
      // jobs others put). seq: list order.
      `create table ${S}.tube_counts (
        tube text not null,
        node bigint not null,
        slot smallint not null,
        seq bigint not null default nextval('${S}.tube_seq'),
        jobs bigint not null default 0,
        total_jobs bigint not null default 0,
        cmd_delete bigint not null default 0,
        primary key (tube, node, slot))`,
      // Paused tubes (and pause-tube's count): rare writes, shared by every node.
      `create table ${S}.tubes (
        name text primary key,
        cmd_pause bigint not null default 0,
        pause_ms bigint not null default 0,
        pause_until timestamptz)`,
      // Times are the database's (now()): ready_at is when a delayed job becomes ready,
      // or when a ready one did; deadline is a reservation's TTR end.
      `create table ${S}.jobs (
        id bigint primary key,
        tube text not null,
        state smallint not null,
        pri bigint not null,
        delay_ms bigint not null,
        ttr_ms bigint not null,
        created_at timestamptz not null,
        ready_at timestamptz not null,
        deadline timestamptz,
        buried_seq bigint,
        reserves integer not null default 0,
        timeouts integer not null default 0,
        releases integer not null default 0,
        buries integer not null default 0,
        kicks integer not null default 0,
        node bigint,
        conn bigint,
        body bytea not null)
      with (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01)`,
      `create index jobs_ready on ${S}.jobs (tube, pri, id) where state = ${READY}`,
      `create index jobs_delayed on ${S}.jobs (ready_at, id) where state = ${DELAYED}`,
      `create index jobs_delayed_tube on ${S}.jobs (tube, ready_at, id) where state = ${DELAYED}`,
      `create index jobs_reserved on ${S}.jobs (deadline) where state = ${RESERVED}`,
      `create index jobs_holder on ${S}.jobs (node, conn) where state = ${RESERVED}`,
      `create index jobs_buried on ${S}.jobs (tube, buried_seq) where state = ${BURIED}`,
    ],
    [
      // Where each node life runs, for the dashboard's cluster view (null: an older tubeway's node).
      `alter table ${S}.nodes add column host text, add column pid integer`,
    ],
    extensionsMigration(S),
    flowMigration(S),
  ];
}

/**
 * Migration 3: the extensions (docs/extensions.md). Additive: three nullable columns
 * (no rewrite of the table), an index over the rows that have a key, a table of
 * policies, and two row triggers whose WHEN clauses keep them off the stock paths.
 *
 * - `ukey`: put-unique's key; the partial unique index makes a key unique per tube
 *   while its job lives, whichever node inserts it (INSERT ... ON CONFLICT DO NOTHING).
 * - `dlq_from`: a dead letter's tube of origin (stats-job's dlq-from-tube).
 * - `doomed`: a job delete-tube found reserved: it is deleted when it comes back.
 * - `policies`: set-dlq's and set-backoff's per tube; a row only while one is in force.
 * - `jobs_attempt` (BEFORE UPDATE, only when releases + timeouts grew: a release or a
 *   TTR timeout, never a disconnect or a lapsed lease): under a policy the row is
 *   turned into a dead letter or delayed by the backoff as it is written, so the stock
 *   release and sweep statements apply policies without knowing them. A job that moves
 *   tube moves one count between the tubes' rows of the extension slot (below).
 * - `jobs_doomed` (AFTER UPDATE, only on a doomed row leaving reserved): deletes it.
 *
 * Counts the extensions change go to the row of slot EXT_SLOT of a (tube, node): the
 * turn's own slot is not known to an op or a trigger; these are rare changes.
 */
function extensionsMigration(S: string): string[] {
  const bump = (tube: string, node: string, d: string) =>
    `insert into ${S}.tube_counts as x (tube, node, slot, jobs) values (${tube}, ${node}, ${EXT_SLOT}, ${d})
      on conflict (tube, node, slot) do update set jobs = x.jobs + excluded.jobs`;
  return [
    `alter table ${S}.jobs add column ukey text, add column dlq_from text, add column doomed boolean`,
    `create unique index jobs_ukey on ${S}.jobs (tube, ukey) where ukey is not null`,
    `create table ${S}.policies (
      tube text primary key,
      seq bigint not null default nextval('${S}.tube_seq'),
      max_attempts bigint not null default 0,
      dead_tube text not null default '',
      backoff_base bigint not null default 0,
      backoff_cap bigint not null default 0)`,
    `create function ${S}.job_attempt() returns trigger language plpgsql as $f$
      declare
        p ${S}.policies%rowtype;
        n bigint;
        d bigint;
        h bigint := coalesce(old.node, 0);
      begin
        select * into p from ${S}.policies where tube = old.tube;
        if not found then return new; end if;
        n := new.releases + new.timeouts;
        if p.max_attempts > 0 and n >= p.max_attempts then
          -- out of attempts: buried last in the dead tube; the key is free, a requested delay dropped
          new.tube := p.dead_tube;
          new.state := ${BURIED};
          new.buried_seq := nextval('${S}.bury_seq');
          new.dlq_from := old.tube;
          new.ukey := null;
          new.delay_ms := old.delay_ms;
          new.ready_at := now();
          new.deadline := null;
          if p.dead_tube <> old.tube then
            ${bump("least(old.tube, p.dead_tube)", "h", "case when old.tube < p.dead_tube then -1 else 1 end")};
            ${bump("greatest(old.tube, p.dead_tube)", "h", "case when old.tube < p.dead_tube then 1 else -1 end")};
          end if;
          return new;
        end if;
        if p.backoff_base > 0 then
          d := least(p.backoff_base::numeric * 2::numeric ^ least(n - 1, 32),
            case when p.backoff_cap > 0 then p.backoff_cap else 4294967295 end, 4294967295)::bigint;
          -- a release that asked for a longer delay keeps it; a TTR timeout comes back delayed
          if new.releases = old.releases or d * 1000 > new.delay_ms then
            new.state := ${DELAYED};
            new.delay_ms := d * 1000;
            new.ready_at := now() + d * interval '1 second';
          end if;
        end if;
        return new;
      end $f$`,
    `create trigger jobs_attempt before update on ${S}.jobs for each row
      when (new.releases + new.timeouts > old.releases + old.timeouts and old.doomed is not true)
      execute function ${S}.job_attempt()`,
    `create function ${S}.job_doomed() returns trigger language plpgsql as $f$
      begin
        delete from ${S}.jobs where id = new.id;
        ${bump("new.tube", "coalesce(old.node, 0)", "-1")};
        return null;
      end $f$`,
    `create trigger jobs_doomed after update on ${S}.jobs for each row
      when (old.doomed and new.state <> ${RESERVED})
      execute function ${S}.job_doomed()`,
  ];
}

/**
 * Migration 4: flow control and recurring jobs (docs/extensions.md). Additive, as 3.
 *
 * - A tube's limits live in its row of `tubes`, beside its pause, so the claim's one
 *   lookup of a watched tube (is it paused?) also tells whether it has limits: a tube
 *   without limits costs a claim nothing more. `reserved` counts the tube's jobs reserved
 *   under its limits (the claim adds what it takes, under the row's lock, so two nodes'
 *   claims count one after the other); `rate_times` are the tube's latest reservations
 *   within its window (at most rate_count, by the database's clock), `rate_free_at` when
 *   the window next lets one through (for the timers of waiting clients); `seq` is its
 *   place in list-tubes.
 * - `jobs.limited`: a reservation counted in its tube's `reserved`. When it ends (any
 *   update out of reserved: release, bury, a TTR timeout, a lapsed lease, a dead letter;
 *   or a delete), a trigger takes it off the count and NOTIFYs the tube as readied, so
 *   waiting clients on every node claim again. The WHEN clauses keep both triggers off
 *   every other row.
 * - `schedules`: one row per schedule; `after_sec` (due times up to it are done) and
 *   `next_due` move together in the transaction that puts a run's job, which locks the
 *   row: exactly one node runs each due time.
 */
function flowMigration(S: string): string[] {
  const endReservation = (row: string) =>
    `update ${S}.tubes set reserved = greatest(0, reserved - 1) where name = ${row}.tube;
        perform pg_notify('tubeway.${S}', '0 r ' || ${row}.tube);`;
  return [
    `alter table ${S}.tubes add column seq bigint, add column max_reserved bigint not null default 0,
      add column reserved bigint not null default 0, add column rate_count bigint not null default 0,
      add column rate_window_ms bigint not null default 0,
      add column rate_times timestamptz[] not null default '{}', add column rate_free_at timestamptz`,
    `alter table ${S}.jobs add column limited boolean`,
    `create function ${S}.job_limit_end() returns trigger language plpgsql as $f$
      begin
        ${endReservation("old")}
        new.limited := null;
        return new;
      end $f$`,
    `create trigger jobs_limit_end before update on ${S}.jobs for each row
      when (old.limited and new.state <> ${RESERVED})
      execute function ${S}.job_limit_end()`,
    `create function ${S}.job_limit_gone() returns trigger language plpgsql as $f$
      begin
        ${endReservation("old")}
        return null;
      end $f$`,
    `create trigger jobs_limit_gone after delete on ${S}.jobs for each row
      when (old.limited and old.state = ${RESERVED})
      execute function ${S}.job_limit_gone()`,
    `create table ${S}.schedules (
      name text primary key,
      tube text not null,
      spec text not null,
      pri bigint not null,
      ttr_ms bigint not null,
      body bytea not null,
      after_sec bigint not null,
      last_due bigint not null default 0,
      next_due bigint)`,
    `create index schedules_due on ${S}.schedules (next_due)`,
  ];
}

/** The count rows' slot of what the extensions change (puts of put-at and put-unique, delete-tube, dead letters). */
export const EXT_SLOT = SLOTS;

/** The newest schema version this tubeway knows. */
export const SCHEMA_VERSION = migrations("s").length;

/** Thrown when the schema was made by a newer tubeway. */
export class SchemaTooNew extends Error {}

/**
 * Create or upgrade `schema` to SCHEMA_VERSION; safe when several nodes start at once.
 * Returns the version found before (0: created now).
 */
export function migrate(sql: SqlClient, schema: string): Promise<number> {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`bad schema name: ${schema}`);
  return sql.transaction(async (tx: Sql) => {
    await tx.query("select pg_advisory_xact_lock(hashtext($1))", [`tubeway schema ${schema}`]);
    await tx.query(`create schema if not exists ${schema}`);
    await tx.query(
      `create table if not exists ${schema}.migrations (version integer primary key, applied_at timestamptz not null default now())`,
    );
    const [row] = await tx.query(`select coalesce(max(version), 0) as v from ${schema}.migrations`);
    const found = Number(row?.v ?? 0);
    if (found > SCHEMA_VERSION) {
      throw new SchemaTooNew(
        `schema ${schema} is at version ${found}, newer than this tubeway knows (${SCHEMA_VERSION}): upgrade tubeway`,
      );
    }
    const all = migrations(schema);
    for (let v = found + 1; v <= SCHEMA_VERSION; v++) {
      for (const statement of all[v - 1]!) await tx.query(statement);
      await tx.query(`insert into ${schema}.migrations (version) values ($1)`, [v]);
    }
    return found;
  });
}
