// A pipelined turn (core/pg/pipelined.ts) as one message: `EXECUTE`s of statements
// prepared once per connection, their parameters written as literals, in one simple
// Query. PostgreSQL runs the statements of one Query as one implicit transaction (all
// or nothing, no BEGIN or COMMIT to send) and flushes its answers once, at its end;
// postgres.js ends each statement of the extended protocol with a Sync, at which
// PostgreSQL flushes, so a turn of five statements came back in five reads.
//
// A statement is prepared on a connection the first time a turn on it uses its text, so
// the connections turns run on are kept apart from the pool (reserved, and known by
// what was prepared on them) while they stay open.
import type postgres from "postgres";
import type { Row, Statement } from "../core/pg/sql.ts";

type ReservedSql = postgres.ReservedSql<Record<string, never>>;

/**
 * A value as a literal of the simple protocol, typed by the prepared statement's
 * parameter (as the extended protocol's untyped text parameters are).
 * `standard_conforming_strings` is on for the engine's connections, so a backslash in
 * a quoted literal is itself.
 */
export function literal(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "bigint") return `'${v}'`;
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "string") return quote(v);
  if (v instanceof Uint8Array) return `'\\x${hex(v)}'`;
  if (Array.isArray(v)) return quote(arrayText(v));
  throw new TypeError(`no literal for a parameter of type ${typeof v}`);
}

function quote(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

/** An array's text form (`{1,"a b",NULL}`), each element quoted as the array parser reads it. */
function arrayText(a: readonly unknown[]): string {
  const parts = a.map((x) => {
    if (x === null || x === undefined) return "NULL";
    if (Array.isArray(x)) return arrayText(x);
    if (typeof x === "number" || typeof x === "bigint") return String(x);
    if (typeof x === "boolean") return x ? "t" : "f";
    const s = x instanceof Uint8Array ? `\\x${hex(x)}` : String(x);
    return `"${s.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  });
  return `{${parts.join(",")}}`;
}

/** A statement as prepared on one connection: its name there, and whether it returns rows. */
interface Prepared {
  name: string;
  rows: boolean;
}

/** A connection kept for turns, and what is prepared on it. */
export class TurnConnection {
  readonly tx: ReservedSql;
  readonly #prepared = new Map<string, Prepared>();
  constructor(tx: ReservedSql) {
    this.tx = tx;
  }

  /**
   * The statements' texts prepared here, those not yet prepared first (the driver's
   * describe(): a round trip, once per text and connection, that names the statement on
   * the server and says whether it returns rows); then the Query of EXECUTEs.
   */
  async run(calls: readonly Statement[], onexecute: (c: unknown) => boolean): Promise<Row[][]> {
    if (calls.some((c) => !this.#prepared.has(c.text))) {
      const missing = [...new Set(calls.map((c) => c.text))].filter((t) => !this.#prepared.has(t));
      const described = await Promise.all(missing.map((t) => this.tx.unsafe(t).describe()));
      missing.forEach((t, i) => {
        const d = described[i]!;
        this.#prepared.set(t, { name: d.name, rows: d.columns.length > 0 });
      });
    }
    const ps = calls.map((c) => this.#prepared.get(c.text)!);
    const text = calls.map((c, i) =>
      c.params.length === 0
        ? `execute "${ps[i]!.name}"`
        : `execute "${ps[i]!.name}"(${c.params.map(literal).join(",")})`
    ).join(";");
    const res = await this.tx.unsafe(text, [], { onexecute } as postgres.UnsafeQueryOptions);
    return split(res as unknown as Row[] | Row[][], ps);
  }
}

/**
 * Each statement's rows, from what postgres.js made of a Query's answers: it begins a new
 * result at a row description that follows a statement's end, so a statement without
 * rows shares its result with the next; one result alone is not wrapped in a list (a row
 * is an object, a result an array).
 */
function split(res: Row[] | Row[][], ps: readonly Prepared[]): Row[][] {
  const results = (Array.isArray(res[0]) ? res : [res]) as Row[][];
  const out: Row[][] = [];
  let at = 0, ended = false;
  for (const p of ps) {
    if (p.rows) {
      if (ended) at++;
      out.push(results[at]!);
    } else out.push([]);
    ended = true;
  }
  return out;
}
