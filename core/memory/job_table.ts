// Every job by id: an open-addressing hash table (linear probing) over one array of
// the jobs themselves, in place of a Map<number, Job>.
//
// Why: memory per job is a goal, and a Map entry costs ~63 bytes on Bun (~36 on Deno)
// against 8 bytes a slot here (10-32 per job at a load between 1/8 and 3/4); a slot
// holds the job itself, whose id is the key. Ids are scattered by Fibonacci hashing:
// consecutive ids in consecutive slots would form one long run that every miss (a
// peek of an unknown id) and every deletion would have to walk. Deletion shifts the
// entries after the hole back (no tombstones), and the table shrinks as it empties,
// so a drained queue hands its memory back.

const MIN_CAPACITY = 64;

export class JobTable<V extends { readonly id: number }> {
  #slots: (V | undefined)[] = emptySlots(MIN_CAPACITY);
  #mask = MIN_CAPACITY - 1;
  /** 32 - log2(capacity): the hash's top bits pick the slot. */
  #shift = 32 - Math.log2(MIN_CAPACITY);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(id: number): V | undefined {
    const slots = this.#slots;
    const mask = this.#mask;
    for (let i = slotOf(id, this.#shift);; i = (i + 1) & mask) {
      const v = slots[i];
      if (v === undefined || v.id === id) return v;
    }
  }

  /** Add `value` under its id, or replace the value with that id. Ids are positive integers. */
  set(value: V): void {
    if ((this.#size + 1) * 4 > this.#slots.length * 3) this.#resize(this.#slots.length * 2);
    const slots = this.#slots;
    const mask = this.#mask;
    const id = value.id;
    let i = slotOf(id, this.#shift);
    for (let v = slots[i]; v !== undefined; v = slots[i]) {
      if (v.id === id) {
        slots[i] = value;
        return;
      }
      i = (i + 1) & mask;
    }
    slots[i] = value;
    this.#size++;
  }

  delete(id: number): boolean {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = slotOf(id, this.#shift);
    for (let v = slots[i]; v === undefined || v.id !== id; v = slots[i]) {
      if (v === undefined) return false;
      i = (i + 1) & mask;
    }
    // Backward shift: move into the hole every later entry of the run whose home slot
    // is not cyclically in (hole, its slot], so that no lookup stops early at the hole.
    for (let j = (i + 1) & mask, v = slots[j]; v !== undefined; j = (j + 1) & mask, v = slots[j]) {
      const home = slotOf(v.id, this.#shift);
      if (i < j ? home > i && home <= j : home > i || home <= j) continue;
      slots[i] = v;
      i = j;
    }
    slots[i] = undefined;
    this.#size--;
    if (slots.length > MIN_CAPACITY && this.#size * 8 < slots.length) this.#resize(slots.length / 2);
    return true;
  }

  #resize(capacity: number): void {
    const old = this.#slots;
    this.#slots = emptySlots(capacity);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
    this.#size = 0;
    for (const v of old) if (v !== undefined) this.set(v);
  }
}

/** An array of n undefined slots (filled, so that engines keep it a plain array of pointers). */
function emptySlots<V>(n: number): (V | undefined)[] {
  return new Array<V | undefined>(n).fill(undefined);
}

/** Home slot: the top bits of the id (both 32-bit halves) times 2^32 / the golden ratio. */
function slotOf(id: number, shift: number): number {
  return Math.imul((id >>> 0) ^ (id / 4294967296), 0x9e3779b1) >>> shift;
}
