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

  /** `write` puts n bytes into buf[at, at + n) (`v` views all of buf). If it throws, nothing is added. */
  add(n: number, covered: boolean, write: (buf: Uint8Array, v: DataView, at: number) => void): void {
    const at = this.#size;
    if (at + n > this.#buf.length) {
      const grown = new Uint8Array(Math.max(at + n, 2 * this.#buf.length));
      grown.set(this.#buf.subarray(0, at));
      this.#setBuf(grown);
    }
    write(this.#buf, this.#view, at);
    this.#size = at + n;
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
