// Replies: a closed set of pre-encoded constants, plus an output buffer that writes
// numbers and bodies without building strings. One connection fills one Output per
// batch of commands, and the whole batch goes to the socket in one write.
import { ascii, DIGIT_0, SP } from "./bytes.ts";

export const R = {
  OUT_OF_MEMORY: ascii("OUT_OF_MEMORY\r\n"),
  INTERNAL_ERROR: ascii("INTERNAL_ERROR\r\n"),
  BAD_FORMAT: ascii("BAD_FORMAT\r\n"),
  UNKNOWN_COMMAND: ascii("UNKNOWN_COMMAND\r\n"),
  EXPECTED_CRLF: ascii("EXPECTED_CRLF\r\n"),
  JOB_TOO_BIG: ascii("JOB_TOO_BIG\r\n"),
  DRAINING: ascii("DRAINING\r\n"),
  NOT_FOUND: ascii("NOT_FOUND\r\n"),
  NOT_IGNORED: ascii("NOT_IGNORED\r\n"),
  TIMED_OUT: ascii("TIMED_OUT\r\n"),
  DEADLINE_SOON: ascii("DEADLINE_SOON\r\n"),
  DELETED: ascii("DELETED\r\n"),
  RELEASED: ascii("RELEASED\r\n"),
  BURIED: ascii("BURIED\r\n"),
  TOUCHED: ascii("TOUCHED\r\n"),
  KICKED: ascii("KICKED\r\n"),
  PAUSED: ascii("PAUSED\r\n"),
  // Prefixes of replies that carry values.
  INSERTED_: ascii("INSERTED "),
  BURIED_: ascii("BURIED "),
  RESERVED_: ascii("RESERVED "),
  FOUND_: ascii("FOUND "),
  KICKED_: ascii("KICKED "),
  WATCHING_: ascii("WATCHING "),
  USING_: ascii("USING "),
  OK_: ascii("OK "),
  CRLF: ascii("\r\n"),
} as const;

/**
 * Bodies at least this big are queued by reference instead of copied: many clients
 * peeking or reserving one big job must not each hold a copy of it (1.12 sends the
 * job's own buffer too). Smaller ones are copied, so a batch of replies is one write.
 */
const BY_REFERENCE = 16 * 1024;
/**
 * The biggest buffer an Output keeps for reuse once its replies are written: enough
 * for the usual batch, small enough that idle connections hold little.
 */
const KEEP = 4 * 1024;
const MIN_OUT = 256;
const NONE = new Uint8Array(0);
/** The most idle connections' output buffers a pool keeps (see Output.idle). */
const POOL_MAX = 64;

/**
 * A connection's pending output. Small pieces are copied into a growable buffer;
 * big bodies are queued by reference (job bodies are never mutated). take() hands the
 * filled buffer over and switches to a spare, so the filled one can be written
 * asynchronously while the next batch is encoded.
 */
export class Output {
  /** Allocated at the first reply: a connection that never gets one holds no buffer. */
  #buf: Uint8Array = NONE;
  /** Where an idle output leaves its buffers, and a busy one takes one (ConnectionContext.spareBuffers). */
  readonly #pool: Uint8Array[];
  /** Our buffers sealed since the last take() (queued job bodies are not ours to reuse). */
  #sealed: Uint8Array[] = [];
  /** Our buffers among the pieces the last take() handed out: reusable once they are written. */
  #taken: Uint8Array[] = [];
  #spare: Uint8Array | null = null;
  #len = 0;
  /** Sealed pieces waiting to go out before #buf. */
  #queue: Uint8Array[] = [];
  /** The array the last take() handed out, reused for the queue once release() says it is written. */
  #handed: Uint8Array[] = [];
  /** Our buffer that the last takeOne() handed out: reusable once it is written. */
  #takenOne: Uint8Array | null = null;
  #queued = 0;

  /** `pool`: shared with other connections' outputs (none given: a pool of its own). */
  constructor(pool: Uint8Array[] = []) {
    this.#pool = pool;
  }

  /** Bytes pending. */
  get size(): number {
    return this.#queued + this.#len;
  }

  /** Bytes of the buffers this output holds for encoding (not counting pieces handed out): for memory bounds. */
  get heldBytes(): number {
    return this.#buf.length + (this.#spare?.length ?? 0);
  }

  bytes(b: Uint8Array): void {
    if (b.length >= BY_REFERENCE) {
      this.#seal();
      this.#queue.push(b);
      this.#queued += b.length;
      return;
    }
    this.#room(b.length);
    this.#buf.set(b, this.#len);
    this.#len += b.length;
  }

  /** ASCII text (names, YAML): one byte per char, so only pass ASCII. */
  text(s: string): void {
    this.#room(s.length);
    const buf = this.#buf;
    let n = this.#len;
    for (let i = 0; i < s.length; i++) buf[n++] = s.charCodeAt(i);
    this.#len = n;
  }

  /** A non-negative integer in decimal (job ids and counts: below 2^53). */
  uint(v: number): void {
    this.#room(20);
    const buf = this.#buf;
    // digits written backwards after the end, then reversed in place: no string per reply
    let end = this.#len;
    do {
      const q = Math.floor(v / 10);
      buf[end++] = DIGIT_0 + (v - q * 10);
      v = q;
    } while (v > 0);
    for (let i = this.#len, j = end - 1; i < j; i++, j--) {
      const t = buf[i]!;
      buf[i] = buf[j]!;
      buf[j] = t;
    }
    this.#len = end;
  }

  /** `<prefix><n>\r\n`, e.g. INSERTED 5 */
  line(prefix: Uint8Array, n: number): void {
    this.bytes(prefix);
    this.uint(n);
    this.bytes(R.CRLF);
  }

  /** `<prefix><id> <size>\r\n<body>` (the stored body already ends in CRLF). */
  job(prefix: Uint8Array, id: number, body: Uint8Array): void {
    this.bytes(prefix);
    this.uint(id);
    this.#room(1);
    this.#buf[this.#len++] = SP;
    this.uint(body.length - 2);
    this.bytes(R.CRLF);
    this.bytes(body);
  }

  /** `OK <n>\r\n<data>\r\n` for YAML data (ASCII). */
  data(yaml: string): void {
    this.line(R.OK_, yaml.length);
    this.text(yaml);
    this.bytes(R.CRLF);
  }

  /**
   * Everything pending, as pieces to write in order. The returned buffers belong to
   * the caller until it calls release(); encoding continues into a spare meanwhile.
   */
  take(): Uint8Array[] {
    this.#seal();
    const q = this.#queue;
    this.#queue = this.#handed;
    this.#handed = q;
    this.#queued = 0;
    const taken = this.#taken;
    taken.length = 0;
    this.#taken = this.#sealed;
    this.#sealed = taken;
    return q;
  }

  /** A written buffer of ours becomes the spare if it is not big and larger than the spare. */
  #keep(b: Uint8Array): void {
    if (b.length <= KEEP && b !== this.#buf && (!this.#spare || this.#spare.length < b.length)) this.#spare = b;
  }

  /**
   * Everything pending when it is one piece of our own buffer (the usual batch: a few
   * replies, no big body), else undefined (use take()). It touches none of take()'s
   * arrays: in V8 emptying an array drops its storage, so each batch through them cost
   * two new backing stores. The piece is the caller's until release().
   */
  takeOne(): Uint8Array | undefined {
    if (this.#queued !== 0 || this.#len === 0) return undefined;
    const piece = this.#buf.subarray(0, this.#len);
    this.#takenOne = this.#buf;
    this.#buf = this.#spare ?? NONE;
    this.#spare = null;
    this.#len = 0;
    return piece;
  }

  /**
   * The pieces from the last take() (or takeOne()) have been written: one of our buffers among them
   * (not a big one) is kept for reuse, the others are left to the GC. Buffers sealed
   * since that take() are still queued, so they are not candidates.
   */
  release(): void {
    for (const b of this.#taken) this.#keep(b);
    if (this.#takenOne) {
      this.#keep(this.#takenOne);
      this.#takenOne = null;
    }
    if (this.#taken.length !== 0) this.#taken.length = 0;
    if (this.#handed.length !== 0) this.#handed.length = 0;
    // Nothing encoded since the take(): write into the kept buffer next, rather than
    // allocating another and holding both (two per idle connection).
    if (this.#buf === NONE && this.#spare) {
      this.#buf = this.#spare;
      this.#spare = null;
    }
  }

  /**
   * Nothing is pending or being written: give the buffers back to the shared pool, so
   * an idle connection holds none.
   */
  idle(): void {
    if (this.#len !== 0 || this.#queued !== 0 || this.#taken.length !== 0 || this.#takenOne) return;
    const pool = this.#pool;
    if (this.#buf !== NONE && pool.length < POOL_MAX) pool.push(this.#buf);
    if (this.#spare && pool.length < POOL_MAX) pool.push(this.#spare);
    this.#buf = NONE;
    this.#spare = null;
  }

  #seal(): void {
    if (this.#len === 0) return;
    this.#queue.push(this.#buf.subarray(0, this.#len));
    this.#sealed.push(this.#buf);
    this.#queued += this.#len;
    const spare = this.#spare;
    this.#spare = null;
    this.#buf = spare ?? NONE;
    this.#len = 0;
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    if (this.#buf === NONE && this.#pool.length > 0 && n <= MIN_OUT) {
      this.#buf = this.#pool.pop()!; // every pooled buffer has at least MIN_OUT bytes
      return;
    }
    let size = Math.max(this.#buf.length * 2, MIN_OUT);
    while (size < this.#len + n) size *= 2;
    const nb = new Uint8Array(size);
    nb.set(this.#buf.subarray(0, this.#len));
    this.#buf = nb;
  }
}
