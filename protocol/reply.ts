// Replies: a closed set of pre-encoded constants, plus an output buffer that writes
// numbers and bodies without building strings. One connection fills one Output per
// batch of commands, and the whole batch goes to the socket in one write.

function ascii(s: string): Uint8Array {
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
}

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

/** Bodies at least this big are queued by reference instead of copied. */
const BIG = 64 * 1024;
const MIN_OUT = 256;

/**
 * A connection's pending output. Small pieces are copied into a growable buffer;
 * big bodies are queued by reference (job bodies are never mutated). take() hands the
 * filled buffer over and switches to a spare, so the filled one can be written
 * asynchronously while the next batch is encoded.
 */
export class Output {
  #buf: Uint8Array = new Uint8Array(MIN_OUT);
  /** Buffers this Output allocated (queued job bodies are not ours to reuse). */
  #own = new WeakSet<ArrayBufferLike>([this.#buf.buffer]);
  #spare: Uint8Array | null = null;
  #len = 0;
  /** Sealed pieces waiting to go out before #buf. */
  #queue: Uint8Array[] = [];
  #queued = 0;

  /** Bytes pending. */
  get size(): number {
    return this.#queued + this.#len;
  }

  bytes(b: Uint8Array): void {
    if (b.length >= BIG) {
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

  /** A non-negative integer in decimal. */
  uint(v: number): void {
    this.#room(20);
    const buf = this.#buf;
    if (v < 10) {
      buf[this.#len++] = 48 + v;
      return;
    }
    const s = String(v);
    for (let i = 0; i < s.length; i++) buf[this.#len++] = s.charCodeAt(i);
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
    this.#buf[this.#len++] = 32;
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
    this.#queue = [];
    this.#queued = 0;
    return q;
  }

  /** The pieces from take() have been written: their buffer may be reused. */
  release(pieces: Uint8Array[]): void {
    for (const p of pieces) {
      const b = p.buffer;
      if (this.#own.has(b) && b !== this.#buf.buffer && b.byteLength <= BIG * 4) {
        if (!this.#spare || this.#spare.byteLength < b.byteLength) this.#spare = new Uint8Array(b);
      }
    }
  }

  #seal(): void {
    if (this.#len === 0) return;
    this.#queue.push(this.#buf.subarray(0, this.#len));
    this.#queued += this.#len;
    const spare = this.#spare;
    this.#spare = null;
    this.#buf = spare ?? this.#alloc(Math.max(MIN_OUT, Math.min(this.#buf.length, BIG)));
    this.#len = 0;
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const nb = this.#alloc(size);
    nb.set(this.#buf.subarray(0, this.#len));
    this.#buf = nb;
  }

  #alloc(size: number): Uint8Array {
    const b = new Uint8Array(size);
    this.#own.add(b.buffer);
    return b;
  }
}
