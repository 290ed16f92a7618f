// A node's tubes: the ones its connections use and watch (core/clients.ts), plus the ones
// it knows have jobs in the database, which stay in its list while unreferenced, as a
// tube with jobs does in 1.12 (so list-tubes keeps 1.12's order on one node). A tube this
// node lets go of is forgotten in the database too (its pause and counters) in a later
// turn, if it has no jobs then.
import { TubeList } from "../clients.ts";
import type { TubeStats, Wake } from "../engine.ts";
import { PgClient, PgTube } from "./client.ts";
import type { Row } from "./sql.ts";
import type { TurnState } from "./turn.ts";
import { tubeStatsOf } from "./views.ts";

export class NodeTubes {
  readonly #tubes = new TubeList<PgTube, PgClient>((name) => new PgTube(name));
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

  /** After COMMIT: tubes that got jobs are held in this node's list, tubes left without any let go. */
  jobsMoved(turn: TurnState): void {
    for (const n of turn.filled) this.#hold(n);
    for (const n of turn.emptied) this.#letGo(n);
  }

  /**
   * This node's list of tubes, brought up to date with the tubes that have jobs in the
   * database (`rows`, in their order: a tube that got jobs through another node is
   * appended; one whose jobs went elsewhere is let go), in list-tubes order.
   */
  sync(rows: Row[]): string[] {
    const withJobs = new Set(rows.map((r) => r.name as string));
    for (const t of this.#held) if (!withJobs.has(t.name)) this.#letGo(t.name, true);
    for (const n of withJobs) this.#hold(n);
    return this.#tubes.all().map((t) => t.name);
  }

  /** stats-tube from the tube's row and this node's references; undefined when neither has it. */
  stats(name: string, row: Row | undefined): TubeStats | undefined {
    return tubeStatsOf(name, row, this.#tubes.get(name));
  }

  // ---- forgetting in the database ---------------------------------------------------

  /**
   * The drops queued for a turn (names, and what to call when that turn has ended), or
   * undefined. The turn forgets only those still gone here when it runs.
   */
  takeDrops(): { names: string[]; done: () => void } | undefined {
    if (this.#drops.size === 0) return undefined;
    const names = [...this.#drops];
    const done = this.#dropsQueued!;
    this.#drops = new Set();
    this.#dropsQueued = undefined;
    return { names, done };
  }

  /**
   * Settles when every tube let go of before now is forgotten in the database: a read
   * outside the turns (stats-tube) waits for it, so that a tube used again right after
   * it was dropped does not show the old tube's pause (use and ignore answer at once,
   * the drop commits in a later turn).
   */
  forgotten(): Promise<void> {
    return this.#forgotten;
  }

  /** After a use or an ignore: if that left t unreferenced, it is gone here; forget it there too. */
  #forgetIfGone(t: PgTube): void {
    if (t.listSlot < 0) this.#queueDrop(t.name);
  }

  /** `name` has no jobs now: unless referenced here, it goes (with `forget`, its row too). */
  #letGo(name: string, forget = false): void {
    const t = this.#tubes.get(name);
    if (!t) return;
    t.held = false;
    this.#held.delete(t);
    if (this.#tubes.dropIfUnused(t) && forget) this.#queueDrop(name);
  }

  /** The database holds jobs of `name`: it stays in this node's list. */
  #hold(name: string): void {
    const t = this.#tubes.obtain(name);
    t.held = true;
    this.#held.add(t);
  }

  #queueDrop(name: string): void {
    this.#drops.add(name);
    if (!this.#dropsQueued) {
      const done = new Promise<void>((resolve) => (this.#dropsQueued = resolve));
      this.#forgotten = Promise.all([this.#forgotten, done]).then(() => {});
    }
    this.#kick();
  }
}
