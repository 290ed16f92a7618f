// One client connection: parser -> command -> engine -> reply, with back-pressure.
// Runtime-neutral: every adapter speaks to it through three calls, push(chunk) for bytes
// (the chunk may be reused once push() returns), eof() for a half-close and abort() for a
// dead socket, and gives it a Transport to write to. The parser is the connection's own:
// nothing outside reads its state.
//
// Flow control, both ways: while OUT_HIGH bytes of replies or more wait to be written
// (even within one batch of commands: a read may hold thousands of pipelined peeks),
// or while the client waits in reserve, or an engine answer is pending, or replies
// wait for the engine to settle them (the log's shared append and, with durable acks,
// its fsync: core/memory/log_turn.ts), no further commands are processed; `wantsInput`
// turns false, so the adapter stops reading, except during a reserve or a wait for the
// log, where reading goes on up to WAIT_READ_MAX without processing. A client that
// pipelines and never reads stalls on its own TCP window, holding at most about OUT_HIGH
// of replies (bigger job bodies are held by reference, not copied: see Output in
// reply.ts); server memory per connection stays bounded.
import { BODY, LINE, NEED_MORE, OVERLONG, Parser, SKIPPED } from "./parser.ts";
import { dispatch, putBody, reserveBehind, woken } from "./dispatch.ts";
import { type ConnectionContext, Session, STEP, type Step } from "./session.ts";
import { R } from "./reply.ts";
import type { JobOut, Settling, WaitEnd } from "../core/engine.ts";
import type { Turns } from "../core/clock.ts";
import { assertNever } from "./never.ts";

/** Where a connection's replies go. */
export interface Transport {
  /**
   * Write one piece. Return nothing when it was taken whole, or a promise that settles
   * once it has been (the piece must not be touched until then; a rejection is a
   * broken connection). The promise may instead resolve to how many bytes of the piece
   * were taken: when fewer than all, the connection writes the rest (so a socket's own
   * write promise can be returned as it is, with no wrapper per reply).
   */
  write(piece: Uint8Array): void | Promise<void | number>;
  /** Close the socket (after everything written). Must be safe to call twice. */
  close(): void;
}

/** Stop processing commands while this much output waits to be written. */
const OUT_HIGH = 64 * 1024;
/**
 * While a client waits in reserve we keep reading, without processing, so that a
 * half-close is seen and answered TIMED_OUT (1.12 watches for the hangup); but only
 * this much, so a client that pipelines during the wait cannot grow our buffer.
 * The same while a batch waits for its fsync (durable acks): stopping and restarting
 * the reads for every fsync cost Bun two epoll changes, a TCP_CORK toggle and two
 * extra turns of its event loop per put (strace: 20 system calls per put with one
 * client, 12 without), and a client that sends one command at a time has nothing to
 * send meanwhile anyway.
 */
const WAIT_READ_MAX = 64 * 1024;

/**
 * Otherwise, read no further ahead of the commands processed than this (a client that
 * pipelines faster than its replies go out): on Bun, a write the kernel takes whole
 * completes at once, so pending output alone never stopped its reads, and a client that
 * never read made it hold everything it sent.
 */
const READ_AHEAD_MAX = 4 * 1024;

/**
 * While the parser throws input away (an over-long line, a body over -z), the
 * connection wants no input for this long after each chunk: read flat out, an endless
 * line kept other clients waiting several times longer than paced, and paced, garbage
 * still goes at tens to hundreds of MB/s (docs/reliability.md, Input).
 */
const DISCARD_PAUSE_MS = 1;

/** The server a connection belongs to: the commands' context, plus its bookkeeping of connections. */
export interface ConnectionOwner extends ConnectionContext {
  /** How a busy connection lets the others have a turn (afterIO). */
  readonly turns: Turns;
  nextConnectionId(): number;
  /** The connection has closed. */
  forget(c: Connection): void;
}

export class Connection implements Settling {
  /**
   * Called when the connection wants input again after `wantsInput` was false, and
   * when it closes (so an adapter waiting for input need not also wait on `done`).
   */
  onResume: (() => void) | undefined;

  readonly #owner: ConnectionOwner;
  readonly #parser: Parser;
  /** What the commands keep between calls: the engine's client, the output (see dispatch.ts). */
  readonly #s: Session;
  readonly #transport: Transport;
  /** Made on first use of `done`: most adapters never ask, and a promise with its resolver costs ~220 bytes per idle connection. */
  #done: Promise<void> | undefined;
  #resolveDone: (() => void) | undefined;
  #writing = false;
  /** This batch's replies wait for the engine to settle them (Engine.settle). */
  #settling = false;
  #closed = false;
  #inputPaused = false;
  #continueQueued = false;
  /** The batch being written filled the output (OUT_HIGH): a busy connection's turn. */
  #full = false;
  /** After such a batch, the connection waits for the others' turn (#continue(true)). */
  #yielded = false;
  /** Discarding garbage: no input until DISCARD_PAUSE_MS has passed. */
  #paced = false;
  /** quit was read (or the input ended): close once the replies are out. */
  #quit = false;
  /** The client waits in reserve. */
  #waiting = false;
  /** An engine answer is pending: nothing else is processed until it comes. */
  #pending = false;
  /** A wait in reserve ended before the pending answer that began it said it waits. */
  #wokeEarly = false;
  /** The peer half-closed its sending side. */
  #eof = false;
  /** A command of this batch changed something: its replies wait for the engine (settle). */
  #changed = false;

  /** `addr`: the peer's address, when the adapter knows it (stats-conn). */
  constructor(owner: ConnectionOwner, transport: Transport, addr = "") {
    this.#owner = owner;
    this.#parser = new Parser(undefined, owner.bodies);
    this.#transport = transport;
    const client = owner.engine.connect((r) => this.#wake(r));
    this.#s = new Session(owner, client, owner.nextConnectionId());
    this.#s.addr = addr;
  }

  /** A number for log lines (1.12 prints the fd), and the id stats-conn shows. */
  get id(): number {
    return this.#s.id;
  }

  /** @internal The command state, for stats-conn and list-connections. */
  get session(): Session {
    return this.#s;
  }

  /** Settles when the connection has closed. */
  get done(): Promise<void> {
    if (!this.#done) {
      this.#done = this.#closed ? Promise.resolve() : new Promise((resolve) => (this.#resolveDone = resolve));
    }
    return this.#done;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether the adapter should read more now. */
  get wantsInput(): boolean {
    const want = !this.#closed && !this.#quit && !this.#eof && !this.#paced &&
      (this.#waiting || this.#pending
        ? !this.#settling && this.#parser.buffered < WAIT_READ_MAX
        : this.#settling && this.#s.out.size < OUT_HIGH
        ? this.#parser.buffered < WAIT_READ_MAX
        : !this.#stalled && this.#parser.buffered < READ_AHEAD_MAX);
    if (!want) this.#inputPaused = true;
    return want;
  }

  /**
   * A full batch of replies (OUT_HIGH) went out and the connection waits for the others'
   * turn: an adapter holding more of a read should push it only then (onResume is called
   * after that turn). Pushed now, it runs the next batch at once: the Bun adapter pushing
   * the rest of a read ran batch after batch in one data callback (hundreds of KB written
   * per callback for a peek flooder), and the others waited behind each such callback.
   */
  get yielded(): boolean {
    return this.#yielded;
  }

  /** Throwing input away (an over-long line, a body over -z): input is paced meanwhile. */
  get discarding(): boolean {
    return this.#parser.discarding;
  }

  get #stalled(): boolean {
    return this.#waiting || this.#pending || this.#settling || this.#s.out.size >= OUT_HIGH;
  }

  /** Bytes from the client: take them in and process what is complete. */
  push(chunk: Uint8Array): void {
    this.#parser.push(chunk);
    this.#run();
    if (this.#parser.discarding && !this.#paced && !this.#closed) {
      this.#paced = true;
      setTimeout(() => {
        this.#paced = false;
        this.#resumeInput();
      }, DISCARD_PAUSE_MS);
    }
  }

  /** The peer closed its sending side. A waiting reserve answers TIMED_OUT (as 1.12). */
  eof(): void {
    if (this.#closed || this.#eof) return;
    this.#eof = true;
    if (this.#waiting) this.#s.engine.cancelWait(this.#s.client);
    this.#run();
  }

  /** The socket is gone (reset, error): drop everything, release reservations. */
  abort(): void {
    this.#close();
  }

  // ---- the command loop ------------------------------------------------------------

  /** Process what can be processed; then the parser lets go of the adapter's chunk. */
  #run(): void {
    this.#process();
    this.#parser.release();
  }

  #process(): void {
    if (this.#closed) return;
    const p = this.#parser;
    const s = this.#s;
    while (!this.#stalled && !this.#quit) {
      const ev = p.next();
      if (ev === NEED_MORE) break;
      let step: Step | Promise<Step> = STEP.NEXT;
      try {
        switch (ev) {
          case LINE:
            step = dispatch(s, p.lineBuf, p.lineStart, p.lineEnd);
            break;
          case BODY:
            step = putBody(s, p.body);
            break;
          case OVERLONG:
            s.out.bytes(R.BAD_FORMAT);
            break;
          case SKIPPED:
            s.out.bytes(R.JOB_TOO_BIG);
            break;
          default:
            assertNever(ev);
        }
      } catch (e) {
        this.#internalError(e);
      }
      if (typeof step === "number") this.#step(step);
      else {
        this.#await(reserveBehind(s, p, step, (st) => !this.#closed && this.#step(st), (e) => this.#internalError(e)));
      }
    }
    if (this.#eof && !this.#stalled) this.#quit = true;
    // Replies already waiting for the engine, or a pending answer (settled when it comes).
    if (this.#settling || this.#pending) return;
    const changed = this.#changed;
    this.#changed = false;
    if (this.#s.engine.settle(this, changed, this.#s.out.size > 0)) {
      this.#settling = true;
      return;
    }
    this.#flush();
  }

  /** Act on what a command said comes next. */
  #step(step: Step): void {
    switch (step) {
      case STEP.NEXT:
        return;
      case STEP.CHANGED:
        this.#changed = true;
        return;
      case STEP.QUIT:
        this.#quit = true;
        return;
      case STEP.WAIT:
        if (this.#wokeEarly) this.#wokeEarly = false; // the wait is over already
        // A reserve read after the peer half-closed can never be answered by a job.
        else if (this.#eof) this.#s.engine.cancelWait(this.#s.client);
        else this.#waiting = true;
        return;
      case STEP.BODY:
        return this.#parser.expectBody(this.#s.cmd.n + 2);
      case STEP.SKIP:
        return this.#parser.skip(this.#s.cmd.n + 2);
      default:
        assertNever(step);
    }
  }

  /** An engine answer comes later: process nothing else until it is here and replied to. */
  #await(step: Promise<Step>): void {
    this.#pending = true;
    step.then(
      (st) => {
        this.#pending = false;
        if (!this.#closed) this.#step(st);
        this.#continue();
      },
      (e) => {
        this.#pending = false;
        this.#internalError(e);
        this.#continue();
      },
    );
  }

  /** Exceptions are bugs (an engine's failures included): answer INTERNAL_ERROR, log, keep serving. */
  #internalError(e: unknown): void {
    // an engine error it logged itself (core/engine.ts, Answer) is not logged again per command
    const logged = typeof e === "object" && e !== null && (e as { logged?: unknown }).logged === true;
    if (!logged) this.#owner.error(`internal error: ${e instanceof Error ? e.stack ?? e.message : e}`);
    this.#s.out.bytes(R.INTERNAL_ERROR);
  }

  /**
   * @internal The engine (Engine.settle) lets this batch's replies go (ok), or lost what
   * they acknowledge: drop the connection. A method, not a closure: a connection that
   * ran a command should hold no more than an idle one.
   */
  settled(ok: boolean, why?: string): void {
    if (this.#closed) return;
    if (!ok) {
      // Send none of this batch's replies and drop the connection: the client sees a
      // disconnect, never a false acknowledgement. The batch's changes may be applied
      // in memory but not on disk, which is acceptable because none of them was
      // acknowledged (they may vanish on a restart).
      this.#owner.error(
        `${why ?? "engine failed"}: dropping connection ${this.#s.id} without replying to its last commands`,
      );
      this.#close();
      return;
    }
    this.#settling = false;
    this.#flush();
    this.#continue();
  }

  /**
   * Resume processing later (never re-entering the queue from its callbacks): in this
   * turn, or with `afterOthers` once the event loop has polled other sockets. The
   * latter after a batch of replies was written: a client that pipelines a flood
   * (thousands of peeks) then gets one batch per turn, like every other client,
   * instead of a chain of microtasks that runs until its socket buffers are full.
   */
  #continue(afterOthers = false): void {
    if (this.#continueQueued || this.#closed) return;
    this.#continueQueued = true;
    this.#yielded = afterOthers && this.#full;
    const go = () => {
      this.#continueQueued = false;
      // An adapter may have held input back meanwhile (yielded): offer it onResume.
      if (this.#yielded) this.#inputPaused = true;
      this.#yielded = false;
      this.#run();
      this.#resumeInput();
    };
    if (afterOthers) this.#owner.turns.afterIO(go);
    else queueMicrotask(go);
  }

  /** Tell the adapter to read again if it stopped because `wantsInput` was false, and may go on now. */
  #resumeInput(): void {
    if (this.#inputPaused && this.wantsInput) {
      this.#inputPaused = false;
      this.onResume?.();
    }
  }

  /** The engine ended this client's wait (a job, a timeout, DEADLINE_SOON). */
  #wake(r: JobOut | WaitEnd): void {
    woken(this.#s.out, r);
    if (this.#waiting) {
      this.#waiting = false;
      this.#continue();
    } else if (this.#pending) {
      this.#wokeEarly = true; // the reserve's answer (a wait) is still on its way
    }
  }

  // ---- output ----------------------------------------------------------------------

  #flush(): void {
    // While the batch waits for the engine (the log's append, its fsync), nothing goes
    // out, not even when an earlier write completes: the output holds that batch's replies.
    if (this.#writing || this.#closed || this.#settling) return;
    if (this.#s.out.size === 0) {
      if (this.#quit) this.#close();
      return;
    }
    const out = this.#s.out;
    this.#full = out.size >= OUT_HIGH;
    const one = out.takeOne(); // the usual batch: one piece, no arrays
    if (one) return this.#write(one, null, 0);
    const pieces = out.take();
    this.#write(pieces[0], pieces, 0);
  }

  /** Write `piece` (pieces[i] when there is a list), then the rest of the list. */
  #write(piece: Uint8Array | undefined, pieces: Uint8Array[] | null, i: number): void {
    for (; piece !== undefined; piece = pieces?.[++i]) {
      let pending: void | Promise<void | number>;
      try {
        pending = this.#transport.write(piece);
      } catch {
        return this.#close();
      }
      if (pending) {
        this.#writing = true;
        const p = piece;
        pending.then(
          (n) => {
            this.#writing = false;
            // Taken in part: write the rest first.
            if (typeof n === "number" && n < p.length) this.#write(p.subarray(n), pieces, i);
            else this.#write(pieces?.[i + 1], pieces, i + 1);
          },
          () => this.#close(),
        );
        return;
      }
    }
    this.#s.out.release();
    if (this.#s.out.size > 0) return this.#flush();
    if (this.#quit) return this.#close();
    if (this.#parser.buffered > 0 || this.#inputPaused) this.#continue(true);
    else this.#s.out.idle();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#s.engine.disconnect(this.#s.client);
    const counters = this.#owner.counters;
    if (this.#s.producer) counters.producers--;
    if (this.#s.worker) counters.workers--;
    this.#owner.forget(this);
    try {
      this.#transport.close();
    } catch {
      // already gone
    }
    this.#resolveDone?.();
    this.onResume?.();
  }
}
