// A turn's plan and its end. The plan is what gathered since the last turn (intake.ts)
// with the engine's own work: the sweep (due delays and ended TTRs back to ready), the
// lease when due (lease.ts), tubes to forget (node_tubes.ts), before the commands. The
// end runs behind the commands in the same transaction: it tells the other nodes what
// became ready, claims jobs for the waiting clients (serving.ts) and this turn's
// reserves, and learns when the next thing falls due. What the commands found that the
// end, issued before their rows came, did not know goes to the next turn (late findings).
import type { Statements } from "./statements.ts";
import type { Row, Sql } from "./sql.ts";
import { all, type Op, type Plan, type TurnState } from "./turn.ts";
import { away } from "./sql.ts";
import { DEADLINE_SOON_MS } from "../clients.ts";
import type { PgClient } from "./client.ts";
import type { ServeOrder, Serving } from "./serving.ts";
import type { NodeTubes } from "./node_tubes.ts";
import { claimAll, type Counting, deleteOp, type Handing, internalOp, putOp, type PutReq } from "./merged.ts";
import type { Intake, ReserveReq } from "./intake.ts";
import type { Lease } from "./lease.ts";
import type { Vacuum } from "./vacuum.ts";
import { jobOut, message } from "./views.ts";

/** What a turn's plan and end work with: the node's other parts. */
export interface PlanParts {
  q: Statements;
  node: number;
  intake: Intake;
  serving: Serving;
  tubes: NodeTubes;
  lease: Lease;
  vacuum: Vacuum;
  /** The watch sets that claim through the claim that counts under limits (flow.ts). */
  counting: Counting;
  error: (line: string) => void;
  /** Ask for a turn. */
  kick: () => void;
}

/** Findings of a turn for the next one: tubes readied, something due. */
interface Late {
  readied: Iterable<string>;
  due: boolean;
}

export class Planner {
  readonly #p: PlanParts;
  /**
   * What a committed turn's ops found that its end, issued before their rows came, did
   * not know: tubes readied (by a sweep, release, kick, ...), something due. The next
   * turn notifies and claims for them.
   */
  #late = { readied: new Set<string>(), due: false };

  constructor(parts: PlanParts) {
    this.#p = parts;
  }

  /**
   * What gathered since the last turn, as one transaction's plan; undefined when there is
   * nothing to do; "wait" when a tube a turn in flight forgets was made again here (what
   * is done to the new one must not run beside that turn, and be forgotten with the old).
   */
  plan(slot: number): Plan | "wait" | undefined {
    const { q, node, intake, serving, tubes } = this.#p;
    // a closed client's release in flight comes before whatever the node read after the close
    if (tubes.waitForDrops || intake.releasing) return "wait";
    const late = this.#late;
    const work = intake.size + (tubes.hasDrops ? 1 : 0) + late.readied.size + (late.due ? 1 : 0);
    if (work === 0 && !serving.wanted) return undefined;
    this.#late = { readied: new Set(), due: false };
    const g = intake.take();
    const order = serving.take();
    const drops = tubes.takeDrops();
    // A turn of puts alone needs no sweep: nothing in it reads a job's state. Any other
    // turn sweeps first, so that its reserves, deletes and releases see delays and TTRs
    // that ended as ended; the waiters' timer asks for a turn when something falls due.
    const handing: Handing = { to: this.#handTo(g.puts), got: new Map() };
    const handed = handing.to.filter((c): c is PgClient => c !== undefined);
    // a put handed to a waiting client reads its tube's ready jobs: swept first
    const others = g.deletes.length + g.reserves.length + g.ops.length + g.releases.length + handed.length;
    const putsAlone = others === 0 && !drops && !order.leaseDue && !order.serveAll && order.serveTubes.size === 0 &&
      late.readied.size === 0 && !late.due;
    const ops: Op[] = putsAlone ? [] : [this.#sweepOp(slot)];
    if (order.leaseDue) ops.push(this.#p.lease.op());
    if (drops) {
      ops.push(internalOp(async (tx) => {
        await tx.query(q.dropTubes, [drops.names]);
      }));
    }
    ops.push(...g.releases);
    if (g.puts.length > 0) ops.push(putOp(q, node, slot, g.puts, handing));
    if (g.deletes.length > 0) {
      ops.push(deleteOp(q, node, slot, g.deletes));
      this.#p.vacuum.deleted(g.deletes.length);
    }
    const commands = g.puts.length + g.deletes.length + g.reserves.length + g.ops.length;
    // the turn's own ops, puts and deletes issue their one statement at once; other commands may not;
    // the claims behind releases wait for their rows, so a client waiting here gets a released job in this turn
    const pipelined = g.ops.length === 0 && g.releases.length === 0;
    ops.push(...g.ops);
    const reserves = g.reserves;
    /** The waiting clients this turn claims for (marked claiming until it ends). */
    let served: PgClient[] = [];
    return {
      ops,
      commands,
      pipelined,
      end: (tx, turn) => {
        // the last turn's late findings are this one's
        for (const t of late.readied) turn.readied.add(t);
        turn.due ||= late.due;
        // claims run again if the turn does: unmark the last attempt's
        for (const c of served) c.claiming = false;
        served = serving.toServe(turn, order);
        return this.#end(tx, turn, served, reserves, order).then((then) => () => {
          try {
            serving.handOver(handed, handing.got, jobOut, (c) => intake.unclaim(c));
            then();
          } finally {
            drops?.done(); // else the turns waiting for these drops would wait for good
          }
        });
      },
      failed: (e) => {
        this.#relate(late);
        drops?.done();
        for (const r of reserves) r.reject(e);
        // a database away is logged once, when it goes (outage.ts)
        if (!away(e)) this.#p.error(`pg: transaction failed: ${message(e)}`);
        serving.failed(order, [...served, ...handed]);
      },
    };
  }

  /**
   * Which waiting client each put is handed to, first come first served: one watching its
   * tube, not claimed for in a turn under way, for a put without delay to a tube without
   * limits (those claim through the claim that counts). Marked claiming until the turn
   * ends: its timeout waits, and no other claim is made for it meanwhile.
   */
  #handTo(puts: PutReq[]): (PgClient | undefined)[] {
    const { serving, counting, tubes } = this.#p;
    if (serving.waiters.size === 0) return [];
    return puts.map((p) => p.delayMs > 0 || counting.has([p.tube]) ? undefined : tubes.claimWaiter(p.tube));
  }

  /**
   * Another node appeared while this one was alone: the turns that committed before it
   * was heard notified no one, so the next turn says that something is due (it commits
   * after them: the new node's waiting clients then claim what they readied).
   */
  joined(): void {
    this.#relate({ readied: [], due: true });
  }

  /** Late findings (of a committed turn, or of a failed one's plan) for the next turn. */
  #relate(late: Late): void {
    for (const t of late.readied) this.#late.readied.add(t);
    this.#late.due ||= late.due;
    if (this.#late.readied.size > 0 || this.#late.due) this.#p.kick();
  }

  #sweepOp(slot: number): Op {
    const { q, node } = this.#p;
    return internalOp(async (tx, turn) => {
      for (const r of await tx.query(q.sweep, [node, slot])) turn.readied.add(r.tube as string);
    });
  }

  /**
   * The end of a turn, in its transaction, behind the ops' statements (issued before
   * their rows came: it knows of this turn's work what puts said and the last turn's
   * late findings): tell the other nodes what became ready, claim jobs for the waiting
   * clients and this turn's reserves, learn when the next thing falls due. After COMMIT: hand the claimed jobs over; what the ops found that
   * this did not know goes to the next turn (#late).
   */
  async #end(
    tx: Sql,
    turn: TurnState,
    served: PgClient[],
    reserves: ReserveReq[],
    order: ServeOrder,
  ): Promise<() => void> {
    const { q, node, serving, tubes, intake } = this.#p;
    const known = new Set(turn.readied);
    const knownDue = turn.due;
    const lease = this.#p.lease;
    // alone, a node has no one to notify; if another comes before COMMIT, it is told after
    const notified = (turn.readied.size > 0 || turn.due) && lease.heardOthers;
    const notify = notified ? lease.notify(tx, turn) : Promise.resolve([]);
    const claims = claimAll(tx, q, node, [...served, ...reserves.map((r) => r.c)], this.#p.counting);
    const due = serving.waiters.size > 0 ? tx.query(q.due) : undefined;
    const [, claimed, dueRows] = await all<unknown>([notify, claims, due ?? Promise.resolve(undefined)]) as [
      unknown,
      Map<PgClient, Row>,
      Row[] | undefined,
    ];
    return () => {
      if (!notified && lease.heardOthers) this.#relate({ readied: turn.readied, due: turn.due });
      else this.#relate({ readied: [...turn.readied].filter((t) => !known.has(t)), due: turn.due && !knownDue });
      tubes.jobsMoved(turn);
      serving.handOver(served, claimed, jobOut, (c) => intake.unclaim(c));
      let began = 0;
      for (const r of reserves) if (this.#answer(r, claimed.get(r.c)!)) began++;
      const ms = dueRows?.[0]?.ms;
      serving.afterTurn(order, dueRows ? (ms === null ? null : Number(ms)) : undefined, began, turn.readied);
    };
  }

  /** After COMMIT: a reserve's answer from its claim's row; true when the client now waits. */
  #answer(r: ReserveReq, row: Row): boolean {
    const c = r.c;
    if (row.id !== null) {
      if (c.closed) this.#p.intake.unclaim(c);
      r.resolve(jobOut(row));
      return false;
    }
    const soonMs = row.soon_ms === null ? Infinity : Number(row.soon_ms);
    if (soonMs <= DEADLINE_SOON_MS) r.resolve("DEADLINE_SOON");
    else if (r.timeoutMs <= 0 || c.closed) r.resolve("TIMED_OUT");
    else {
      this.#p.serving.begin(c, r.timeoutMs, soonMs, row.due_ms === null ? Infinity : Number(row.due_ms));
      r.resolve(null);
      return true;
    }
    return false;
  }
}
