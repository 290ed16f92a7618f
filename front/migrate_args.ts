// `tubeway migrate`'s usage and flags (front/migrate.ts says what it does).
import { SCHEMA_NAME } from "../core/pg/schema.ts";

export const MIGRATE_USAGE = `Use: tubeway migrate -b DIR [--pg URL] [--pg-schema S] [--merge]
     tubeway migrate --to DIR [--pg URL] [--pg-schema S]

With -b: copies the jobs of the log directory DIR (tubeway's, or one that
beanstalkd 1.12 wrote, as tubeway -b DIR would take it over; the server
stopped) into PostgreSQL, for tubeway --pg. DIR keeps its jobs.
With --to: writes every job of the schema as a new tubeway log directory DIR
(created if missing, must be empty), for tubeway -b DIR.

Kept: ids (new ids go above them), tubes, bodies, priorities, delays (time
left), TTRs, ages, the five counters, states; reserved jobs become ready, as
after a restart; the tubes' retry policies and limits, and the schedules with
their last runs. Not kept: connections and their reservations, tube pauses,
the cmd-* and total-jobs counters (as after a restart).

 --pg URL        the database (default: TUBEWAY_PG_URL, then the PG* variables)
 --pg-schema S   the schema of tubeway's tables (default: tubeway)
 --merge         with -b: add to a schema that already holds jobs (no id may
                 be in both)

Exit: 0 done, 5 usage, 10 DIR missing or in use, 69 database unusable,
1 refused (the target holds jobs, nodes are serving the schema) or failed.
`;

export type MigrateArgs =
  | { kind: "in"; dir: string; url: string | undefined; schema: string; merge: boolean }
  | { kind: "out"; dir: string; url: string | undefined; schema: string }
  | { kind: "help" }
  | { kind: "error"; message: string };

/** The flags after `migrate`; `envUrl` is TUBEWAY_PG_URL. Values attached (`-bDIR`, `--pg=URL`) or next. */
export function parseMigrateArgs(args: readonly string[], envUrl: string | undefined): MigrateArgs {
  let dir: string | undefined;
  let to: string | undefined;
  let url = envUrl || undefined;
  let schema = "tubeway";
  let merge = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const value = (): string | undefined => eq > 0 ? a.slice(eq + 1) : i + 1 < args.length ? args[++i] : undefined;
    if (a === "-h" || a === "--help") return { kind: "help" };
    if (a.startsWith("-b") && a.length > 2) dir = a.slice(2);
    else if (name === "-b" || name === "--to" || name === "--pg" || name === "--pg-schema") {
      const v = value();
      if (v === undefined) return { kind: "error", message: `${name} needs a value` };
      if (name === "-b") dir = v;
      else if (name === "--to") to = v;
      else if (name === "--pg") url = v;
      else schema = v;
    } else if (a === "--merge") merge = true;
    else return { kind: "error", message: a.startsWith("-") ? `unknown flag: ${a}` : `unexpected argument: ${a}` };
  }
  if (!SCHEMA_NAME.test(schema)) {
    return { kind: "error", message: `--pg-schema wants a lower-case SQL name (letters, digits, _), not ${schema}` };
  }
  if (dir !== undefined && to !== undefined) return { kind: "error", message: "give -b DIR or --to DIR, not both" };
  if (dir === undefined && to === undefined) {
    return { kind: "error", message: "give -b DIR (into the database) or --to DIR (out of it)" };
  }
  if (to !== undefined) {
    if (merge) return { kind: "error", message: "--merge is for -b DIR only" };
    return { kind: "out", dir: to, url, schema };
  }
  return { kind: "in", dir: dir!, url, schema, merge };
}
