// A node's clients waiting in reserve, and the one timer: which waiters the next turn
// claims for (all of them, or those on tubes that got ready jobs here or on another
// node), handing claimed jobs over after COMMIT, their timeouts and DEADLINE_SOON, when
// something in the database falls due (a delay, a TTR, a pause), and the lease.
import type { Clock, TimerHandle } from "../clock.ts";
import type { JobOut } from "../engine.ts";
import type { Row } from "./sql.ts";
import type { TurnState } from "./turn.ts";
import { type PgClient, Waiters, watchesAny } from "./client.ts";

/** What a turn takes from here when it is planned. */
export interface ServeOrder {
  /** Claim for every waiting client. */
  serveAll: boolean;
  /** Claim for the clients watching these tubes (another node readied them). */
  serveTubes: Set<string>;
  /** Renew the lease in this turn. */
  leaseDue: boolean;
  /** NOTIFYs heard when the turn was planned. */
  heardAt: number;
  /** Turns of this node that readied jobs, committed when the turn was planned. */
  readiedAt: number;
  /** Waits begun when the turn was planned. */
  beganAt: number;
}

export class Serving {
  readonly waiters = new Waiters();
  readonly #clock: Clock;
  readonly #leaseMs: number;
  /** Ask for a turn. */
  readonly #kick: () => void;
  #serveAll = false;
  #serveTubes = new Set<string>();
  /** NOTIFYs heard so far: a turn that began a wait checks whether one came meanwhile. */
  #heardSeq = 0;
  /** This node's turns that readied jobs, committed so far. */
  #readiedSeq = 0;
  /** Waits begun so far. */
  #beganSeq = 0;
  #timer: TimerHandle | undefined;
  #timerAt = Infinity;
  /** When something in the database falls due (monotonic ms; known while clients wait). */
  #dueAt = Infinity;
  #leaseAt: number;
  /** The first turn renews the lease and releases what lapsed nodes hold (a previous life's). */
  #leaseDue = true;

  constructor(clock: Clock, leaseMs: number, kick: () => void) {
    this.#clock = clock;
    this.#leaseMs = leaseMs;
    this.#kick = kick;
    this.#leaseAt = clock.now() + leaseMs / 3;
    this.#arm();
  }

  /** A turn is wanted even without commands. */
  get wanted(): boolean {
    return this.#leaseDue || (this.waiters.size > 0 && (this.#serveAll || this.#serveTubes.size > 0));
  }

  /** The next turn's part: taken, so the turn after starts afresh. */
  take(): ServeOrder {
    const order = {
      serveAll: this.#serveAll,
      serveTubes: this.#serveTubes,
      leaseDue: this.#leaseDue,
      heardAt: this.#heardSeq,
      readiedAt: this.#readiedSeq,
      beganAt: this.#beganSeq,
    };
    this.#serveAll = false;
    this.#serveTubes = new Set();
    this.#leaseDue = false;
    return order;
  }

  /** A turn failed: what it was to serve is wanted again. */
  failed(order: ServeOrder, served: PgClient[]): void {
    for (const c of served) c.claiming = false;
    if (order.serveAll || order.serveTubes.size > 0) this.#serveAll = true;
    this.#arm();
  }

  /**
   * The waiting clients a turn claims for, first come first served: all of them, or those
   * watching a tube that got ready jobs; not one a turn still in flight claims for (it is
   * marked, and served again once that claim has ended).
   */
  toServe(turn: TurnState, order: ServeOrder): PgClient[] {
    const served: PgClient[] = [];
    for (const c of this.waiters) {
      if (!(order.serveAll || watchesAny(c, turn.readied) || watchesAny(c, order.serveTubes))) continue;
      if (c.claiming) c.missed = true; // that claim may not have seen what this turn has
      else {
        c.claiming = true;
        served.push(c);
      }
    }
    return served;
  }

  /**
   * After COMMIT: the claimed jobs to their waiting clients. A job claimed for a client
   * that closed or gave up meanwhile goes to `unclaim`.
   */
  handOver(served: PgClient[], claimed: Map<PgClient, Row>, job: (row: Row) => JobOut, unclaim: (c: PgClient) => void) {
    for (const c of served) {
      c.claiming = false;
      const row = claimed.get(c);
      const got = row !== undefined && row.id !== null;
      if (c.cancelled && c.isWaiting) this.waiters.finish(c, "TIMED_OUT");
      c.cancelled = false;
      if (got && c.isWaiting) {
        this.waiters.end(c);
        c.onWake(job(row));
      } else if (got) unclaim(c);
      if (c.missed && c.isWaiting) this.#serveAll = true;
      c.missed = false;
    }
  }

  /** c waits; `dueMs`: when something in the database falls due, as its claim saw it. */
  begin(c: PgClient, timeoutMs: number, soonMs: number, dueMs: number): void {
    const now = this.#clock.now();
    if (now + dueMs < this.#dueAt) this.#dueAt = now + Math.max(0, dueMs);
    this.#beganSeq++;
    this.waiters.begin(c, now, timeoutMs, soonMs);
    this.#arm();
  }

  /** End c's wait without a job (a half-close): at once, or when the claim under way for it ends. */
  cancel(c: PgClient): void {
    if (!c.isWaiting) return;
    if (c.claiming) c.cancelled = true;
    else this.waiters.finish(c, "TIMED_OUT");
  }

  /**
   * After a turn's COMMIT and hand-over: when the next thing falls due (`dueMs` as its
   * end measured it, if it did), and whether a wait and a readied job passed each other
   * in two transactions in flight at once. `began` clients began waiting in this turn,
   * whose claims may have run before a NOTIFY's or another turn's of this node's jobs
   * were committed; `readied` tubes got ready jobs in it, whose claims could not serve a
   * client whose wait began in another turn after they ran.
   */
  afterTurn(order: ServeOrder, dueMs: number | null | undefined, began: number, readied: ReadonlySet<string>): void {
    if (dueMs !== undefined) {
      const at = dueMs === null ? Infinity : this.#clock.now() + Math.max(0, dueMs);
      this.#dueAt = Math.min(this.#dueAt, at);
    }
    if (began > 0 && (this.#heardSeq !== order.heardAt || this.#readiedSeq !== order.readiedAt)) {
      this.#serveAll = true;
    }
    if (readied.size > 0) {
      this.#readiedSeq++;
      if (this.#beganSeq - began !== order.beganAt) { for (const t of readied) this.#serveTubes.add(t); }
    }
    if (this.#serveAll || (this.#serveTubes.size > 0 && this.waiters.size > 0)) this.#kick();
    this.#arm();
  }

  /** Another node readied these tubes (`tubes` undefined: something may be due anywhere). */
  heard(tubes: string[] | undefined): void {
    this.#heardSeq++;
    if (this.waiters.size === 0) return;
    if (!tubes) this.#serveAll = true;
    else for (const t of tubes) this.#serveTubes.add(t);
    this.#kick();
  }

  /** Renew the lease in the next turn (the database is back after an outage). */
  renewLease(): void {
    this.#leaseDue = true;
    this.#kick();
  }

  /** Stop the timer for good. */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#timerAt = -Infinity; // never armed again
  }

  /** Set the timer for the soonest of: a waiter's timeout or DEADLINE_SOON, a due time, the lease. */
  #arm(): void {
    if (this.#timerAt === -Infinity) return; // stopped
    let at = this.#leaseAt;
    if (this.waiters.size > 0 && this.#dueAt < at) at = this.#dueAt;
    at = Math.min(at, this.waiters.nextWake());
    if (at === this.#timerAt) return;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#clock.setTimer(() => this.#tick(), Math.max(0, at - this.#clock.now()));
  }

  #tick(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#clock.now();
    this.waiters.expire(now);
    if (this.#dueAt <= now) {
      this.#dueAt = Infinity;
      if (this.waiters.size > 0) {
        this.#serveAll = true;
        this.#kick();
      }
    }
    if (this.#leaseAt <= now) {
      this.#leaseAt = now + this.#leaseMs / 3;
      this.#leaseDue = true;
      this.#kick();
    }
    this.#arm();
  }
}
