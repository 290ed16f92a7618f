// The write buffer: records added since the last flush, all for the current file, kept
// as bytes so that a batch goes to the file in one append (segments.ts writes it).
// It grows for a big batch and is dropped back to its starting size after one.

const PENDING_START = 64 * 1024;
const PENDING_KEEP = 1024 * 1024;

export class Pending {
  #buf: Uint8Array<ArrayBuffer> = new Uint8Array(PENDING_START);
  #view: DataView<ArrayBuffer> = new DataView(this.#buf.buffer);
  #size = 0;
  /** Bytes of pending records the ballast stands for (see ballast.ts). */
  #covered = 0;

  /** Bytes added and not yet taken. */
  get size(): number {
    return this.#size;
  }

  /** The buffer records are encoded into (replaced by a claim() that grows it). */
  get buf(): Uint8Array {
    return this.#buf;
  }

  /** A view of all of buf. */
  get view(): DataView {
    return this.#view;
  }

  /**
   * Room for n more bytes: returns where they go in buf. They are added only by the
   * commit(n) that follows (a record that fails to encode is simply not committed), so
   * a record is encoded straight into the buffer, with no closure or copy between.
   */
  claim(n: number): number {
    const at = this.#size;
    if (at + n > this.#buf.length) {
      const grown = new Uint8Array(Math.max(at + n, 2 * this.#buf.length));
      grown.set(this.#buf.subarray(0, at));
      this.#setBuf(grown);
    }
    return at;
  }

  /** The n bytes written at claim(n)'s offset are added. */
  commit(n: number, covered: boolean): void {
    this.#size += n;
    if (covered) this.#covered += n;
  }

  /**
   * Empty the buffer: the bytes (valid until shrink() or the next add()) and how many
   * of them the ballast stands for.
   */
  take(): { bytes: Uint8Array; covered: number } {
    const taken = { bytes: this.#buf.subarray(0, this.#size), covered: this.#covered };
    this.#size = 0;
    this.#covered = 0;
    return taken;
  }

  /** Do not keep a buffer grown by one big batch. */
  shrink(): void {
    if (this.#buf.length > PENDING_KEEP) this.#setBuf(new Uint8Array(PENDING_START));
  }

  #setBuf(b: Uint8Array<ArrayBuffer>): void {
    this.#buf = b;
    this.#view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
}
