// One client connection: parser -> command -> queue -> reply, with back-pressure.
// Runtime-neutral: every adapter speaks to it through three calls, push(chunk) for bytes,
// eof() for a half-close and abort() for a dead socket, and gives it a Transport to write
// to. The parser is the connection's own: nothing outside reads its state.
//
// Flow control, both ways: while replies are being written and more than OUT_HIGH bytes
// wait behind them, or while the client waits in reserve, or while replies wait for the
// binlog (durable acks), no further commands are processed and `wantsInput` is false,
// so the adapter stops reading. A client that pipelines and never reads stalls on its
// own TCP window; server memory per connection stays bounded.
import { BODY, LINE, NEED_MORE, OVERLONG, Parser, SKIPPED } from "./parser.ts";
import { Command, COUNTER_OF, OP, parseCommand } from "./command.ts";
import { Output, R } from "./reply.ts";
import { listYaml, statsJobYaml, statsTubeYaml, statsYaml } from "./yaml.ts";
import type { Service } from "./service.ts";
import type { Client, WaitEnd } from "../core/client.ts";
import type { Job } from "../core/job.ts";
import type { Refusal } from "../core/queue.ts";
import { assertNever } from "./never.ts";

/** Where a connection's replies go. */
export interface Transport {
  /**
   * Write one piece. Return nothing when it was taken whole, or a promise that settles
   * once it has been (the piece must not be touched until then; a rejection is a
   * broken connection).
   */
  write(piece: Uint8Array): void | Promise<void>;
  /** Close the socket (after everything written). Must be safe to call twice. */
  close(): void;
}

/** Stop processing commands while this much output waits behind a write in flight. */
const OUT_HIGH = 256 * 1024;
/**
 * While a client waits in reserve we keep reading, without processing, so that a
 * half-close is seen and answered TIMED_OUT (1.12 watches for the hangup); but only
 * this much, so a client that pipelines during the wait cannot grow our buffer.
 */
const WAIT_READ_MAX = 64 * 1024;

export class Connection {
  /** Called when the connection wants input again after `wantsInput` was false. */
  onResume: (() => void) | undefined;
  /** Settles when the connection has closed. */
  readonly done: Promise<void>;

  readonly #svc: Service;
  readonly #parser: Parser;
  readonly #client: Client;
  readonly #transport: Transport;
  readonly #out = new Output();
  readonly #cmd = new Command();
  readonly #id: number;
  #resolveDone!: () => void;
  #waiting = false;
  #writing = false;
  #syncing = false;
  #logged = false;
  #quit = false;
  #eof = false;
  #closed = false;
  #inputPaused = false;
  #continueQueued = false;
  #putPri = 0;
  #putDelay = 0;
  #putTtr = 0;

  constructor(svc: Service, transport: Transport) {
    this.#svc = svc;
    this.#parser = new Parser(undefined, svc.bodies);
    this.#transport = transport;
    this.#id = svc.nextConnectionId();
    this.#client = svc.queue.connect((r) => this.#wake(r));
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
  }

  /** A number for log lines (1.12 prints the fd). */
  get id(): number {
    return this.#id;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether the adapter should read more now. */
  get wantsInput(): boolean {
    const want = !this.#closed && !this.#quit && !this.#eof &&
      (this.#waiting ? !this.#syncing && this.#parser.buffered < WAIT_READ_MAX : !this.#stalled);
    if (!want) this.#inputPaused = true;
    return want;
  }

  get #stalled(): boolean {
    return this.#waiting || this.#syncing || (this.#writing && this.#out.size >= OUT_HIGH);
  }

  /** Bytes from the client: take them in and process what is complete. */
  push(chunk: Uint8Array): void {
    this.#parser.push(chunk);
    this.#run();
  }

  /** The peer closed its sending side. A waiting reserve answers TIMED_OUT (as 1.12). */
  eof(): void {
    if (this.#closed || this.#eof) return;
    this.#eof = true;
    if (this.#waiting) this.#svc.queue.cancelWait(this.#client);
    this.#run();
  }

  /** The socket is gone (reset, error): drop everything, release reservations. */
  abort(): void {
    this.#close();
  }

  // ---- the command loop ------------------------------------------------------------

  #run(): void {
    if (this.#closed) return;
    const p = this.#parser;
    while (!this.#stalled && !this.#quit) {
      const ev = p.next();
      if (ev === NEED_MORE) break;
      try {
        switch (ev) {
          case LINE:
            this.#dispatch(p.buf, p.lineStart, p.lineEnd);
            break;
          case BODY:
            this.#putBody(p.body);
            break;
          case OVERLONG:
            this.#out.bytes(R.BAD_FORMAT);
            break;
          case SKIPPED:
            this.#out.bytes(R.JOB_TOO_BIG);
            break;
          default:
            assertNever(ev);
        }
      } catch (e) {
        // Exceptions are bugs: answer INTERNAL_ERROR, log, keep serving.
        this.#svc.error(`internal error: ${e instanceof Error ? e.stack ?? e.message : e}`);
        this.#out.bytes(R.INTERNAL_ERROR);
      }
    }
    if (this.#eof && !this.#stalled) this.#quit = true;
    if (this.#logged) {
      this.#logged = false;
      const wal = this.#svc.queue.wal;
      // The log batches: the records of this batch of commands are written now, with
      // one append, before any of its replies goes out. Only this connection's records
      // can be pending here: #run is synchronous, and nothing else logs between
      // batches except compaction, which flushes its own (timer ticks and
      // disconnects change nothing that is logged).
      if (!wal.flush()) {
        // Not in the log: send none of this batch's replies and drop the connection.
        // The client sees a disconnect, never a false acknowledgement. The batch's
        // changes are applied in memory but not on disk, which is acceptable because
        // none of them was acknowledged (they may vanish on a restart).
        this.#svc.error(`binlog write failed: dropping connection ${this.#id} without replying to its last commands`);
        this.#close();
        return;
      }
      if (wal.durableAcks) {
        // Durable acks: nothing goes out until the log is on disk; one fsync serves
        // every connection that logged something in this turn (group commit).
        this.#syncing = true;
        wal.synced().then(
          () => {
            this.#syncing = false;
            this.#flush();
            this.#continue();
          },
          (e) => {
            this.#svc.error(`binlog sync failed: ${e}`);
            this.#close();
          },
        );
        return;
      }
    }
    this.#flush();
  }

  /** Resume processing later in this turn (never re-entering the queue from its callbacks). */
  #continue(): void {
    if (this.#continueQueued || this.#closed) return;
    this.#continueQueued = true;
    queueMicrotask(() => {
      this.#continueQueued = false;
      this.#run();
      if (this.#inputPaused && this.wantsInput) {
        this.#inputPaused = false;
        this.onResume?.();
      }
    });
  }

  #dispatch(buf: Uint8Array, start: number, end: number): void {
    const cmd = this.#cmd;
    const q = this.#svc.queue;
    const c = this.#client;
    const out = this.#out;
    const counters = q.counters;
    if (this.#svc.verbose > 1) {
      this.#svc.log(`<${this.#id} command ${String.fromCharCode(...buf.subarray(start, end))}`);
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
        if (cmd.n > q.maxJobSize) return this.#parser.skip(cmd.n + 2);
        if (cmd.trailing) return out.bytes(R.BAD_FORMAT);
        q.markProducer(c);
        this.#putPri = cmd.pri;
        this.#putDelay = cmd.delay;
        this.#putTtr = cmd.ttr;
        return this.#parser.expectBody(cmd.n + 2);
      case OP.PEEK:
        return this.#found(q.peek(cmd.id));
      case OP.PEEK_READY:
        return this.#found(q.peekReady(c));
      case OP.PEEK_DELAYED:
        return this.#found(q.peekDelayed(c));
      case OP.PEEK_BURIED:
        return this.#found(q.peekBuried(c));
      case OP.RESERVE:
        return this.#reserve(Infinity);
      case OP.RESERVE_TIMEOUT:
        // A negative timeout (1.12's strtol reading) waits forever, like reserve.
        return this.#reserve(cmd.n < 0 ? Infinity : cmd.n * 1000);
      case OP.RESERVE_JOB: {
        const j = q.reserveJob(c, cmd.id);
        return j ? out.job(R.RESERVED_, j.id, j.body) : out.bytes(R.NOT_FOUND);
      }
      case OP.DELETE:
        return this.#logResult(q.delete(c, cmd.id), "DELETED");
      case OP.RELEASE:
        return this.#logResult(q.release(c, cmd.id, cmd.pri, cmd.delay), "RELEASED");
      case OP.BURY:
        return this.#logResult(q.bury(c, cmd.id, cmd.pri), "BURIED");
      case OP.KICK: {
        const n = q.kick(c, cmd.n);
        if (n === "INTERNAL_ERROR") return out.bytes(R.INTERNAL_ERROR);
        if (n > 0) this.#logged = true;
        return out.line(R.KICKED_, n);
      }
      case OP.KICK_JOB:
        return this.#logResult(q.kickJob(cmd.id), "KICKED");
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
        return out.data(statsYaml(q, this.#svc.facts));
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
        this.#quit = true;
        return;
      case OP.PAUSE_TUBE:
        if (cmd.badName) return out.bytes(R.BAD_FORMAT);
        return out.bytes(q.pauseTube(cmd.tube, cmd.delay) ? R.PAUSED : R.NOT_FOUND);
      default:
        return assertNever(op);
    }
  }

  #putBody(body: Uint8Array): void {
    const q = this.#svc.queue;
    const n = body.length;
    if (body[n - 2] !== 13 || body[n - 1] !== 10) {
      // The job object existed in 1.12 by now, so its id is used up.
      q.burnId();
      return this.#out.bytes(R.EXPECTED_CRLF);
    }
    const r = q.put(this.#client, this.#putPri, this.#putDelay, this.#putTtr, body);
    if (r === "DRAINING") {
      this.#svc.error("server error: DRAINING");
      return this.#out.bytes(R.DRAINING);
    }
    if (r === "OUT_OF_MEMORY") return this.#out.bytes(R.OUT_OF_MEMORY);
    this.#logged = true;
    this.#out.line(R.INSERTED_, r.id);
  }

  #logResult<Ok extends "DELETED" | "RELEASED" | "BURIED" | "KICKED">(r: Ok | Refusal, ok: Ok): void {
    if (r === ok) this.#logged = true;
    this.#out.bytes(R[r]);
  }

  #found(j: Job | undefined): void {
    if (j) this.#out.job(R.FOUND_, j.id, j.body);
    else this.#out.bytes(R.NOT_FOUND);
  }

  #reserve(timeoutMs: number): void {
    const q = this.#svc.queue;
    const r = q.reserve(this.#client, timeoutMs);
    if (r !== null) return this.#reserved(r);
    // A reserve read after the peer half-closed can never be answered by a job.
    if (this.#eof) return q.cancelWait(this.#client);
    this.#waiting = true;
  }

  #reserved(r: Job | WaitEnd): void {
    if (typeof r === "string") this.#out.bytes(R[r]);
    else this.#out.job(R.RESERVED_, r.id, r.body);
  }

  /** The queue ended this client's wait (a job, a timeout, DEADLINE_SOON). */
  #wake(r: Job | WaitEnd): void {
    this.#reserved(r);
    if (this.#waiting) {
      this.#waiting = false;
      this.#continue();
    }
  }

  // ---- output ----------------------------------------------------------------------

  #flush(): void {
    // While the batch waits for its fsync (durable acks), nothing goes out, not even
    // when an earlier write completes: #out holds that batch's replies.
    if (this.#writing || this.#closed || this.#syncing) return;
    if (this.#out.size === 0) {
      if (this.#quit) this.#close();
      return;
    }
    this.#write(this.#out.take(), 0);
  }

  #write(pieces: Uint8Array[], from: number): void {
    for (let i = from; i < pieces.length; i++) {
      let pending: void | Promise<void>;
      try {
        pending = this.#transport.write(pieces[i]!);
      } catch {
        return this.#close();
      }
      if (pending) {
        this.#writing = true;
        pending.then(
          () => {
            this.#writing = false;
            this.#write(pieces, i + 1);
          },
          () => this.#close(),
        );
        return;
      }
    }
    this.#out.release(pieces);
    if (this.#out.size > 0) return this.#flush();
    if (this.#quit) return this.#close();
    if (this.#parser.buffered > 0 || this.#inputPaused) this.#continue();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#svc.queue.disconnect(this.#client);
    this.#svc.forget(this);
    try {
      this.#transport.close();
    } catch {
      // already gone
    }
    this.#resolveDone();
  }
}
