// One connection of a node, as the PostgreSQL engine knows it: core/clients.ts's (used
// tube, watch list, its wait) plus what names its reservations in the database and the
// state of a claim made for its wait; and a tube as this node knows it.
import { DEADLINE_SOON_MS, NodeClient, NodeTube } from "../clients.ts";
import type { WaitEnd, Wake } from "../engine.ts";

/** A tube of this node: referred to by its connections, or known to have jobs in the database. */
export class PgTube extends NodeTube<PgClient> {
  /** This node knows the database holds jobs of it: it stays in the node's list (1.12's list-tubes order). */
  held = false;

  override get unreferenced(): boolean {
    return super.unreferenced && !this.held;
  }
}

/** One connection of this node, as the engine knows it. */
export class PgClient extends NodeClient<PgTube> {
  /** Its number on this node: reservations are (node, conn). */
  readonly conn: number;
  closed = false;
  /** Has asked for reservations: when it closes, they are released. */
  reserving = false;
  /** A claim for its wait is in the transaction under way: its timeout waits for that. */
  claiming = false;
  /** Its wait was cancelled (half-close) while claiming. */
  cancelled = false;
  /** Another turn wanted to claim for it while a claim was under way: claim again after. */
  missed = false;
  /** While waiting: when DEADLINE_SOON is due (monotonic ms). */
  soonAt = Infinity;

  constructor(use: PgTube, wake: Wake, conn: number) {
    super(use, wake);
    this.conn = conn;
  }
}

/** Does c watch any of these tubes? */
export function watchesAny(c: PgClient, tubes: Set<string>): boolean {
  if (tubes.size === 0) return false;
  for (const t of c.watching) if (tubes.has(t.name)) return true;
  return false;
}

/**
 * The clients of this node waiting in reserve, first come first served, with their
 * timeouts and DEADLINE_SOON on this node's clock (a wait is a connection's, so its
 * node's clock is the right one; the TTR it watches was measured from the database's).
 */
export class Waiters {
  readonly #set = new Set<PgClient>();

  get size(): number {
    return this.#set.size;
  }

  [Symbol.iterator](): Iterator<PgClient> {
    return this.#set[Symbol.iterator]();
  }

  /** c waits until now + timeoutMs; its nearest TTR ends soonMs from now. */
  begin(c: PgClient, now: number, timeoutMs: number, soonMs: number): void {
    c.enterWait(now, timeoutMs);
    c.soonAt = now + soonMs - DEADLINE_SOON_MS;
    c.wakeAt = Math.min(c.waitUntil, c.soonAt);
    this.#set.add(c);
  }

  /** End c's wait without telling it. */
  end(c: PgClient): void {
    c.leaveWait();
    c.soonAt = Infinity;
    this.#set.delete(c);
  }

  /** End c's wait and tell it why. */
  finish(c: PgClient, why: WaitEnd): void {
    this.end(c);
    c.onWake(why);
  }

  /** End the waits whose timeout or DEADLINE_SOON has come, but not one a claim is under way for. */
  expire(now: number): void {
    for (const c of this.#set) {
      if (c.wakeAt <= now && !c.claiming) this.finish(c, c.soonAt <= now ? "DEADLINE_SOON" : "TIMED_OUT");
    }
  }

  /** When the next wait must end (monotonic ms), or Infinity. */
  nextWake(): number {
    let at = Infinity;
    for (const c of this.#set) if (c.wakeAt < at) at = c.wakeAt;
    return at;
  }
}
