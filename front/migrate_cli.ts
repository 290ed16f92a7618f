// `tubeway migrate ...` (server.ts hands over argv after `migrate`): the flags, the
// database pool and the files for migrate_in.ts and migrate_out.ts, its lines on stdout,
// problems on stderr, and the exit code (0 done, 5 usage, 10 DIR missing or in use, 69
// database unusable, 1 refused or failed).
import process from "node:process";
import { mkdirSync, rmdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { PG_URL_ENV } from "./config.ts";
import type { MigrateOutcome } from "./migrate.ts";
import { MIGRATE_USAGE, parseMigrateArgs } from "./migrate_args.ts";
import { migrateIn } from "./migrate_in.ts";
import { migrateOut } from "./migrate_out.ts";
import type { SqlClient } from "../core/pg/sql.ts";
import { nodeFiles } from "../adapters/files_node.ts";
import { pgClient, pgTarget } from "../adapters/pg_client.ts";
import { tlsRefusal } from "../adapters/pg_probe.ts";

const EXIT = { locked: 10, database: 69, refused: 1, failed: 1 } as const;

function say(line: string): void {
  console.error(`tubeway: migrate: ${line}`);
}

/** TUBEWAY_PG_URL, or undefined (also when Deno runs without --allow-env). */
function envUrl(): string | undefined {
  try {
    return process.env[PG_URL_ENV];
  } catch {
    return undefined;
  }
}

/**
 * A failed export leaves no directory of its own making: `dir` and its parents up to
 * `made` (the first that mkdir created), each only while empty (a failed export took
 * its files back; one that could not says so, and its directory stays).
 */
function removeMade(dir: string, made: string): void {
  for (let d = resolve(dir); d.length >= resolve(made).length; d = dirname(d)) {
    try {
      rmdirSync(d);
    } catch {
      return;
    }
  }
}

/** Run `tubeway migrate` with these arguments and exit. */
export async function migrateCommand(args: string[]): Promise<never> {
  const parsed = parseMigrateArgs(args, envUrl());
  if (parsed.kind === "help") {
    process.stdout.write(MIGRATE_USAGE);
    process.exit(0);
  }
  if (parsed.kind === "error") {
    say(parsed.message);
    process.stderr.write(MIGRATE_USAGE);
    process.exit(5);
  }
  const target = pgTarget(parsed.url);
  let sql: SqlClient;
  try {
    sql = pgClient(parsed.url);
  } catch (e) {
    say(`cannot use PostgreSQL at ${target}: ${(e as Error).message ?? e}`);
    process.exit(EXIT.database);
  }
  const env = { files: nodeFiles(), sql, target, say, nowWallMs: () => Date.now() };
  let outcome: MigrateOutcome;
  try {
    if (parsed.kind === "in") outcome = await migrateIn(env, parsed.dir, parsed.schema, parsed.merge);
    else {
      let made: string | undefined;
      try {
        made = mkdirSync(parsed.dir, { recursive: true });
      } catch (e) {
        say(`cannot create ${parsed.dir}: ${(e as Error).message}`);
        process.exit(EXIT.locked);
      }
      outcome = await migrateOut(env, parsed.schema, parsed.dir);
      if (outcome.kind === "failed" && made !== undefined) removeMade(parsed.dir, made);
    }
  } finally {
    await sql.close().catch(() => {});
  }
  if (outcome.kind === "failed") {
    const refusal = outcome.why === "database" ? await tlsRefusal(parsed.url) : undefined;
    say(refusal ? `cannot use PostgreSQL at ${target}: ${refusal}` : outcome.message);
    process.exit(EXIT[outcome.why]);
  }
  for (const line of outcome.lines) console.log(line);
  process.exit(0);
}
