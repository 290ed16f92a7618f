// The commands: one parsed line -> the engine -> one reply, as a switch over the
// opcode that the compiler checks for completeness. Each returns the connection's next
// step (connection.ts acts on it), or a promise of one when the engine's answer comes
// later; its reply is written when the answer is there, and the connection processes
// nothing else meanwhile (but the reserve a worker sent right behind its delete, for an
// engine that takes both at once: reserveBehind), so replies leave in command order. The engine is known only
// through core/engine.ts. The state a command keeps between its line and its body is
// the connection's Session; this file owns no state.
import { COUNTER_OF, OP, parseCommand } from "./command.ts";
import { listYaml, statsJobYaml, statsTubeYaml, statsYaml } from "./yaml.ts";
import { assertNever } from "./never.ts";
import { type Output, R } from "./reply.ts";
import { ascii, CR, LF } from "./bytes.ts";
import type { Parser } from "./parser.ts";
import { answer, found, markProducer, markWorker, reply, type Session, STEP, type Step } from "./session.ts";
import { dispatchExtension, extensionPutBody, parseExtension } from "./extensions.ts";
import type { JobOut, JobStats, PutResult, Refusal, TubeStats, WaitEnd } from "../core/engine.ts";

export { type ConnectionContext, Session, STEP, type Step } from "./session.ts";

const RESERVE_LINE = ascii("reserve\r\n");
const RESERVE_TIMEOUT = ascii("reserve-with-timeout ");

/**
 * The step of a command whose answer comes later, and of the reserve read behind it if
 * the command was a worker's delete and the engine takes both at once
 * (Engine.reserveBehindDelete, so that both share one transaction): that reserve is run
 * now too, and the step settles once both have answered. `first` hears the delete's step,
 * `failed` its failure, before the reserve's reply is written (the engine settles the
 * delete's answer first).
 */
export function reserveBehind(
  s: Session,
  p: Parser,
  step: Promise<Step>,
  first: (st: Step) => void,
  failed: (e: unknown) => void,
): Promise<Step> {
  if (s.cmd.op !== OP.DELETE || !s.engine.reserveBehindDelete) return step;
  if (!p.lineNextStarts(RESERVE_LINE) && !p.lineNextStarts(RESERVE_TIMEOUT)) return step;
  p.next(); // LINE: the reserve
  let next: Promise<Step>;
  try {
    next = Promise.resolve(dispatch(s, p.lineBuf, p.lineStart, p.lineEnd));
  } catch (e) {
    next = Promise.reject(e);
  }
  next.catch(() => {}); // observed: its failure is answered once the delete's is
  return step.then((st) => {
    first(st);
    return next;
  }, (e) => {
    failed(e);
    return next;
  });
}

/** Run one command line, buf[start, end), writing its reply to s.out (now, or when the answer comes). */
export function dispatch(s: Session, buf: Uint8Array, start: number, end: number): Step | Promise<Step> {
  const cmd = s.cmd;
  const q = s.engine;
  const c = s.client;
  const out = s.out;
  if (s.ctx.verbose > 1) {
    s.ctx.log(`<${s.id} command ${String.fromCharCode(...buf.subarray(start, end))}`);
  }
  let op = parseCommand(buf, start, end, cmd);
  // Extensions only where 1.12 knows no verb, or takes a no-argument verb's prefix
  // ("stats-tube-all" is stats + garbage: BAD_FORMAT): well-formed stock lines never
  // reach them, and a line that is no extension keeps 1.12's answer.
  if (op === OP.UNKNOWN_COMMAND || op === OP.BAD_FORMAT) {
    const ext = parseExtension(buf, start, end, cmd);
    op = ext === OP.UNKNOWN_COMMAND ? (cmd.op = op) : ext;
  }
  // Counted once the line has parsed (beanstalkd's op_ct[type]++), before the command
  // runs: a put is counted even when its body turns out too big, a pause-tube even
  // when its name is then refused.
  const counter = COUNTER_OF[op]!;
  if (counter >= 0) s.ctx.counters.bump(counter);
  switch (op) {
    case OP.BAD_FORMAT:
      return reply(out, R.BAD_FORMAT);
    case OP.UNKNOWN_COMMAND:
      return reply(out, R.UNKNOWN_COMMAND);
    case OP.PUT:
      // JOB_TOO_BIG only after the body (and its CRLF) has been swallowed, and
      // before the trailing-garbage check, as 1.12 does.
      if (cmd.n > q.maxJobSize) return STEP.SKIP;
      if (cmd.trailing) return reply(out, R.BAD_FORMAT);
      markProducer(s);
      s.putId = q.takeId();
      // pri, delay and ttr stay in cmd until the body arrives: no line is parsed before.
      return STEP.BODY;
    case OP.PEEK:
      return answer(s, q.peek(cmd.id), found);
    case OP.PEEK_READY:
      return answer(s, q.peekReady(c), found);
    case OP.PEEK_DELAYED:
      return answer(s, q.peekDelayed(c), found);
    case OP.PEEK_BURIED:
      return answer(s, q.peekBuried(c), found);
    case OP.RESERVE:
    case OP.RESERVE_TIMEOUT: {
      markWorker(s);
      // A negative timeout (1.12's strtol reading) waits forever, like reserve.
      const r = q.reserve(c, op === OP.RESERVE || cmd.n < 0 ? Infinity : cmd.n * 1000);
      // answer() written out on the hot paths (reserve, delete, put): one callback per call site
      return r instanceof Promise ? r.then((v) => reserveAnswered(s, v)) : reserveAnswered(s, r);
    }
    case OP.RESERVE_JOB:
      return answer(s, q.reserveJob(c, cmd.id), reservedJob);
    case OP.DELETE: {
      const r = q.delete(c, cmd.id);
      return r instanceof Promise ? r.then((v) => changed(s, v)) : changed(s, r);
    }
    case OP.RELEASE:
      return answer(s, q.release(c, cmd.id, cmd.pri, cmd.delay), changed);
    case OP.BURY:
      return answer(s, q.bury(c, cmd.id, cmd.pri), changed);
    case OP.KICK:
      return answer(s, q.kick(c, cmd.n), kicked);
    case OP.KICK_JOB:
      return answer(s, q.kickJob(cmd.id), changed);
    case OP.TOUCH:
      return answer(s, q.touch(c, cmd.id), touched);
    case OP.STATS_JOB:
      return answer(s, q.statsJob(cmd.id), jobStats);
    case OP.STATS_TUBE:
      return answer(s, q.statsTube(cmd.tube), tubeStats);
    case OP.STATS:
      return answer(s, q.stats(), (s, e) => {
        s.out.data(statsYaml(e, s.ctx.counters, s.ctx.facts, q.maxJobSize, q.clock.now()));
        return STEP.NEXT;
      });
    case OP.USE:
      q.use(c, cmd.tube);
      return using(out, cmd.tube);
    case OP.WATCH:
      out.line(R.WATCHING_, q.watch(c, cmd.tube));
      return STEP.NEXT;
    case OP.IGNORE: {
      const n = q.ignore(c, cmd.tube);
      if (n === "NOT_IGNORED") return reply(out, R.NOT_IGNORED);
      out.line(R.WATCHING_, n);
      return STEP.NEXT;
    }
    case OP.LIST_TUBES_WATCHED:
      out.data(listYaml(c.watchedTubes()));
      return STEP.NEXT;
    case OP.LIST_TUBE_USED:
      return using(out, c.usedTube);
    case OP.LIST_TUBES:
      return answer(s, q.tubeNames(), (s, names) => {
        s.out.data(listYaml(names));
        return STEP.NEXT;
      });
    case OP.QUIT:
      return STEP.QUIT;
    case OP.PAUSE_TUBE:
      if (cmd.badName) return reply(out, R.BAD_FORMAT);
      return answer(s, q.pauseTube(cmd.tube, cmd.delay), paused);
    case OP.PING:
    case OP.CAPABILITIES:
    case OP.PUT_AT:
    case OP.PUT_UNIQUE:
    case OP.KICK_TUBE:
    case OP.DELETE_TUBE:
    case OP.PEEK_TUBE:
    case OP.LIST_JOBS:
    case OP.SET_DLQ:
    case OP.SET_BACKOFF:
    case OP.STATS_TUBE_ALL:
    case OP.LIST_TUBES_PAUSED:
    case OP.DRAIN:
    case OP.STATS_CONN:
    case OP.LIST_CONNECTIONS:
    case OP.SET_CONCURRENCY:
    case OP.SET_RATE:
    case OP.SCHEDULE:
    case OP.UNSCHEDULE:
    case OP.LIST_SCHEDULES:
      return dispatchExtension(s, op);
    default:
      return assertNever(op);
  }
}

/** The body of the put whose line was the last one dispatched (with its CRLF, if the client sent one). */
export function putBody(s: Session, body: Uint8Array): Step | Promise<Step> {
  const n = body.length;
  if (body[n - 2] !== CR || body[n - 1] !== LF) {
    // Its id, taken at the put line, stays used up (as in 1.12).
    return reply(s.out, R.EXPECTED_CRLF);
  }
  const cmd = s.cmd;
  if (cmd.op !== OP.PUT) return extensionPutBody(s, body);
  const r = s.engine.put(s.client, { id: s.putId, pri: cmd.pri, delaySec: cmd.delay, ttrSec: cmd.ttr, body });
  // answer() written out: this call site then sees one callback (the put path is the hottest)
  return r instanceof Promise ? r.then((v) => inserted(s, v)) : inserted(s, r);
}

/** A wait in reserve ended: write the job, TIMED_OUT or DEADLINE_SOON. */
export function woken(out: Output, r: JobOut | WaitEnd): void {
  if (typeof r === "string") out.bytes(R[r]);
  else out.job(R.RESERVED_, r.id, r.body);
}

// ---- answers --------------------------------------------------------------------------
// Each writes one reply for an engine answer and returns the step. They are functions
// of their own, not closures, so an answer that comes at once allocates nothing.

function using(out: Output, tube: string): Step {
  out.bytes(R.USING_);
  out.text(tube);
  out.bytes(R.CRLF);
  return STEP.NEXT;
}

function inserted(s: Session, r: PutResult): Step {
  // 1.12 also writes "server error: DRAINING" to stderr for each refused put; that is
  // the expected answer in drain mode, not a fault, so nothing is logged.
  if (r === "DRAINING") return reply(s.out, R.DRAINING);
  if (r === "OUT_OF_MEMORY") return reply(s.out, R.OUT_OF_MEMORY);
  s.out.line(R.INSERTED_, r.id);
  return STEP.CHANGED;
}

function reserveAnswered(s: Session, r: JobOut | WaitEnd | null): Step {
  if (r === null) return STEP.WAIT;
  woken(s.out, r);
  return STEP.NEXT;
}

function reservedJob(s: Session, j: JobOut | undefined): Step {
  if (!j) return reply(s.out, R.NOT_FOUND);
  markWorker(s);
  s.out.job(R.RESERVED_, j.id, j.body);
  return STEP.NEXT;
}

function changed(s: Session, r: "DELETED" | "RELEASED" | "BURIED" | "KICKED" | Refusal): Step {
  s.out.bytes(R[r]);
  return r === "NOT_FOUND" || r === "INTERNAL_ERROR" ? STEP.NEXT : STEP.CHANGED;
}

function kicked(s: Session, n: number | "INTERNAL_ERROR"): Step {
  if (n === "INTERNAL_ERROR") return reply(s.out, R.INTERNAL_ERROR);
  s.out.line(R.KICKED_, n);
  return n > 0 ? STEP.CHANGED : STEP.NEXT;
}

function touched(s: Session, ok: boolean): Step {
  return reply(s.out, ok ? R.TOUCHED : R.NOT_FOUND);
}

function paused(s: Session, ok: boolean): Step {
  return reply(s.out, ok ? R.PAUSED : R.NOT_FOUND);
}

function jobStats(s: Session, j: JobStats | undefined): Step {
  if (!j) return reply(s.out, R.NOT_FOUND);
  s.out.data(statsJobYaml(j));
  return STEP.NEXT;
}

function tubeStats(s: Session, t: TubeStats | undefined): Step {
  if (!t) return reply(s.out, R.NOT_FOUND);
  s.out.data(statsTubeYaml(t));
  return STEP.NEXT;
}
