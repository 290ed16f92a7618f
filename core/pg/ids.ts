// Job ids for a node. 1.12 takes a put's id when it reads the put line, so takeId() is
// synchronous: a node holds a block of ID_BLOCK ids from the database's sequence (which
// steps by ID_BLOCK, so blocks never overlap between nodes or lives) and fetches the
// next block when half of this one is used. Ids are unique cluster-wide and increase
// per node; across nodes they interleave by block (docs/pg.md).
import { ID_BLOCK } from "./schema.ts";

export class IdBlocks {
  #next: number;
  #end: number;
  #spare: number | undefined;
  #fetching = false;
  /** Asks the database for the start of a new block. */
  readonly #fetch: () => Promise<number>;
  readonly #error: (why: unknown) => void;

  constructor(first: number, fetch: () => Promise<number>, error: (why: unknown) => void) {
    this.#next = first;
    this.#end = first + ID_BLOCK;
    this.#fetch = fetch;
    this.#error = error;
  }

  /** The next id; throws (the command answers INTERNAL_ERROR) when both blocks are used up. */
  take(): number {
    if (this.#next >= this.#end) {
      if (this.#spare === undefined) throw new Error("no job ids: the next block has not come yet");
      this.#next = this.#spare;
      this.#end = this.#spare + ID_BLOCK;
      this.#spare = undefined;
    }
    if (this.#spare === undefined && !this.#fetching && this.#end - this.#next <= ID_BLOCK / 2) {
      this.#fetching = true;
      this.#fetch().then(
        (start) => {
          this.#fetching = false;
          this.#spare = start;
        },
        (e) => {
          this.#fetching = false;
          this.#error(e);
        },
      );
    }
    return this.#next++;
  }
}
