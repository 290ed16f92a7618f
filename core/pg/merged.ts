// The commands a turn runs as ONE statement for all connections: every put of the turn
// in one multi-row insert (the bodies as one bytea, sliced by offset: a bytea[]
// parameter is not something every driver sends; a job for a client waiting on this
// node inserted reserved by it), every delete in one delete, and the claims of every
// reserve and waiting client in one statement per watch set.
import type { PutResult, Refusal } from "../engine.ts";
import type { Row, Sql } from "./sql.ts";
import type { Statements } from "./statements.ts";
import { all, type Op, type TurnState } from "./turn.ts";
import type { PgClient } from "./client.ts";

/** A put waiting for its turn. */
export interface PutReq {
  id: number;
  tube: string;
  pri: number;
  delayMs: number;
  ttrMs: number;
  body: Uint8Array;
  resolve(r: PutResult): void;
  reject(e: unknown): void;
}

/** A delete waiting for its turn. */
export interface DeleteReq {
  id: number;
  conn: number;
  resolve(r: "DELETED" | Refusal): void;
  reject(e: unknown): void;
}

/** Work of the engine's own in a turn (a sweep, the lease): nothing to answer; a failure fails the turn. */
export function internalOp(run: (tx: Sql, turn: TurnState) => Promise<void>): Op {
  return {
    run: async (tx, turn) => {
      await run(tx, turn);
      return () => undefined;
    },
    resolve: () => {},
    reject: () => {}, // the plan's failed() reports it
  };
}

/**
 * Jobs of a turn's puts handed to clients of this node waiting in reserve: who each put
 * is for (`to`, by put; marked claiming until the turn ends), and after the put's rows
 * came, the jobs they got (a client missing from `got` was not handed its job: the tube
 * was paused or limited, or held a ready job before it).
 */
export interface Handing {
  to: (PgClient | undefined)[];
  got: Map<PgClient, Row>;
}

/** Every put of the turn in one insert; the jobs `handing` names go to their waiting clients in it. */
export function putOp(q: Statements, node: number, slot: number, puts: PutReq[], handing: Handing): Op {
  let size = 0;
  for (const p of puts) size += p.body.length;
  const bodies = new Uint8Array(size);
  const offsets: number[] = [];
  const lengths: number[] = [];
  let at = 0;
  for (const p of puts) {
    bodies.set(p.body, at);
    offsets.push(at + 1); // substring() counts from 1
    lengths.push(p.body.length);
    at += p.body.length;
  }
  const params = [
    node,
    puts.map((p) => p.id),
    puts.map((p) => p.tube),
    puts.map((p) => p.pri),
    puts.map((p) => p.delayMs),
    puts.map((p) => p.ttrMs),
    bodies,
    offsets,
    lengths,
    slot,
  ];
  const handingAny = handing.to.some((c) => c !== undefined);
  if (handingAny) {
    params.push(puts.map((_, i) => handing.to[i]?.conn ?? 0));
    params.push(puts.map((_, i) => handing.to[i]?.watchedTubes().join(" ") ?? ""));
  }
  return {
    run: async (tx, turn) => {
      // known before the rows come: the turn's end (issued behind this) claims and notifies for them;
      // a job handed to a waiting client is ready for no one else
      puts.forEach((p, i) => {
        turn.filled.add(p.tube);
        if (p.delayMs > 0) turn.due = true;
        else if (!handing.to[i]) turn.readied.add(p.tube);
      });
      handing.got = new Map();
      const handed = new Set((await tx.query(handingAny ? q.putHanding : q.put, params)).map((r) => Number(r.id)));
      puts.forEach((p, i) => {
        const c = handing.to[i];
        if (!c) return;
        if (handed.has(p.id)) handing.got.set(c, { id: p.id, body: p.body });
        else turn.readied.add(p.tube); // ready after all: the next turn claims and notifies for it
      });
      return () => undefined;
    },
    resolve: () => {
      for (const p of puts) p.resolve({ id: p.id });
    },
    reject: (e) => {
      for (const p of puts) p.reject(e);
    },
  };
}

/** Every delete of the turn in one statement. */
export function deleteOp(q: Statements, node: number, slot: number, dels: DeleteReq[]): Op {
  const params = [node, dels.map((d) => d.id), dels.map((d) => d.conn), slot];
  let done = new Set<string>();
  return {
    run: async (tx, turn) => {
      done = new Set();
      for (const r of await tx.query(q.delete, params)) {
        if (r.k === "d") done.add(`${r.id} ${r.conn}`);
        else turn.emptied.add(r.tube as string);
      }
      return () => undefined;
    },
    resolve: () => {
      for (const d of dels) d.resolve(done.delete(`${d.id} ${d.conn}`) ? "DELETED" : "NOT_FOUND");
    },
    reject: (e) => {
      for (const d of dels) d.reject(e);
    },
  };
}

/** Which watch sets claim through the claim that counts under limits (flow.ts), and its text. */
export interface Counting {
  has(tubes: readonly string[]): boolean;
  readonly claims: string;
}

/**
 * Claim a job for each of `clients` (first come first served): one statement for all
 * those watching the same tubes. Rows by client: its job or nulls, soon_ms, due_ms.
 */
export async function claimAll(
  tx: Sql,
  q: Statements,
  node: number,
  clients: PgClient[],
  counting?: Counting,
): Promise<Map<PgClient, Row>> {
  const groups = new Map<string, PgClient[]>();
  for (const c of clients) {
    const key = c.watchedTubes().sort().join(" "); // a tube name has no space
    const g = groups.get(key);
    if (g) g.push(c);
    else groups.set(key, [c]);
  }
  const results = await all(
    [...groups.values()].map((g) => {
      const tubes = g[0]!.watchedTubes();
      // a watch set with a tube that has limits claims through the claim that counts (flow_statements.ts)
      const text = counting?.has(tubes) ? counting.claims : q.claims;
      return tx.query(text, [node, g.map((c) => c.conn), tubes, g.length]);
    }),
  );
  const out = new Map<PgClient, Row>();
  [...groups.values()].forEach((g, i) => {
    const byConn = new Map(results[i]!.map((r) => [Number(r.conn), r]));
    for (const c of g) out.set(c, byConn.get(c.conn)!);
  });
  return out;
}
