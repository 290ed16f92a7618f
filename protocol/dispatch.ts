// The commands: one parsed line -> the queue -> one reply, as a switch over the opcode
// that the compiler checks for completeness. The state a command reads and sets (the
// client, the output, the put waiting for its body, the flags the connection's loop
// acts on) is the connection's Session; this file owns no state.
// The replies they write close the file.
import { Command, COUNTER_OF, OP, parseCommand } from "./command.ts";
import type { Parser } from "./parser.ts";
import { listYaml, type ServerFacts, statsJobYaml, statsTubeYaml, statsYaml } from "./yaml.ts";
import { assertNever } from "./never.ts";
import type { Queue, Refusal } from "../core/queue.ts";
import type { Client, Job, WaitEnd } from "../core/model.ts";

/** What a connection needs from the server it belongs to (Service provides it). */
export interface ConnectionContext {
  readonly queue: Queue;
  /** Allocates job bodies (a BodyArena shared by every connection). */
  readonly bodies: (n: number) => Uint8Array;
  readonly facts: ServerFacts;
  /** -V count: 1 logs connections, 2 also commands. */
  readonly verbose: number;
  readonly log: (line: string) => void;
  readonly error: (line: string) => void;
  /**
   * Output buffers of connections that went idle, shared by every connection of the
   * server: an idle connection holds none (its own would be ~470 bytes with the JS
   * objects, of the 8 KB an idle connection may cost), and a busy one takes one back
   * without allocating.
   */
  readonly spareBuffers: Uint8Array[];
}

/** One connection's command state, shared by its loop (connection.ts) and the commands. */
export class Session {
  readonly out: Output;
  /** The last line parsed; a put's pri/delay/ttr wait here for its body. */
  readonly cmd = new Command();
  readonly queue: Queue;
  /** A change in this batch went to the log: flush it before any reply goes out. */
  logged = false;
  /** quit was read (or the input ended): close once the replies are out. */
  quit = false;
  /** The client waits in reserve. */
  waiting = false;
  /** The peer half-closed its sending side. */
  eof = false;
  /** The id the put waiting for its body took when its line was read (as 1.12 does). */
  putId = 0;

  constructor(
    readonly ctx: ConnectionContext,
    readonly parser: Parser,
    readonly client: Client,
    /** For log lines (1.12 prints the fd). */
    readonly id: number,
  ) {
    this.queue = ctx.queue;
    this.out = new Output(ctx.spareBuffers);
  }
}

/** Run one command line, buf[start, end), writing its reply to s.out. */
export function dispatch(s: Session, buf: Uint8Array, start: number, end: number): void {
  const cmd = s.cmd;
  const q = s.queue;
  const c = s.client;
  const out = s.out;
  const counters = q.counters;
  if (s.ctx.verbose > 1) {
    s.ctx.log(`<${s.id} command ${String.fromCharCode(...buf.subarray(start, end))}`);
  }
  const op = parseCommand(buf, start, end, cmd);
  // Counted once the line has parsed (beanstalkd's op_ct[type]++), before the command
  // runs: a put is counted even when its body turns out too big, a pause-tube even
  // when its name is then refused.
  const counter = COUNTER_OF[op]!;
  if (counter >= 0) counters.bump(counter);
  switch (op) {
    case OP.BAD_FORMAT:
      return out.bytes(R.BAD_FORMAT);
    case OP.UNKNOWN_COMMAND:
      return out.bytes(R.UNKNOWN_COMMAND);
    case OP.PUT:
      // JOB_TOO_BIG only after the body (and its CRLF) has been swallowed, and
      // before the trailing-garbage check, as 1.12 does.
      if (cmd.n > q.maxJobSize) return s.parser.skip(cmd.n + 2);
      if (cmd.trailing) return out.bytes(R.BAD_FORMAT);
      q.markProducer(c);
      s.putId = q.takeId();
      // pri, delay and ttr stay in cmd until the body arrives: no line is parsed before.
      return s.parser.expectBody(cmd.n + 2);
    case OP.PEEK:
      return found(s, q.peek(cmd.id));
    case OP.PEEK_READY:
      return found(s, q.peekReady(c));
    case OP.PEEK_DELAYED:
      return found(s, q.peekDelayed(c));
    case OP.PEEK_BURIED:
      return found(s, q.peekBuried(c));
    case OP.RESERVE:
      return reserve(s, Infinity);
    case OP.RESERVE_TIMEOUT:
      // A negative timeout (1.12's strtol reading) waits forever, like reserve.
      return reserve(s, cmd.n < 0 ? Infinity : cmd.n * 1000);
    case OP.RESERVE_JOB: {
      const j = q.reserveJob(c, cmd.id);
      return j ? out.job(R.RESERVED_, j.id, j.body) : out.bytes(R.NOT_FOUND);
    }
    case OP.DELETE:
      return logResult(s, q.delete(c, cmd.id), "DELETED");
    case OP.RELEASE:
      return logResult(s, q.release(c, cmd.id, cmd.pri, cmd.delay), "RELEASED");
    case OP.BURY:
      return logResult(s, q.bury(c, cmd.id, cmd.pri), "BURIED");
    case OP.KICK: {
      const n = q.kick(c, cmd.n);
      if (n === "INTERNAL_ERROR") return out.bytes(R.INTERNAL_ERROR);
      if (n > 0) s.logged = true;
      return out.line(R.KICKED_, n);
    }
    case OP.KICK_JOB:
      return logResult(s, q.kickJob(cmd.id), "KICKED");
    case OP.TOUCH:
      return out.bytes(q.touch(c, cmd.id) ? R.TOUCHED : R.NOT_FOUND);
    case OP.STATS_JOB: {
      const s = q.statsJob(cmd.id);
      return s ? out.data(statsJobYaml(s)) : out.bytes(R.NOT_FOUND);
    }
    case OP.STATS_TUBE: {
      const s = q.statsTube(cmd.tube);
      return s ? out.data(statsTubeYaml(s)) : out.bytes(R.NOT_FOUND);
    }
    case OP.STATS:
      return out.data(statsYaml(q, s.ctx.facts));
    case OP.USE:
      q.use(c, cmd.tube);
      out.bytes(R.USING_);
      out.text(cmd.tube);
      return out.bytes(R.CRLF);
    case OP.WATCH:
      return out.line(R.WATCHING_, q.watch(c, cmd.tube));
    case OP.IGNORE: {
      const n = q.ignore(c, cmd.tube);
      return n === "NOT_IGNORED" ? out.bytes(R.NOT_IGNORED) : out.line(R.WATCHING_, n);
    }
    case OP.LIST_TUBES_WATCHED:
      return out.data(listYaml(c.watching.map((t) => t.name)));
    case OP.LIST_TUBE_USED:
      out.bytes(R.USING_);
      out.text(c.use.name);
      return out.bytes(R.CRLF);
    case OP.LIST_TUBES:
      return out.data(listYaml(q.tubeNames()));
    case OP.QUIT:
      s.quit = true;
      return;
    case OP.PAUSE_TUBE:
      if (cmd.badName) return out.bytes(R.BAD_FORMAT);
      return out.bytes(q.pauseTube(cmd.tube, cmd.delay) ? R.PAUSED : R.NOT_FOUND);
    default:
      return assertNever(op);
  }
}

/** The body of the put whose line was the last one dispatched. */
export function putBody(s: Session, body: Uint8Array): void {
  const q = s.queue;
  const n = body.length;
  if (body[n - 2] !== 13 || body[n - 1] !== 10) {
    // Its id, taken at the put line, stays used up (as in 1.12).
    return s.out.bytes(R.EXPECTED_CRLF);
  }
  const r = q.put(s.client, s.cmd.pri, s.cmd.delay, s.cmd.ttr, body, s.putId);
  // 1.12 also writes "server error: DRAINING" to stderr for each refused put; that is
  // the expected answer in drain mode, not a fault, so nothing is logged.
  if (r === "DRAINING") return s.out.bytes(R.DRAINING);
  if (r === "OUT_OF_MEMORY") return s.out.bytes(R.OUT_OF_MEMORY);
  s.logged = true;
  s.out.line(R.INSERTED_, r.id);
}

function logResult<Ok extends "DELETED" | "RELEASED" | "BURIED" | "KICKED">(s: Session, r: Ok | Refusal, ok: Ok): void {
  if (r === ok) s.logged = true;
  s.out.bytes(R[r]);
}

function found(s: Session, j: Job | undefined): void {
  if (j) s.out.job(R.FOUND_, j.id, j.body);
  else s.out.bytes(R.NOT_FOUND);
}

function reserve(s: Session, timeoutMs: number): void {
  const q = s.queue;
  const r = q.reserve(s.client, timeoutMs);
  if (r !== null) return reserved(s, r);
  // A reserve read after the peer half-closed can never be answered by a job.
  if (s.eof) return q.cancelWait(s.client);
  s.waiting = true;
}

/** A reserve answered: the job, TIMED_OUT or DEADLINE_SOON. */
export function reserved(s: Session, r: Job | WaitEnd): void {
  if (typeof r === "string") s.out.bytes(R[r]);
  else s.out.job(R.RESERVED_, r.id, r.body);
}

// ---- replies -------------------------------------------------------------------------

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
      buf[end++] = 48 + (v - q * 10);
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
    this.#queue = this.#handed;
    this.#handed = q;
    this.#queued = 0;
    const taken = this.#taken;
    taken.length = 0;
    this.#taken = this.#sealed;
    this.#sealed = taken;
    return q;
  }

  /**
   * The pieces from the last take() have been written: one of our buffers among them
   * (not a big one) is kept for reuse, the others are left to the GC. Buffers sealed
   * since that take() are still queued, so they are not candidates.
   */
  release(): void {
    for (const b of this.#taken) {
      if (b.length <= KEEP && b !== this.#buf && (!this.#spare || this.#spare.length < b.length)) this.#spare = b;
    }
    this.#taken.length = 0;
    this.#handed.length = 0;
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
    if (this.#len !== 0 || this.#queued !== 0 || this.#taken.length !== 0) return;
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
