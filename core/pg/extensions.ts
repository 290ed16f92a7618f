// The extension commands (docs/extensions.md) on the PostgreSQL engine: each is an op
// of the next turn (intake.ts op()), so it commits with the turn's other commands and is
// answered after COMMIT, like every stock command. Cluster-wide by construction: keys
// are unique through an index, policies live in a table and are applied by a trigger
// wherever the release or the TTR timeout runs (schema.ts, migration 3). What stays per
// node is drain mode (engine.ts), as SIGUSR1's.
import type { Exists, JobOut, ListState, NewJobAt, PutResult, Refusal, TubeState, UniqueJob } from "../engine.ts";
import type { Sql } from "./sql.ts";
import type { Statements } from "./statements.ts";
import type { ExtStatements } from "./ext_statements.ts";
import { all, type TurnState } from "./turn.ts";
import { BURIED, DELAYED } from "./schema.ts";
import { jobOut } from "./views.ts";

/** Runs a command's statements in the next turn; its answer after COMMIT (intake.ts op()). */
export type RunOp = <T>(run: (tx: Sql, turn: TurnState) => Promise<() => T>) => Promise<T>;

/** Times put-unique looks again when the key's holder went between its insert and its look. */
const UNIQUE_TRIES = 5;

export class PgExtensions {
  readonly #x: ExtStatements;
  readonly #q: Statements;
  readonly #node: number;
  readonly #op: RunOp;

  constructor(x: ExtStatements, q: Statements, node: number, op: RunOp) {
    this.#x = x;
    this.#q = q;
    this.#node = node;
    this.#op = op;
  }

  /** delete-tube; `here`: this node refers to the tube (so it exists without jobs). */
  deleteTube(tube: string, state: TubeState | undefined, here: boolean): Promise<number | Refusal> {
    const every = state === undefined;
    const params = [
      tube,
      this.#node,
      here,
      every || state === "ready",
      every || state === "delayed",
      every || state === "buried",
      every,
    ];
    return this.#op(async (tx, turn): Promise<() => number | Refusal> => {
      // pipelined: the lock's statement runs first, the delete sees the rows it locked as they are now
      const [, rows] = await all([
        every ? tx.query(this.#x.lockTube, [tube]) : Promise.resolve([]),
        tx.query(this.#x.deleteTube, params),
      ]);
      const r = rows![0];
      if (!r!.found) return () => "NOT_FOUND";
      const n = Number(r!.n);
      if (n > 0 && Number(r!.left) <= 0) turn.emptied.add(tube);
      return () => n;
    });
  }

  /** kick-tube; `here` as for deleteTube. */
  kickTube(tube: string, bound: number, state: "buried" | "delayed" | undefined, here: boolean) {
    const mode = state === undefined ? -1 : state === "buried" ? BURIED : DELAYED;
    return this.#op(async (tx, turn): Promise<() => number | Refusal> => {
      const [r] = await tx.query(this.#x.kickTube, [tube, bound, mode, here]);
      if (!r!.found) return () => "NOT_FOUND";
      const n = Number(r!.n);
      if (n > 0) turn.readied.add(tube);
      return () => n;
    });
  }

  /** peek-tube: peek-ready / -delayed / -buried on a named tube (no such tube: no job). */
  peekTube(tube: string, state: ListState): Promise<JobOut | undefined> {
    const text = state === "ready" ? this.#q.peekReady : state === "delayed" ? this.#q.peekDelayed : this.#q.peekBuried;
    return this.#op(async (tx) => {
      const [row] = await tx.query(text, [tube]);
      return () => (row ? jobOut(row) : undefined);
    });
  }

  /** put-at: the delay to `atSec` (Unix seconds) by the database's clock. */
  putAt(tube: string, job: NewJobAt): Promise<PutResult> {
    const ttrMs = Math.max(job.ttrSec, 1) * 1000; // as put: a TTR under 1 s is 1 s
    const id = job.id;
    // |atSec| < 2^63 (the parser): an integer Number prints without an exponent
    const params = [this.#node, id, tube, job.pri, String(job.atSec), ttrMs, job.body];
    return this.#op(async (tx, turn) => {
      const [r] = await tx.query(this.#x.putAt, params);
      turn.filled.add(tube);
      if (Number(r!.delay_ms) > 0) turn.due = true;
      else turn.readied.add(tube);
      return () => ({ id });
    });
  }

  /** put-unique: EXISTS <holder> while a live job of the tube has the key, in any node's puts. */
  putUnique(tube: string, job: UniqueJob): Promise<PutResult | Exists> {
    const ttrMs = Math.max(job.ttrSec, 1) * 1000;
    const { id, delaySec } = job;
    const params = [this.#node, id, tube, job.pri, delaySec, ttrMs, job.body, job.key];
    return this.#op(async (tx, turn): Promise<() => PutResult | Exists> => {
      for (let i = 0; i < UNIQUE_TRIES; i++) {
        const [r] = await tx.query(this.#x.putUnique, params);
        if (!r) continue; // the holder was deleted after the insert saw it: try again
        if (!r.new) {
          const held = Number(r.id);
          return () => ({ exists: held });
        }
        turn.filled.add(tube);
        if (delaySec > 0) turn.due = true;
        else turn.readied.add(tube);
        return () => ({ id });
      }
      throw new Error(`put-unique: the key's holder in ${tube} kept changing`);
    });
  }

  /** set-dlq: the policy table's row (the tube exists while it has a policy). */
  setDlq(tube: string, maxAttempts: number, deadTube: string): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#setPolicy(this.#x.setDlq, [tube, maxAttempts, deadTube], tube);
  }

  /** set-backoff: the policy table's row. */
  setBackoff(tube: string, baseSec: number, capSec: number): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#setPolicy(this.#x.setBackoff, [tube, baseSec, capSec], tube);
  }

  #setPolicy(text: string, params: unknown[], tube: string): Promise<"OK" | "INTERNAL_ERROR"> {
    return this.#op(async (tx, turn) => {
      const [, left] = await all([tx.query(text, params), tx.query(this.#x.policyLeft, [tube])]);
      const r = left![0];
      // the node lists a tube with a policy, as one with jobs; without either it may go
      if (r!.kept) turn.filled.add(tube);
      else if (Number(r!.jobs) <= 0) turn.emptied.add(tube);
      return () => "OK" as const;
    });
  }
}
