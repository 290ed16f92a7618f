// Framing: bytes in, command lines and put bodies out. A push parser: it never awaits
// and never touches a socket. Its modes are beanstalkd's connection states: want a
// command line, discard an over-long line, want a body, swallow an oversized body.
//
// push() parses a chunk where it lies (the adapter's read buffer) when nothing is
// left over from before: command lines are reported as index ranges into `buf`, so
// scanning copies and allocates nothing. Only bytes left unconsumed when the caller is
// done with a chunk (a partly read command line, or commands a stalled connection has
// not processed yet) are copied, by release(), into a buffer of the parser's own,
// which is dropped again once it is consumed: an idle connection holds no input
// buffer at all. Bodies are copied once, into their own Uint8Array.

import { CR, LF } from "./bytes.ts";

/** Result codes of next(). */
export const NEED_MORE = 0;
/** A command line is at lineBuf[lineStart, lineEnd) (CRLF excluded). */
export const LINE = 1;
/** An over-long line was discarded through its CRLF: reply BAD_FORMAT once. */
export const OVERLONG = 2;
/** The body asked for with expectBody() is complete in `body`. */
export const BODY = 3;
/** The bytes asked for with skip() have all been swallowed. */
export const SKIPPED = 4;

/** What next() reports: a literal union, so a switch over it can be checked for completeness. */
export type ParseEvent = typeof NEED_MORE | typeof LINE | typeof OVERLONG | typeof BODY | typeof SKIPPED;

/** beanstalkd's line buffer, CRLF included: enough for the longest legal command. */
export const LINE_MAX = 224;

const MODE_LINE = 0;
const MODE_DISCARD = 1;
const MODE_BODY = 2;
const MODE_SKIP = 3;

const MIN_BUF = 1024;
const EMPTY = new Uint8Array(0);
/** Bodies (or their parts in one chunk) up to this size are copied byte by byte (see #bodyBytes). */
const SMALL_COPY = 128;

export class Parser {
  /** The input: a pushed chunk, or the parser's own buffer; bytes [r, w) are received and not yet consumed. */
  #buf: Uint8Array = EMPTY;
  #r = 0;
  #w = 0;
  #lineStart = 0;
  #lineEnd = 0;
  #body: Uint8Array = EMPTY;

  #mode = MODE_LINE;
  /** Where the CR search resumes in the current partial line (absolute index). */
  #scan = 0;
  /** In discard mode: the last byte discarded was a CR (its LF may come next). */
  #discardCR = false;
  #bodyHave = 0;
  #skipLeft = 0;

  /** `buf` is the caller's chunk, not ours: it must be copied before the caller reuses it. */
  #borrowed = false;
  readonly #minBuf: number;
  readonly #alloc: (n: number) => Uint8Array;

  /** `minBuf`: smallest own buffer; `alloc` provides body buffers (a shared BodyArena in the server). */
  constructor(minBuf = MIN_BUF, alloc: (n: number) => Uint8Array = (n) => new Uint8Array(n)) {
    this.#minBuf = minBuf;
    this.#alloc = alloc;
  }

  /** After LINE: the command line is lineBuf[lineStart, lineEnd) (CRLF excluded), valid until the next call. */
  get lineBuf(): Uint8Array {
    return this.#buf;
  }
  /** See lineBuf. */
  get lineStart(): number {
    return this.#lineStart;
  }
  /** See lineBuf. */
  get lineEnd(): number {
    return this.#lineEnd;
  }
  /** After BODY: the completed body, its trailing CRLF included. */
  get body(): Uint8Array {
    return this.#body;
  }
  /** The size of the input buffer held (0 when idle): for memory bounds. */
  get heldBytes(): number {
    return this.#buf.length;
  }

  /** Throwing input away: the rest of an over-long line, or a body too big to keep. */
  get discarding(): boolean {
    return this.#mode === MODE_DISCARD || this.#mode === MODE_SKIP;
  }

  /** Bytes received but not yet consumed. */
  get buffered(): number {
    return this.#w - this.#r;
  }

  /**
   * Received bytes. With nothing left over they are parsed in place: the chunk must
   * stay unchanged until release() (or the next push()). Otherwise they are appended
   * to the leftover, in the parser's own buffer.
   */
  push(chunk: Uint8Array): void {
    if (this.#r === this.#w) {
      this.#buf = chunk;
      this.#r = this.#scan = 0;
      this.#w = chunk.length;
      this.#borrowed = true;
      return;
    }
    if (this.#borrowed) this.#relocate(Math.max(this.#minBuf, this.#w - this.#r + chunk.length));
    else if (this.#buf.length - this.#w < chunk.length) {
      let size = Math.max(this.#buf.length, this.#minBuf);
      while (size - (this.#w - this.#r) < chunk.length) size *= 2;
      this.#relocate(size);
    }
    this.#buf.set(chunk, this.#w);
    this.#w += chunk.length;
  }

  /**
   * The caller is done with the last chunk pushed (it may reuse it now): keep what is
   * left of it in a buffer of our own, and hold no buffer when nothing is left.
   */
  release(): void {
    if (this.#r === this.#w) {
      this.#buf = EMPTY;
      this.#r = this.#w = this.#scan = 0;
      this.#borrowed = false;
    } else if (this.#borrowed) {
      this.#relocate(Math.max(this.#minBuf, this.#w - this.#r));
    }
  }

  /** After a put line: the next n bytes (body + CRLF) form the body. */
  expectBody(n: number): void {
    this.#body = this.#alloc(n);
    this.#bodyHave = 0;
    this.#mode = MODE_BODY;
  }

  /** After an oversized put line: swallow the next n bytes. */
  skip(n: number): void {
    this.#skipLeft = n;
    this.#mode = MODE_SKIP;
  }

  /**
   * The next input is a whole command line (next() will return LINE) that begins with
   * `prefix`; nothing is consumed.
   */
  lineNextStarts(prefix: Uint8Array): boolean {
    if (this.#mode !== MODE_LINE) return false;
    const buf = this.#buf, r = this.#r, w = this.#w;
    if (w - r < prefix.length) return false;
    for (let i = 0; i < prefix.length; i++) if (buf[r + i] !== prefix[i]) return false;
    // the line ends at its first CRLF, as next() reads it
    for (let i = r; i + 1 < w && i + 2 - r <= LINE_MAX; i++) {
      if (buf[i] === CR && buf[i + 1] === LF) return true;
    }
    return false;
  }

  /** Advance; returns one of NEED_MORE, LINE, OVERLONG, BODY, SKIPPED. */
  next(): ParseEvent {
    switch (this.#mode) {
      case MODE_LINE:
        return this.#line();
      case MODE_DISCARD:
        return this.#discard();
      case MODE_BODY:
        return this.#bodyBytes();
      default:
        return this.#skip();
    }
  }

  #line(): ParseEvent {
    const buf = this.#buf;
    const w = this.#w;
    const r = this.#r;
    let i = this.#scan > r ? this.#scan : r;
    // A line ends at the first CR that is followed by LF (1.12 looks only at the first
    // CR, so "abc\rdef\r\n" would hang until the overflow rule fired; we do not copy that).
    for (;;) {
      const cr = i < w ? buf.indexOf(CR, i) : -1;
      if (cr < 0 || cr >= w) {
        i = w;
        break;
      }
      if (cr + 1 >= w) {
        i = cr;
        break;
      }
      if (buf[cr + 1] === LF) {
        this.#r = cr + 2;
        this.#scan = this.#r;
        if (cr + 2 - r > LINE_MAX) return OVERLONG;
        this.#lineStart = r;
        this.#lineEnd = cr;
        return LINE;
      }
      i = cr + 1;
    }
    if (w - r >= LINE_MAX) {
      // No CRLF within the line limit: drop what we have and discard up to the next CRLF.
      this.#discardCR = buf[w - 1] === CR;
      this.#r = this.#w = this.#scan = 0;
      this.#mode = MODE_DISCARD;
      return NEED_MORE;
    }
    this.#scan = i;
    return NEED_MORE;
  }

  #discard(): ParseEvent {
    const buf = this.#buf;
    const w = this.#w;
    let i = this.#r;
    if (i < w && this.#discardCR && buf[i] === LF) {
      this.#r = i + 1;
      this.#mode = MODE_LINE;
      this.#discardCR = false;
      return OVERLONG;
    }
    for (;;) {
      const cr = i < w ? buf.indexOf(CR, i) : -1;
      if (cr < 0 || cr >= w - 1) break;
      if (buf[cr + 1] === LF) {
        this.#r = this.#scan = cr + 2;
        this.#mode = MODE_LINE;
        this.#discardCR = false;
        return OVERLONG;
      }
      i = cr + 1;
    }
    this.#discardCR = w > this.#r && buf[w - 1] === CR;
    this.#r = this.#w = this.#scan = 0;
    return NEED_MORE;
  }

  #bodyBytes(): ParseEvent {
    const need = this.#body.length - this.#bodyHave;
    const n = Math.min(need, this.#w - this.#r);
    if (n > 0) {
      const body = this.#body;
      const buf = this.#buf;
      const r = this.#r;
      if (n <= SMALL_COPY) {
        // Byte by byte: a subarray for set() would be a view object per body.
        for (let i = 0, at = this.#bodyHave; i < n; i++) body[at + i] = buf[r + i]!;
      } else body.set(buf.subarray(r, r + n), this.#bodyHave);
      this.#bodyHave += n;
      this.#r = r + n;
    }
    if (this.#bodyHave < this.#body.length) return NEED_MORE;
    this.#mode = MODE_LINE;
    this.#scan = this.#r;
    return BODY;
  }

  #skip(): ParseEvent {
    const n = Math.min(this.#skipLeft, this.#w - this.#r);
    this.#skipLeft -= n;
    this.#r += n;
    if (this.#skipLeft > 0) return NEED_MORE;
    this.#mode = MODE_LINE;
    this.#scan = this.#r;
    return SKIPPED;
  }

  /** Move the unconsumed bytes to the start of a buffer of ours of `size` bytes. */
  #relocate(size: number): void {
    const len = this.#w - this.#r;
    const scan = this.#scan - this.#r;
    if (size === this.#buf.length && !this.#borrowed) {
      this.#buf.copyWithin(0, this.#r, this.#w);
    } else {
      const nb = new Uint8Array(size);
      nb.set(this.#buf.subarray(this.#r, this.#w));
      this.#buf = nb;
      this.#borrowed = false;
    }
    this.#r = 0;
    this.#w = len;
    this.#scan = scan > 0 ? scan : 0;
  }
}
