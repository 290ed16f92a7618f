// Every tube that exists, by name and in list-tubes order. Tubes are created when
// first referred to and removed as soon as nothing refers to them; "default" always
// exists. The list is an unordered multiset as in 1.12: new tubes are appended and a
// removed tube's slot takes the last one, which is the order list-tubes shows.
import { Tube } from "./model.ts";

export class Tubes {
  readonly #byName = new Map<string, Tube>();
  readonly #list: Tube[] = [];
  readonly default: Tube;

  constructor() {
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
  all(): readonly Tube[] {
    return this.#list;
  }
}
