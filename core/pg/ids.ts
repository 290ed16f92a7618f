// Job ids for a node. 1.12 takes a put's id when it reads the put line, so take() is
// synchronous: a node holds a block of ID_BLOCK ids from the database's sequence (which
// steps by ID_BLOCK, so blocks never overlap between nodes or lives) and fetches the
// next block when half of this one is used. Ids are unique cluster-wide and increase
// per node; across nodes they interleave by block (docs/pg.md).
//
// A flood can use up the rest of a block before the next one comes (the database slow to
// answer, or away): the puts read meanwhile wait for it, as they wait for a slow commit,
// and take their ids in the order they asked once it comes.
import { ID_BLOCK } from "./schema.ts";

/** A put's id while none was left when its line was read: it takes one with next() (ids start at 1). */
export const NO_ID_YET = 0;

interface Waiter {
  resolve: (id: number) => void;
  reject: (why: unknown) => void;
}

export class IdBlocks {
  #next: number;
  #end: number;
  #spare: number | undefined;
  #fetching = false;
  /** Those waiting for an id from the next block, in the order they asked (while any wait, it is being fetched). */
  readonly #waiting: Waiter[] = [];
  /** Asks the database for the start of a new block. */
  readonly #fetch: () => Promise<number>;
  readonly #error: (why: unknown) => void;

  constructor(first: number, fetch: () => Promise<number>, error: (why: unknown) => void) {
    this.#next = first;
    this.#end = first + ID_BLOCK;
    this.#fetch = fetch;
    this.#error = error;
  }

  /** The next id; undefined while none is left until the next block comes (then next()). */
  take(): number | undefined {
    // those already waiting come first
    if (this.#waiting.length > 0) return undefined;
    return this.#take();
  }

  /** The next id once there is one: at once, or when the next block comes; rejected when fetching it failed. */
  next(): Promise<number> {
    const id = this.take();
    if (id !== undefined) return Promise.resolve(id);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  #take(): number | undefined {
    if (this.#next >= this.#end) {
      if (this.#spare === undefined) {
        this.#fetchNext();
        return undefined;
      }
      this.#next = this.#spare;
      this.#end = this.#spare + ID_BLOCK;
      this.#spare = undefined;
    }
    if (this.#end - this.#next <= ID_BLOCK / 2) this.#fetchNext();
    return this.#next++;
  }

  #fetchNext(): void {
    if (this.#spare !== undefined || this.#fetching) return;
    this.#fetching = true;
    this.#fetch().then(
      (start) => {
        this.#fetching = false;
        this.#spare = start;
        // more waiting than a block holds: #take() asked for the one after
        let id: number | undefined;
        while (this.#waiting.length > 0 && (id = this.#take()) !== undefined) this.#waiting.shift()!.resolve(id);
      },
      (e) => {
        this.#fetching = false;
        this.#error(e);
        for (const w of this.#waiting.splice(0)) w.reject(e);
      },
    );
  }
}
