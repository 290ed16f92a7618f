// This node's life in the cluster. Its lease: a row of the nodes table that a turn renews
// every third of its length (serving.ts keeps the time); any live node's renewal releases
// the reservations of nodes whose lease lapsed. LISTEN/NOTIFY on the schema's channel: a
// turn that readied jobs tells the other nodes which tubes (or that something falls due),
// so that their waiting clients are served without polling. A NOTIFY costs every commit
// a lock on the whole database and wakes every listener, so a node sends one only while
// another node is there to hear it: each renewal says "here I am" (h), and a node that
// heard none for a lease's length is alone.
import type { Clock } from "../clock.ts";
import type { ClusterNode } from "../engine.ts";
import type { ListenEvents, Row, Sql, SqlClient } from "./sql.ts";
import type { Statements } from "./statements.ts";
import { all, type Op, type TurnState } from "./turn.ts";
import type { TurnMetrics } from "./metrics.ts";
import type { Serving } from "./serving.ts";
import type { Outage } from "./outage.ts";
import { internalOp } from "./merged.ts";

/** A NOTIFY payload is at most 8000 bytes; past this, "something is due" says enough. */
const MAX_TUBES_PAYLOAD = 7000;

export interface LeaseParts {
  sql: SqlClient;
  q: Statements;
  /** This node life's id in the nodes table. */
  node: number;
  /** The schema holding the tables: its channel is this node's too. */
  schema: string;
  clock: Clock;
  leaseMs: number;
  /** Where the lease as last renewed is shown (the metrics port). */
  metrics: TurnMetrics;
  serving: Serving;
  /** Told when the LISTEN connection is lost (the database went away, most likely). */
  outage: Outage;
  /**
   * Another node changed a tube's limits ("l", with the tube) or a schedule ("s"), or
   * NOTIFYs may have been missed (undefined): flow.ts reads them again.
   */
  flowChanged: (kind: "l" | "s" | undefined, tubes: string[]) => void;
  /**
   * Another node appeared while this one thought itself alone (or LISTEN was lost, and
   * with it what this node heard): what this node's turns readied meanwhile was not
   * notified, so the next turn says that something is due.
   */
  joined: () => void;
}

export class Lease {
  /** The LISTEN/NOTIFY channel of this schema. */
  readonly channel: string;
  readonly #p: LeaseParts;
  /** Until when another node is known to be there (monotonic ms): its last "h" and a lease's length. */
  #othersUntil = -Infinity;

  constructor(parts: LeaseParts) {
    this.#p = parts;
    this.channel = `tubeway.${parts.schema}`;
    // registered a moment ago (the id block's round trip): close enough for a lease of seconds
    parts.metrics.leaseRenewed(parts.clock.now(), parts.leaseMs);
  }

  /** Listen on the channel (once, as the node opens). */
  listen(): Promise<void> {
    return this.#p.sql.listen(this.channel, (p) => this.heard(p), this.events);
  }

  /** Another node may listen: a turn's NOTIFY has someone to wake. */
  get heardOthers(): boolean {
    return this.#p.clock.now() < this.#othersUntil;
  }

  /**
   * Renew the lease in this turn, release what nodes whose lease lapsed hold, and tell
   * the other nodes that this one is there.
   */
  op(): Op {
    const { q, node, clock, leaseMs, metrics } = this.#p;
    let sentAt = 0;
    return {
      ...internalOp(async (tx, turn) => {
        sentAt = clock.now();
        const [rows] = await all([
          tx.query(q.lease, [node, leaseMs]),
          tx.query(q.notify, [this.channel, `${node} h`]),
        ]);
        for (const r of rows!) turn.readied.add(r.tube as string);
      }),
      resolve: () => metrics.leaseRenewed(sentAt, leaseMs),
    };
  }

  /**
   * Tell the other nodes, at this turn's COMMIT, what became ready in it:
   * "<node> r <tube>,<tube>...", or "<node> d" when something falls due later (or the
   * tubes would not fit).
   */
  notify(tx: Sql, turn: TurnState): Promise<Row[]> {
    const node = this.#p.node;
    const tubes = [...turn.readied].join(",");
    const payload = tubes.length > MAX_TUBES_PAYLOAD || turn.due ? `${node} d` : `${node} r ${tubes}`;
    return tx.query(this.#p.q.notify, [this.channel, payload]);
  }

  /**
   * The LISTEN connection lost: the database went away (most likely; a turn under way or
   * the next one tells). LISTEN again: NOTIFYs may have been missed meanwhile, and the
   * lease may be close to lapsing: renew it now.
   */
  readonly events: ListenEvents = {
    lost: (e) => this.#p.outage.away(e),
    again: () => {
      this.#p.serving.renewLease();
      this.heard(undefined);
    },
  };

  /**
   * A NOTIFY on this schema's channel (as notify() sends it; "0 r <tube>" from the
   * trigger that ends a reservation counted under limits, schema.ts; "l" and "s" from
   * flow.ts); undefined: LISTEN was established again, NOTIFYs may have been missed.
   */
  heard(payload: string | undefined): void {
    const { serving, clock, leaseMs } = this.#p;
    if (payload === undefined) {
      // another node's "h" may have been missed too, and this node's turns may have thought
      // themselves alone meanwhile: the others are told that something is due
      this.#othersUntil = clock.now() + leaseMs;
      this.#p.joined();
      this.#p.flowChanged(undefined, []);
      return serving.heard(undefined);
    }
    const [from, kind, tubes] = payload.split(" ");
    if (Number(from) === this.#p.node) return;
    if (kind === "h") {
      const alone = !this.heardOthers;
      this.#othersUntil = clock.now() + leaseMs;
      if (alone) this.#p.joined();
      return;
    }
    // limits ("<node> l <tube>", whose waiting clients are served once they are read) and schedules
    if (kind === "l" || kind === "s") return this.#p.flowChanged(kind, tubes ? tubes.split(",") : []);
    serving.heard(kind === "d" || !tubes ? undefined : tubes.split(","));
  }

  /** The cluster's nodes whose lease has not lapsed, read now (outside the turns). */
  nodes(): Promise<ClusterNode[]> {
    const { sql, q, node } = this.#p;
    return sql.query(q.liveNodes).then((rows) =>
      rows.map((r) => ({
        id: Number(r.id),
        host: (r.host as string | null) ?? "",
        pid: Number(r.pid ?? 0),
        leaseRemainingMs: Math.max(0, Number(r.lease_ms)),
        self: Number(r.id) === node,
      }))
    );
  }

  /** This node stops: its lease ends now, so any node may release what it still holds. */
  async retire(): Promise<void> {
    await this.#p.sql.query(this.#p.q.retire, [this.#p.node]);
  }
}
