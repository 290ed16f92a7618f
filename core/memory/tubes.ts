// Every tube that exists, by name and in list-tubes order. Tubes are created when
// first referred to and removed as soon as nothing refers to them; "default" always
// exists. The list is an unordered multiset as in 1.12: new tubes are appended and a
// removed tube's slot takes the last one, which is the order list-tubes shows.
//
// The tube commands a client gives (use, watch, ignore) live here too: they change only
// which tubes exist and who refers to them.
import { type Client, Tube } from "./model.ts";

export class Tubes {
  readonly #byName = new Map<string, Tube>();
  readonly #list: Tube[] = [];
  readonly default: Tube;
  /** Paused tubes, for the timer to unpause. */
  readonly paused = new Set<Tube>();
  /** What else keeps an unreferenced tube (the PostgreSQL engine: jobs it knows the database holds). */
  readonly #held: (t: Tube) => boolean;

  constructor(held: (t: Tube) => boolean = () => false) {
    this.#held = held;
    this.default = this.obtain("default");
  }

  get size(): number {
    return this.#list.length;
  }

  get(name: string): Tube | undefined {
    return this.#byName.get(name);
  }

  /** The tube of that name, created if needed. */
  obtain(name: string): Tube {
    let t = this.#byName.get(name);
    if (!t) {
      t = new Tube(name);
      this.#byName.set(name, t);
      t.listSlot = this.#list.length;
      this.#list.push(t);
    }
    return t;
  }

  /** Remove t if nothing refers to it any more (a pause keeps nothing alive). Returns true if removed. */
  dropIfUnused(t: Tube): boolean {
    if (t === this.default || !t.unreferenced || t.listSlot < 0 || this.#held(t)) return false;
    this.#byName.delete(t.name);
    const last = this.#list.pop()!;
    if (last !== t) {
      this.#list[t.listSlot] = last;
      last.listSlot = t.listSlot;
    }
    t.listSlot = -1;
    this.paused.delete(t);
    return true;
  }

  /** In list-tubes order. */
  all(): readonly Tube[] {
    return this.#list;
  }

  // ---- tube commands ------------------------------------------------------------

  use(c: Client, name: string): Tube {
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
  watch(c: Client, name: string): number {
    const t = this.obtain(name);
    if (!c.watching.includes(t)) {
      c.watching.push(t);
      t.watching++;
    }
    return c.watching.length;
  }

  /** Returns the watch count, or NOT_IGNORED when t is the only watched tube. Never creates a tube. */
  ignore(c: Client, name: string): number | "NOT_IGNORED" {
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
