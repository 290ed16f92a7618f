// A node's tubes: the ones its connections use and watch (core/clients.ts), plus the ones
// it knows have jobs in the database, which stay in its list while unreferenced, as a
// tube with jobs does in 1.12 (so list-tubes keeps 1.12's order on one node). A tube this
// node lets go of is gone, as 1.12 drops an unused tube: it is forgotten in the database
// too (its pause and counters) at the start of a later turn, if it has no jobs then, and
// a tube of that name used again meanwhile is a new one. Reads outside the turns wait for
// those drops; while a drop's turn is in flight and its tube is used again here, the next
// turn waits for it, so that nothing done to the new tube is forgotten with the old one.
import { TubeList } from "../clients.ts";
import type { TubeStats, Wake } from "../engine.ts";
import { PgClient, PgTube } from "./client.ts";
import type { Row } from "./sql.ts";
import type { TurnState } from "./turn.ts";
import { tubeStatsOf } from "./views.ts";

export class NodeTubes {
  /** The names each turn in flight forgets (until it ends). */
  readonly #dropping = new Set<ReadonlySet<string>>();
  /** Names forgotten by a turn in flight and made again here since. */
  readonly #remade = new Set<string>();
  readonly #tubes = new TubeList<PgTube, PgClient>((name) => this.#make(name));
  /** The tubes marked held, in the order they were (the order sync() lets them go in). */
  readonly #held = new Set<PgTube>();
  /** Tubes to forget in the database at the next turn. */
  #drops = new Set<string>();
  /** Settles when every tube let go of so far is forgotten in the database too. */
  #forgotten = Promise.resolve();
  /** Settles #forgotten's latest part: the turn that takes the queued drops has ended. */
  #dropsQueued: (() => void) | undefined;
  /** Called when there are drops for a turn. */
  readonly #kick: () => void;

  constructor(kick: () => void) {
    this.#kick = kick;
  }

  /** A new connection, numbered `conn` on this node: it uses and watches "default". */
  connect(wake: Wake, conn: number): PgClient {
    return this.#tubes.join((t) => new PgClient(t, wake, conn));
  }

  /** Tubes wait to be forgotten in the database. */
  get hasDrops(): boolean {
    return this.#drops.size > 0;
  }

  /** A tube forgotten by a turn in flight was made again here: no turn may begin before that one ends. */
  get waitForDrops(): boolean {
    return this.#remade.size > 0;
  }

  /**
   * The first of this node's clients waiting in reserve on tube `name` that no claim is
   * under way for, first come first served (the tube's waiting list); marked claiming.
   */
  claimWaiter(name: string): PgClient | undefined {
    for (let n = this.#tubes.get(name)?.waiters.head; n; n = n.next) {
      const c = n.client;
      if (c.claiming || c.closed) continue;
      c.claiming = true;
      return c;
    }
    return undefined;
  }

  /** This node has the tube (referenced here, or known to have jobs). */
  has(name: string): boolean {
    return this.#tubes.get(name) !== undefined;
  }

  /** Some connection of this node uses or watches it (or it is "default"). */
  referenced(name: string): boolean {
    const t = this.#tubes.get(name);
    return t !== undefined && (t === this.#tubes.default || t.using > 0 || t.watching > 0);
  }

  // ---- what the connections do (core/clients.ts's tube commands, plus forgetting) -----

  use(c: PgClient, name: string): void {
    const old = c.use;
    this.#tubes.use(c, name);
    this.#forgetIfGone(old);
  }

  watch(c: PgClient, name: string): number {
    return this.#tubes.watch(c, name);
  }

  ignore(c: PgClient, name: string): number | "NOT_IGNORED" {
    const t = this.#tubes.get(name);
    const n = this.#tubes.ignore(c, name);
    if (t) this.#forgetIfGone(t);
    return n;
  }

  /** A connection closed: it refers to its tubes no more. */
  disconnect(c: PgClient): void {
    const gone = [c.use, ...c.watching];
    this.#tubes.leave(c);
    for (const t of gone) this.#forgetIfGone(t);
  }

  // ---- what the turns learn ---------------------------------------------------------

  /**
   * After COMMIT: tubes that got jobs are held in this node's list, tubes left without any
   * let go (forgotten in the database by the next turn there is, at the latest the
   * lease's, or before a read: no turn of their own).
   */
  jobsMoved(turn: TurnState): void {
    for (const n of turn.filled) this.#hold(n);
    for (const n of turn.emptied) this.#letGo(n, false);
  }

  /**
   * This node's list of tubes, brought up to date with the tubes that have jobs in the
   * database (`rows`, in their order: a tube that got jobs through another node is
   * appended; one whose jobs went elsewhere is let go), in list-tubes order.
   */
  sync(rows: Row[]): string[] {
    const withJobs = new Set(rows.map((r) => r.name as string));
    for (const t of this.#held) if (!withJobs.has(t.name)) this.#letGo(t.name);
    for (const n of withJobs) this.#hold(n);
    return this.#tubes.all().map((t) => t.name);
  }

  /**
   * stats-tube from the tube's row and this node's references; undefined when neither has
   * it. A tube held for jobs the row says are gone (taken through another node) is let go.
   */
  stats(name: string, row: Row | undefined): TubeStats | undefined {
    if (this.#tubes.get(name)?.held && !(Number(row?.jobs ?? 0) > 0)) this.#letGo(name);
    return tubeStatsOf(name, row, this.#tubes.get(name));
  }

  // ---- forgetting in the database ---------------------------------------------------

  /**
   * The drops queued for a turn (names, and what to call when that turn has ended), or
   * undefined. The turn forgets them all, whether or not a tube of that name was made
   * again here since: that one is new. (A turn that failed forgot nothing: what it was to
   * forget stays, as a tube's pause stays in 1.12's log.)
   */
  takeDrops(): { names: string[]; done: () => void } | undefined {
    if (this.#drops.size === 0) return undefined;
    const names = new Set(this.#drops);
    const settle = this.#dropsQueued!;
    this.#drops = new Set();
    this.#dropsQueued = undefined;
    this.#dropping.add(names);
    const done = () => {
      if (!this.#dropping.delete(names)) return;
      for (const n of names) if (![...this.#dropping].some((d) => d.has(n))) this.#remade.delete(n);
      settle();
    };
    return { names: [...names], done };
  }

  /**
   * Settles when every tube let go of before now is forgotten in the database: a read
   * outside the turns (stats-tube) waits for it, so that a tube used again right after
   * it was dropped does not show the old tube's pause (use and ignore answer at once,
   * the drop commits in a later turn).
   */
  forgotten(): Promise<void> {
    if (this.#drops.size > 0) this.#kick(); // drops of emptied tubes ask for no turn of their own
    return this.#forgotten;
  }

  /** A tube made in this node's list: if a turn in flight forgets that name, the next turn waits for it. */
  #make(name: string): PgTube {
    for (const d of this.#dropping) if (d.has(name)) this.#remade.add(name);
    return new PgTube(name);
  }

  /** After a use or an ignore: if that left t unreferenced, it is gone here; forget it there too. */
  #forgetIfGone(t: PgTube): void {
    if (t.listSlot < 0) this.#queueDrop(t.name);
  }

  /** `name` has no jobs now: unless referenced here, it goes, and is forgotten in the database (`kick`: soon). */
  #letGo(name: string, kick = true): void {
    const t = this.#tubes.get(name);
    if (!t) return;
    t.held = false;
    this.#held.delete(t);
    if (this.#tubes.dropIfUnused(t)) this.#queueDrop(name, kick);
  }

  /** The database holds jobs of `name`: it stays in this node's list. */
  #hold(name: string): void {
    const t = this.#tubes.obtain(name);
    t.held = true;
    this.#held.add(t);
  }

  #queueDrop(name: string, kick = true): void {
    this.#drops.add(name);
    if (!this.#dropsQueued) {
      const done = new Promise<void>((resolve) => (this.#dropsQueued = resolve));
      this.#forgotten = Promise.all([this.#forgotten, done]).then(() => {});
    }
    if (kick) this.#kick();
  }
}
