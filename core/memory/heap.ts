// An indexed binary min-heap: every item records its own position, so any item can be
// removed in O(log n) (beanstalkd heap.c). Ties are broken by the caller's `less`
// (for jobs: id), which makes the order total and deterministic.

/** Reads and writes an item's slot number; -1 means "not in this heap". */
export interface Slot<T> {
  get(item: T): number;
  set(item: T, index: number): void;
}

export class Heap<T> {
  readonly #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;
  readonly #slot: Slot<T>;

  constructor(less: (a: T, b: T) => boolean, slot: Slot<T>) {
    this.#less = less;
    this.#slot = slot;
  }

  get size(): number {
    return this.#items.length;
  }

  /** Every item, in heap order (not sorted); for read-only scans such as the dashboard's. */
  get items(): readonly T[] {
    return this.#items;
  }

  /** The least item, without removing it. */
  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    this.#slot.set(item, items.length - 1);
    this.#up(items.length - 1);
  }

  /** Remove and return the least item. */
  pop(): T | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  /** Remove an item known to be in this heap. */
  remove(item: T): void {
    const i = this.#slot.get(item);
    if (i >= 0 && this.#items[i] === item) this.removeAt(i);
  }

  /** True when this exact item is in this heap. */
  has(item: T): boolean {
    const i = this.#slot.get(item);
    return i >= 0 && this.#items[i] === item;
  }

  removeAt(i: number): void {
    const items = this.#items;
    const gone = items[i]!;
    const last = items.pop()!;
    this.#slot.set(gone, -1);
    if (i === items.length) return;
    items[i] = last;
    this.#slot.set(last, i);
    if (i > 0 && this.#less(last, items[(i - 1) >> 1]!)) this.#up(i);
    else this.#down(i);
  }

  /** Items in heap (not sorted) order, for iteration that does not care about order. */
  values(): readonly T[] {
    return this.#items;
  }

  #up(i: number): void {
    const items = this.#items;
    const item = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (!this.#less(item, parent)) break;
      items[i] = parent;
      this.#slot.set(parent, i);
      i = p;
    }
    items[i] = item;
    this.#slot.set(item, i);
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && this.#less(items[c + 1]!, items[c]!)) c++;
      const child = items[c]!;
      if (!this.#less(child, item)) break;
      items[i] = child;
      this.#slot.set(child, i);
      i = c;
    }
    items[i] = item;
    this.#slot.set(item, i);
  }
}
