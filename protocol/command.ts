// A command line (bytes) -> a typed command. Verbs are matched the way 1.12 matches
// them (prefixes, in its order), arguments with small strict readers. Parsing writes
// into one reusable Command, which owns the reader its arguments are read with, so a
// line costs no allocation unless it names a tube.

import { CMD_KEYS } from "./counters.ts";
import { ascii, CR, DIGIT_0, SP } from "./bytes.ts";

export const OP = {
  BAD_FORMAT: 0,
  UNKNOWN_COMMAND: 1,
  PUT: 2,
  PEEK: 3,
  PEEK_READY: 4,
  PEEK_DELAYED: 5,
  PEEK_BURIED: 6,
  RESERVE_TIMEOUT: 7,
  RESERVE_JOB: 8,
  RESERVE: 9,
  DELETE: 10,
  RELEASE: 11,
  BURY: 12,
  KICK: 13,
  KICK_JOB: 14,
  TOUCH: 15,
  STATS_JOB: 16,
  STATS_TUBE: 17,
  STATS: 18,
  USE: 19,
  WATCH: 20,
  IGNORE: 21,
  LIST_TUBES_WATCHED: 22,
  LIST_TUBE_USED: 23,
  LIST_TUBES: 24,
  QUIT: 25,
  PAUSE_TUBE: 26,
  // Extensions (docs/extensions.md), parsed by extensions.ts when no stock verb matches.
  PING: 27,
  CAPABILITIES: 28,
  PUT_AT: 29,
  PUT_UNIQUE: 30,
  KICK_TUBE: 31,
  DELETE_TUBE: 32,
  PEEK_TUBE: 33,
  LIST_JOBS: 34,
  SET_DLQ: 35,
  SET_BACKOFF: 36,
  STATS_TUBE_ALL: 37,
  LIST_TUBES_PAUSED: 38,
  DRAIN: 39,
  STATS_CONN: 40,
  LIST_CONNECTIONS: 41,
  // Flow control and recurring jobs, parsed by flow_control.ts through extensions.ts.
  SET_CONCURRENCY: 42,
  SET_RATE: 43,
  SCHEDULE: 44,
  UNSCHEDULE: 45,
  LIST_SCHEDULES: 46,
} as const;

/** One opcode: a literal union, so a switch over it can be checked for completeness. */
export type Op = (typeof OP)[keyof typeof OP];

/** The parsed form of one line. Fields a verb does not use keep stale values. */
export class Command {
  op: Op = OP.BAD_FORMAT;
  /** Job id (u64; values above 2^53 lose precision but can never name a job). */
  id = 0;
  pri = 0;
  delay = 0;
  ttr = 0;
  /** put: body length; kick: bound; reserve-with-timeout: seconds (negative = forever). */
  n = 0;
  /** put: something followed the byte count (BAD_FORMAT, but only after the size check). */
  trailing = false;
  /** pause-tube: the name failed validation after the delay parsed (counts, then BAD_FORMAT). */
  badName = false;
  tube = "";
  /**
   * Extensions: set-dlq's dead tube; a state word; put-unique's key (a schedule's name);
   * list-jobs' offset; put-at's Unix time (s); a schedule's spec.
   */
  tube2 = "";
  state = "";
  key = "";
  spec = "";
  offset = 0;
  at = 0;
  /**
   * parseCommand's argument reader for this Command's lines: made once with it, so a
   * parse allocates nothing and no reader state is shared between connections.
   */
  readonly args: ArgReader = new ArgReader();
}

/** [verb bytes, op, takes the rest of the line as arguments] in 1.12's matching order. */
const VERBS: Array<[Uint8Array, Op, boolean]> = ([
  ["put ", OP.PUT, true],
  ["peek ", OP.PEEK, true],
  ["peek-ready", OP.PEEK_READY, false],
  ["peek-delayed", OP.PEEK_DELAYED, false],
  ["peek-buried", OP.PEEK_BURIED, false],
  ["reserve-with-timeout ", OP.RESERVE_TIMEOUT, true],
  ["reserve-job ", OP.RESERVE_JOB, true],
  ["reserve", OP.RESERVE, false],
  ["delete ", OP.DELETE, true],
  ["release ", OP.RELEASE, true],
  ["bury ", OP.BURY, true],
  ["kick ", OP.KICK, true],
  ["kick-job ", OP.KICK_JOB, true],
  ["touch ", OP.TOUCH, true],
  ["stats-job ", OP.STATS_JOB, true],
  ["stats-tube ", OP.STATS_TUBE, true],
  ["stats", OP.STATS, false],
  ["use ", OP.USE, true],
  ["watch ", OP.WATCH, true],
  ["ignore ", OP.IGNORE, true],
  ["list-tubes-watched", OP.LIST_TUBES_WATCHED, false],
  ["list-tube-used", OP.LIST_TUBE_USED, false],
  ["list-tubes", OP.LIST_TUBES, false],
  ["quit", OP.QUIT, true],
  ["pause-tube", OP.PAUSE_TUBE, true],
] as Array<[string, Op, boolean]>).map(([v, op, args]) => [ascii(v), op, args]);

/**
 * The stats cmd-* counter of each opcode (index into CMD_KEYS), or -1 for commands
 * 1.12 does not count (reserve-job, kick-job, quit, errors): beanstalkd's
 * op_ct[type]++, derived from the verb table so there is no second list to keep in step.
 */
export const COUNTER_OF: Int8Array = (() => {
  const t = new Int8Array(Object.keys(OP).length).fill(-1);
  for (const [verb, op] of VERBS) {
    const name = String.fromCharCode(...verb).trimEnd();
    t[op] = (CMD_KEYS as readonly string[]).indexOf(name);
  }
  return t;
})();

const D9 = DIGIT_0 + 9;
/** C's isspace() is SP and TAB through CR (\t \n \v \f \r). */
const TAB = 9;
const PLUS = 43;
const MINUS = 45;
const EMPTY = new Uint8Array(0);
const U32_MAX = 4294967295;
const U64_MAX_DIGITS = "18446744073709551615";

/** Bytes allowed in tube names: A-Z a-z 0-9 - + / ; . $ _ ( ) */
const NAME_BYTE = new Uint8Array(256);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+/;.$_()") {
  NAME_BYTE[ch.charCodeAt(0)] = 1;
}
export const MAX_TUBE_NAME = 200;

/** Parse buf[start, end) into cmd. Returns cmd.op. */
export function parseCommand(buf: Uint8Array, start: number, end: number, cmd: Command): Op {
  // 1.12 checks for a NUL (strlen != length) before it even looks at the verb.
  for (let i = start; i < end; i++) if (buf[i] === 0) return (cmd.op = OP.BAD_FORMAT);
  let verb: [Uint8Array, Op, boolean] | undefined;
  const first = buf[start];
  for (const v of VERBS) {
    const lit = v[0];
    if (lit[0] !== first || end - start < lit.length) continue;
    let i = 1;
    while (i < lit.length && buf[start + i] === lit[i]) i++;
    if (i === lit.length) {
      verb = v;
      break;
    }
  }
  if (!verb) return (cmd.op = OP.UNKNOWN_COMMAND);
  const op = verb[1];
  const p = start + verb[0].length;
  // No-argument commands must be exactly the keyword.
  if (!verb[2]) return (cmd.op = p === end ? op : OP.BAD_FORMAT);
  cmd.op = op;
  const a = cmd.args.reset(buf, p, end);
  const result = readArgs(cmd, op, a, buf, p, end);
  // The reader outlives the line: let go of the input, which an idle connection must
  // not keep alive (see parser.ts).
  a.reset(EMPTY, 0, 0);
  return result;
}

/** The arguments of op from buf[p, end) into cmd, read with a (reset to that range). */
function readArgs(cmd: Command, op: Op, a: ArgReader, buf: Uint8Array, p: number, end: number): Op {
  switch (op) {
    case OP.PUT: {
      cmd.pri = a.u32();
      cmd.delay = a.u32();
      cmd.ttr = a.u32();
      cmd.n = a.u32();
      cmd.trailing = a.pos !== end;
      return a.ok ? op : (cmd.op = OP.BAD_FORMAT);
    }
    case OP.PEEK:
    case OP.RESERVE_JOB:
    case OP.DELETE:
    case OP.KICK_JOB:
    case OP.TOUCH:
    case OP.STATS_JOB:
      cmd.id = a.u64();
      return a.ok && a.pos === end ? op : (cmd.op = OP.BAD_FORMAT);
    case OP.RELEASE:
      cmd.id = a.u64();
      cmd.pri = a.u32();
      cmd.delay = a.u32();
      return a.ok && a.pos === end ? op : (cmd.op = OP.BAD_FORMAT);
    case OP.BURY:
      cmd.id = a.u64();
      cmd.pri = a.u32();
      return a.ok && a.pos === end ? op : (cmd.op = OP.BAD_FORMAT);
    case OP.KICK:
      cmd.n = a.laxUnsigned();
      return a.ok ? op : (cmd.op = OP.BAD_FORMAT);
    case OP.RESERVE_TIMEOUT:
      cmd.n = a.laxInt();
      return a.ok ? op : (cmd.op = OP.BAD_FORMAT);
    case OP.USE:
    case OP.WATCH:
    case OP.IGNORE:
    case OP.STATS_TUBE:
      // The whole rest of the line is the name: "use  foo" and "use foo " are invalid.
      if (!validName(buf, p, end)) return (cmd.op = OP.BAD_FORMAT);
      cmd.tube = latin1(buf, p, end);
      return op;
    case OP.PAUSE_TUBE: {
      // 1.12 skips spaces, takes the longest run of name bytes, parses the delay,
      // and only then validates the name (so "pause-tubedefault 1" works).
      let s = p;
      while (s < end && buf[s] === SP) s++;
      let e = s;
      while (e < end && NAME_BYTE[buf[e]!]) e++;
      a.pos = e;
      cmd.delay = a.u32();
      if (!a.ok || a.pos !== end) return (cmd.op = OP.BAD_FORMAT);
      cmd.badName = !validName(buf, s, e);
      cmd.tube = latin1(buf, s, e);
      return op;
    }
    default: // quit: anything may follow ("quitXYZ" closes the connection too)
      return op;
  }
}

/** 1..200 allowed bytes, not starting with '-'. */
export function validName(buf: Uint8Array, s: number, e: number): boolean {
  if (e <= s || e - s > MAX_TUBE_NAME || buf[s] === MINUS) return false;
  for (let i = s; i < e; i++) if (!NAME_BYTE[buf[i]!]) return false;
  return true;
}

export function latin1(buf: Uint8Array, s: number, e: number): string {
  let out = "";
  for (let i = s; i < e; i++) out += String.fromCharCode(buf[i]!);
  return out;
}

/** Sequential argument readers over one line; the first failure clears `ok`. */
class ArgReader {
  ok = true;
  buf: Uint8Array = EMPTY;
  pos = 0;
  end = 0;
  /** The digits the last #digits()/#c() call found: buf[ds, de). */
  ds = 0;
  de = 0;

  reset(buf: Uint8Array, pos: number, end: number): this {
    this.ok = true;
    this.buf = buf;
    this.pos = pos;
    this.end = end;
    return this;
  }

  /** Spaces (0x20 only), then at least one digit. */
  #digits(): boolean {
    const { buf, end } = this;
    let i = this.pos;
    while (i < end && buf[i] === SP) i++;
    const s = i;
    while (i < end && buf[i]! >= DIGIT_0 && buf[i]! <= D9) i++;
    if (i === s) return (this.ok = false);
    this.pos = this.de = i;
    this.ds = s;
    return true;
  }

  /** Leading zeros fine; must fit u32. */
  u32(): number {
    if (!this.ok || !this.#digits()) return 0;
    let v = 0;
    for (let i = this.ds; i < this.de; i++) {
      v = v * 10 + (this.buf[i]! - DIGIT_0);
      if (v > U32_MAX) {
        this.ok = false;
        return 0;
      }
    }
    return v;
  }

  /** As u32, but must fit u64 (job ids). */
  u64(): number {
    if (!this.ok || !this.#digits()) return 0;
    let s = this.ds;
    const e = this.de;
    while (s < e - 1 && this.buf[s] === DIGIT_0) s++;
    if (e - s > 20 || (e - s === 20 && latin1(this.buf, s, e) > U64_MAX_DIGITS)) {
      this.ok = false;
      return 0;
    }
    let v = 0;
    for (let i = s; i < e; i++) v = v * 10 + (this.buf[i]! - DIGIT_0);
    return v;
  }

  /** C whitespace, an optional sign, digits (maybe none). Returns true for a minus. */
  #c(): boolean {
    const { buf, end } = this;
    let i = this.pos;
    while (i < end && (buf[i] === SP || (buf[i]! >= TAB && buf[i]! <= CR))) i++;
    let neg = false;
    if (i < end && (buf[i] === PLUS || buf[i] === MINUS)) neg = buf[i++] === MINUS;
    this.ds = i;
    while (i < end && buf[i]! >= DIGIT_0 && buf[i]! <= D9) i++;
    this.pos = this.de = i;
    return neg;
  }

  /**
   * kick's bound, read like C strtoul: whitespace and a sign allowed, trailing bytes
   * ignored, no digits or u64 overflow is an error, the result truncated to 32 bits
   * ("kick -1" kicks up to 4294967295).
   */
  laxUnsigned(): number {
    const neg = this.#c();
    if (this.ds === this.de) {
      this.ok = false;
      return 0;
    }
    const mag = BigInt(latin1(this.buf, this.ds, this.de));
    if (mag > 0xffffffffffffffffn) {
      this.ok = false;
      return 0;
    }
    return Number(BigInt.asUintN(32, neg ? -mag : mag));
  }

  /**
   * reserve-with-timeout's seconds, read like 1.12's strtol into an int: no digits is 0,
   * trailing bytes ignored, only C long overflow is an error, then truncated to 32 bits.
   */
  laxInt(): number {
    const neg = this.#c();
    const { ds, de } = this;
    if (ds === de) return 0;
    if (de - ds <= 15) {
      let v = 0;
      for (let i = ds; i < de; i++) v = v * 10 + (this.buf[i]! - DIGIT_0);
      return (neg ? -v : v) | 0;
    }
    const v = BigInt(latin1(this.buf, ds, de)) * (neg ? -1n : 1n);
    if (v > 0x7fffffffffffffffn || v < -0x8000000000000000n) {
      this.ok = false;
      return 0;
    }
    return Number(BigInt.asIntN(32, v));
  }
}
