// Where job bodies live. A body of its own ArrayBuffer costs a buffer object and a
// separately allocated backing store each (hundreds of bytes and GC work per job), so
// small bodies are cut from shared slabs instead: each body is a view, and a slab is
// freed by the GC once no body on it is alive. Bodies are never mutated after the
// put, so sharing is safe.
//
// The price is fragmentation: one long-lived job keeps its whole slab alive. Slabs
// are small (SLAB bytes) and only bodies up to SMALL bytes use them, which bounds the
// waste per surviving job; queues are mostly first-in first-out, where slabs empty
// in order.

const SLAB = 32 * 1024;
const SMALL = 2048;

export class BodyArena {
  #slab = new Uint8Array(0);
  #used = 0;

  /** A zeroed-or-stale buffer of n bytes that the caller fills completely. */
  alloc(n: number): Uint8Array {
    if (n > SMALL) return new Uint8Array(n);
    if (this.#used + n > this.#slab.length) {
      this.#slab = new Uint8Array(SLAB);
      this.#used = 0;
    }
    const b = this.#slab.subarray(this.#used, this.#used + n);
    this.#used += n;
    return b;
  }
}
