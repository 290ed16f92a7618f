// What a node keeps of its connections, whichever engine keeps the jobs: the tube each
// uses and the tubes it watches (1.12's tube commands: use, watch, ignore), the tubes
// that exist while something refers to them, in list-tubes order, and a connection's
// wait in reserve on every tube it watches. Each engine extends the tube and the client
// with what it needs (the in-memory engine: the jobs; the PostgreSQL engine: whether the
// database holds jobs of the tube, how its reservations are named there).
import type { EngineClient, Wake } from "./engine.ts";
import { List } from "./list.ts";

/** DEADLINE_SOON is due this long before a reservation's TTR ends. */
export const DEADLINE_SOON_MS = 1000;

/** One entry of a tube's waiting list; a waiting client has one per watched tube. */
export interface WaitNode<C> {
  client: C;
  tube: NodeTube<C>;
  prev: WaitNode<C> | null;
  next: WaitNode<C> | null;
}

/** A tube as this node's connections refer to it. */
export class NodeTube<C> {
  readonly name: string;
  /** Connections using it, watching it. */
  using = 0;
  watching = 0;
  /** Waiting connections, first come first served (1.12's order is not FIFO; we fix that). */
  readonly waiters = new List<WaitNode<C>>();
  /** Position in the list of tubes (swap-remove order, as list-tubes shows); -1 once dropped. */
  listSlot = -1;

  constructor(name: string) {
    this.name = name;
  }

  /** Connections waiting in reserve on this tube. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Nothing keeps this tube: an engine adds what else does (its jobs, a policy). */
  get unreferenced(): boolean {
    return this.using === 0 && this.watching === 0;
  }

  addWaiter(client: C): WaitNode<C> {
    const n: WaitNode<C> = { client, tube: this, prev: null, next: null };
    this.waiters.push(n);
    return n;
  }

  removeWaiter(n: WaitNode<C>): void {
    this.waiters.remove(n);
  }
}

/** One connection as the engine sees it: its used tube, its watch list and its wait in reserve. */
export class NodeClient<T extends NodeTube<unknown>> implements EngineClient {
  use: T;
  /**
   * The watch list, an unordered multiset: removal moves the last entry into the gap (as
   * 1.12). It starts as [use] from a literal: push() onto an empty array reserves 17
   * slots, ~130 bytes per idle connection.
   */
  readonly watching: T[];
  /** Non-null while waiting in reserve: one node per watched tube. */
  waitNodes: WaitNode<unknown>[] | null = null;
  /** Monotonic ms when the wait ends by timeout; Infinity for plain reserve. */
  waitUntil = Infinity;
  /** When the wait must next be looked at (its timeout or DEADLINE_SOON), monotonic ms. */
  wakeAt = Infinity;
  /** Called when a wait ends: with the reserved job, or the reason it ended without one. */
  readonly onWake: Wake;

  constructor(use: T, onWake: Wake) {
    this.use = use;
    this.watching = [use];
    this.onWake = onWake;
  }

  get usedTube(): string {
    return this.use.name;
  }

  watchedTubes(): string[] {
    return this.watching.map((t) => t.name);
  }

  get isWaiting(): boolean {
    return this.waitNodes !== null;
  }

  /** Wait on every watched tube until now + timeoutMs. */
  enterWait(now: number, timeoutMs: number): void {
    this.waitNodes = this.watching.map((t) => t.addWaiter(this));
    this.waitUntil = now + timeoutMs;
  }

  /** The wait ends (the caller says why, if it must). */
  leaveWait(): void {
    for (const n of this.waitNodes!) n.tube.removeWaiter(n);
    this.waitNodes = null;
    this.wakeAt = this.waitUntil = Infinity;
  }
}

/**
 * Every tube that exists on this node, by name and in list-tubes order, and the tube
 * commands. Tubes are made when first referred to and dropped as soon as nothing refers
 * to them; "default" always exists. The list is an unordered multiset as in 1.12: new
 * tubes are appended and a dropped tube's slot takes the last one, which is the order
 * list-tubes shows.
 */
export class TubeList<T extends NodeTube<unknown>, C extends NodeClient<T>> {
  readonly #byName = new Map<string, T>();
  readonly #list: T[] = [];
  readonly #make: (name: string) => T;
  readonly default: T;

  constructor(make: (name: string) => T) {
    this.#make = make;
    this.default = this.obtain("default");
  }

  get size(): number {
    return this.#list.length;
  }

  get(name: string): T | undefined {
    return this.#byName.get(name);
  }

  /** The tube of that name, made if needed. */
  obtain(name: string): T {
    let t = this.#byName.get(name);
    if (!t) {
      t = this.#make(name);
      this.#byName.set(name, t);
      t.listSlot = this.#list.length;
      this.#list.push(t);
    }
    return t;
  }

  /** Drop t if nothing refers to it any more. Returns true if dropped. */
  dropIfUnused(t: T): boolean {
    if (t === this.default || !t.unreferenced || t.listSlot < 0) return false;
    this.#byName.delete(t.name);
    const last = this.#list.pop()!;
    if (last !== t) {
      this.#list[t.listSlot] = last;
      last.listSlot = t.listSlot;
    }
    t.listSlot = -1;
    return true;
  }

  /** In list-tubes order. */
  all(): readonly T[] {
    return this.#list;
  }

  /** A new connection uses and watches "default". */
  join(make: (use: T) => C): C {
    const t = this.default;
    t.using++;
    t.watching++;
    return make(t);
  }

  /** A connection closed: it refers to its tubes no more (they go if nothing else keeps them). */
  leave(c: C): void {
    c.use.using--;
    this.dropIfUnused(c.use);
    for (const t of c.watching) {
      t.watching--;
      this.dropIfUnused(t);
    }
    c.watching.length = 0;
  }

  use(c: C, name: string): T {
    const t = this.obtain(name);
    if (t !== c.use) {
      const old = c.use;
      t.using++;
      old.using--;
      c.use = t;
      this.dropIfUnused(old);
    }
    return t;
  }

  /** Returns the watch count. */
  watch(c: C, name: string): number {
    const t = this.obtain(name);
    if (!c.watching.includes(t)) {
      c.watching.push(t);
      t.watching++;
    }
    return c.watching.length;
  }

  /** Returns the watch count, or NOT_IGNORED when t is the only watched tube. Never makes a tube. */
  ignore(c: C, name: string): number | "NOT_IGNORED" {
    const t = this.get(name);
    const i = t ? c.watching.indexOf(t) : -1;
    if (i < 0) return c.watching.length;
    if (c.watching.length === 1) return "NOT_IGNORED";
    c.watching[i] = c.watching[c.watching.length - 1]!;
    c.watching.pop();
    t!.watching--;
    this.dropIfUnused(t!);
    return c.watching.length;
  }
}
