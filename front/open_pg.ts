// A Service whose jobs live in PostgreSQL (--pg): the pool (adapters/pg_client.ts), the
// schema migrated, this node registered with its lease, then the engine of core/pg/.
// Asynchronous, unlike openService(): nothing is served before the database answered.
import type { Config, PgConfig } from "./config.ts";
import { systemClock } from "../core/clock.ts";
import { openPgEngine } from "../core/pg/engine.ts";
import { Service } from "../protocol/service.ts";
import { hostInfo } from "../adapters/host_node.ts";
import { runtimeTurns } from "../adapters/turns.ts";
import { pgClient, pgTarget } from "../adapters/pg_client.ts";
import { tlsRefusal } from "../adapters/pg_probe.ts";
import type { Opened, OpenOptions } from "./open.ts";

/** The database could not be used at start: the message names where and why. */
export class PgOpenError extends Error {}

/**
 * At start, how long to wait for a database to use (ms): with several hosts in the URL the
 * driver tries them in turn for as long as none takes writes, where one host refused is
 * an error at once.
 */
const START_MS = 30_000;

/**
 * Build the Service for a config with `pg` set. Rejects with {@linkcode PgOpenError}
 * when the database cannot be reached or its schema cannot be used.
 */
export async function openPgService(config: Config & { pg: PgConfig }, opts: OpenOptions = {}): Promise<Opened> {
  const turns = opts.turns ?? runtimeTurns();
  const error = opts.error ?? ((l: string) => console.error(l));
  const host = opts.host ?? hostInfo();
  const where = () => `cannot use PostgreSQL at ${pgTarget(config.pg.url || undefined)}`;
  let sql;
  try {
    sql = pgClient(config.pg.url || undefined, error);
  } catch (e) {
    throw new PgOpenError(`${where()}: ${e instanceof Error ? e.message : String(e)}`);
  }
  let engine;
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no host took writes within ${START_MS / 1000} s`)), START_MS);
    });
    const opening = openPgEngine({
      sql,
      schema: config.pg.schema,
      clock: opts.clock ?? systemClock,
      turns,
      maxJobSize: config.maxJobSize,
      binlogMaxSize: config.binlogSize,
      leaseMs: config.pg.leaseMs,
      waitMs: config.pg.waitMs,
      target: pgTarget(config.pg.url || undefined),
      error,
      host: { hostname: host.hostname, pid: host.pid },
      log: opts.log ?? ((l: string) => console.log(l)),
    });
    opening.catch(() => {}); // given up on: closing the pool ends it
    engine = await Promise.race([opening, late]).finally(() => clearTimeout(timer));
  } catch (e) {
    await sql.close().catch(() => {});
    const why = (await tlsRefusal(config.pg.url || undefined)) ?? (e instanceof Error ? e.message : String(e));
    throw new PgOpenError(`${where()}: ${why}`);
  }
  const service = new Service(engine, {
    turns,
    verbose: config.verbose,
    host,
    ...(opts.log ? { log: opts.log } : {}),
    error,
  });
  return {
    service,
    recoveredJobs: 0,
    imported: Promise.resolve(undefined),
    close: () => service.close(),
    closed: () => engine.closed(),
  };
}
