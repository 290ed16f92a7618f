// Byte-level reply parsing and command encoding for the load generator.
// Replies are parsed straight from the received bytes (no per-reply strings on the
// hot path); every reply is checked against the beanstalkd 1.12 grammar.

export const K = {
  INSERTED: 1,
  RESERVED: 2,
  DELETED: 3,
  FOUND: 4,
  NOT_FOUND: 5,
  TIMED_OUT: 6,
  OK: 7,
  USING: 8,
  WATCHING: 9,
  OTHER: 10, // anything else (an error reply for every workload here)
} as const;
export type K = (typeof K)[keyof typeof K];

const enc = new TextEncoder();
export const bytes = (s: string): Uint8Array => enc.encode(s);
export const latin1 = (b: Uint8Array, from = 0, to = b.length): string => {
  let s = "";
  for (let i = from; i < to; i++) s += String.fromCharCode(b[i]!);
  return s;
};

const L_INSERTED = bytes("INSERTED ");
const L_RESERVED = bytes("RESERVED ");
const L_DELETED = bytes("DELETED");
const L_FOUND = bytes("FOUND ");
const L_NOT_FOUND = bytes("NOT_FOUND");
const L_TIMED_OUT = bytes("TIMED_OUT");
const L_OK = bytes("OK ");
const L_USING = bytes("USING ");
const L_WATCHING = bytes("WATCHING ");

function starts(b: Uint8Array, pos: number, end: number, lit: Uint8Array): boolean {
  if (end - pos < lit.length) return false;
  for (let i = 0; i < lit.length; i++) if (b[pos + i] !== lit[i]) return false;
  return true;
}

/** Parse an unsigned decimal in b[pos, end) that stops at a space or `end`; -1 if malformed. */
function num(b: Uint8Array, pos: number, end: number): number {
  if (pos >= end) return -1;
  let v = 0;
  let i = pos;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c === 32) break;
    if (c < 48 || c > 57) return -1;
    v = v * 10 + (c - 48);
  }
  if (i === pos) return -1;
  numEnd = i;
  return v;
}
let numEnd = 0;

/**
 * Called once per complete reply. For RESERVED/FOUND the id is `a` and the body
 * length `n`; for OK `n` is the length; for INSERTED/WATCHING `a` is the number.
 * The body (when any) is buf[bodyAt, bodyAt + n), already checked to end in CRLF.
 */
export type OnReply = (
  kind: K,
  a: number,
  n: number,
  buf: Uint8Array,
  bodyAt: number,
  lineAt: number,
  lineEnd: number,
) => void;

/**
 * Parse as many whole replies as buf holds, from 0. Returns the offset of the first
 * byte not consumed (a partial reply), or -1 - offset on a framing error.
 */
export function parse(buf: Uint8Array, onReply: OnReply): number {
  let pos = 0;
  const len = buf.length;
  while (pos < len) {
    const cr = buf.indexOf(13, pos);
    if (cr < 0 || cr + 1 >= len) return pos;
    if (buf[cr + 1] !== 10) return -1 - pos;
    const c0 = buf[pos];
    let kind: K = K.OTHER;
    let a = 0;
    let n = 0;
    let next = cr + 2;
    let bodyAt = 0;
    switch (c0) {
      case 73: // I
        if (starts(buf, pos, cr, L_INSERTED) && (a = num(buf, pos + 9, cr)) >= 0 && numEnd === cr) kind = K.INSERTED;
        break;
      case 82: // R
        if (starts(buf, pos, cr, L_RESERVED) && (a = num(buf, pos + 9, cr)) >= 0 && numEnd < cr) {
          n = num(buf, numEnd + 1, cr);
          if (n >= 0 && numEnd === cr) kind = K.RESERVED;
        }
        break;
      case 68: // D
        if (cr - pos === 7 && starts(buf, pos, cr, L_DELETED)) kind = K.DELETED;
        break;
      case 70: // F
        if (starts(buf, pos, cr, L_FOUND) && (a = num(buf, pos + 6, cr)) >= 0 && numEnd < cr) {
          n = num(buf, numEnd + 1, cr);
          if (n >= 0 && numEnd === cr) kind = K.FOUND;
        }
        break;
      case 78: // N
        if (cr - pos === 9 && starts(buf, pos, cr, L_NOT_FOUND)) kind = K.NOT_FOUND;
        break;
      case 84: // T
        if (cr - pos === 9 && starts(buf, pos, cr, L_TIMED_OUT)) kind = K.TIMED_OUT;
        break;
      case 79: // O
        if (starts(buf, pos, cr, L_OK) && (n = num(buf, pos + 3, cr)) >= 0 && numEnd === cr) kind = K.OK;
        break;
      case 85: // U
        if (starts(buf, pos, cr, L_USING) && cr - pos > 6) kind = K.USING;
        break;
      case 87: // W
        if (starts(buf, pos, cr, L_WATCHING) && (a = num(buf, pos + 9, cr)) >= 0 && numEnd === cr) kind = K.WATCHING;
        break;
    }
    if (kind === K.RESERVED || kind === K.FOUND || kind === K.OK) {
      bodyAt = cr + 2;
      next = bodyAt + n + 2;
      if (next > len) return pos;
      if (buf[next - 2] !== 13 || buf[next - 1] !== 10) return -1 - pos;
    }
    onReply(kind, a, n, buf, bodyAt, pos, cr);
    pos = next;
  }
  return pos;
}

/** The unparsed tail of the last read followed by the new chunk (the chunk itself when nothing was left). */
export function joinRest(rest: Uint8Array | null, chunk: Uint8Array): Uint8Array {
  if (!rest) return chunk;
  const buf = new Uint8Array(rest.length + chunk.length);
  buf.set(rest, 0);
  buf.set(chunk, rest.length);
  return buf;
}

/** `put pri 0 ttr len\r\n<body>\r\n` */
export function putCmd(body: Uint8Array, pri = 0, ttr = 60): Uint8Array {
  const head = bytes(`put ${pri} 0 ${ttr} ${body.length}\r\n`);
  const out = new Uint8Array(head.length + body.length + 2);
  out.set(head, 0);
  out.set(body, head.length);
  out[out.length - 2] = 13;
  out[out.length - 1] = 10;
  return out;
}

/** `k` copies of `cmd` back to back. */
export function repeat(cmd: Uint8Array, k: number): Uint8Array {
  const out = new Uint8Array(cmd.length * k);
  for (let i = 0; i < k; i++) out.set(cmd, i * cmd.length);
  return out;
}

/** A body of `size` bytes: printable filler. */
export function filler(size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = 97 + (i % 26);
  return b;
}
