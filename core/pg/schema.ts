// The engine's tables, created and upgraded in place by numbered migrations. A node
// runs them at start inside one transaction that holds an advisory lock named after
// the schema, so several nodes starting at once against an empty database create it
// once (the others wait, then find it done). A database a newer tubeway upgraded is
// refused, not guessed at.
import type { Sql, SqlClient } from "./sql.ts";

/** A schema name tubeway accepts: a plain lower-case SQL identifier, used unquoted. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The default --pg-schema. */
export const DEFAULT_SCHEMA = "tubeway";

/** Transactions a node keeps in flight at once, each in its own slot of the count rows (turn.ts). */
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
  ];
}

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
