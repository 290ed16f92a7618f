// The extension commands (docs/extensions.md): lines no stock verb matches
// are tried here, so a stock command never pays for them. Names, arguments and replies
// are beanstalkd-pi's where it has the command (ping, capabilities, put-at, kick-tube,
// delete-tube, peek-tube, list-jobs, set-dlq), so its client and the
// beanstalkd-dashboard admin UI work with tubeway; tubeway's own (put-unique,
// set-backoff, the state argument of delete-tube and kick-tube, list-jobs' offset) are
// in the same style: one line, space-separated, upper-case replies. Arguments are
// checked before a command is counted (as beanstalkd-pi: BAD_FORMAT does not count,
// NOT_FOUND does). An engine without a method answers UNKNOWN_COMMAND for its command,
// and `capabilities` does not list it.
import { type Command, MAX_TUBE_NAME, OP, type Op } from "./command.ts";
import { I64, key, tube, u32 } from "./ext_args.ts";
import { dispatchFlow, FLOW_METHOD, FLOW_VERBS, flowBody, readFlowArgs } from "./flow_control.ts";
import { ascii } from "./bytes.ts";
import { R } from "./reply.ts";
import { EXT_KEYS } from "./counters.ts";
import { answer, found, markProducer, reply, type Session, STEP, type Step } from "./session.ts";
import { VERSION } from "../core/version.ts";
import { limitsYaml, listYaml, policyYaml, scalar } from "./yaml.ts";
import type {
  Engine,
  Exists,
  JobList,
  ListState,
  PutResult,
  Refusal,
  RetryPolicy,
  TubeLimits,
  TubeStats,
} from "../core/engine.ts";

/** Extension verbs: [name, op, argument count range], in the order capabilities lists them. */
const VERBS: ReadonlyMap<string, [Op, number, number]> = new Map([
  // beanstalkd-pi's, in its capabilities order
  ["ping", [OP.PING, 0, 0]],
  ["put-at", [OP.PUT_AT, 4, 4]],
  ["kick-tube", [OP.KICK_TUBE, 2, 3]],
  ["delete-tube", [OP.DELETE_TUBE, 1, 2]],
  ["peek-tube", [OP.PEEK_TUBE, 2, 2]],
  ["list-jobs", [OP.LIST_JOBS, 2, 4]],
  ["list-tubes-paused", [OP.LIST_TUBES_PAUSED, 0, 0]],
  ["stats-tube-all", [OP.STATS_TUBE_ALL, 0, 0]],
  ["stats-conn", [OP.STATS_CONN, 0, 1]],
  ["list-connections", [OP.LIST_CONNECTIONS, 0, 0]],
  ["set-dlq", [OP.SET_DLQ, 3, 3]],
  ["capabilities", [OP.CAPABILITIES, 0, 0]],
  ["drain", [OP.DRAIN, 1, 1]],
  // tubeway's own
  ["put-unique", [OP.PUT_UNIQUE, 5, 5]],
  ["set-backoff", [OP.SET_BACKOFF, 3, 3]],
  // flow control and recurring jobs (flow_control.ts)
  ...FLOW_VERBS,
]);

/** Which engine method serves each extension (ping and capabilities need none). */
const METHOD: Partial<Record<Op, keyof Engine>> = {
  [OP.PUT_AT]: "putAt",
  [OP.PUT_UNIQUE]: "putUnique",
  [OP.KICK_TUBE]: "kickTube",
  [OP.DELETE_TUBE]: "deleteTube",
  [OP.PEEK_TUBE]: "peekTube",
  [OP.SET_DLQ]: "setDlq",
  [OP.SET_BACKOFF]: "setBackoff",
  [OP.STATS_CONN]: "reservedIds",
  [OP.LIST_CONNECTIONS]: "reservedIds",
  ...FLOW_METHOD,
};

const PONG = ascii("PONG\r\n");
const DLQ_SET = ascii("DLQ_SET\r\n");
const BACKOFF_SET = ascii("BACKOFF_SET\r\n");
const NOT_DRAINING = ascii("NOT_DRAINING\r\n");
const DELETED_ = ascii("DELETED ");
const EXISTS_ = ascii("EXISTS ");

/** list-jobs: the default and the largest limit (beanstalkd-pi's; larger ones are capped, not refused). */
export const LIST_JOBS_DEFAULT = 100;
export const LIST_JOBS_MAX = 10000;

function listState(s: string): s is ListState {
  return s === "ready" || s === "delayed" || s === "buried";
}

/**
 * Parse buf[start, end) as an extension command into cmd. Returns cmd.op: the
 * command, BAD_FORMAT for its bad arguments, or UNKNOWN_COMMAND for a line that is
 * not one. Cold path: it runs only for lines no stock verb takes.
 */
export function parseExtension(buf: Uint8Array, start: number, end: number, cmd: Command): Op {
  let line = "";
  for (let i = start; i < end; i++) line += String.fromCharCode(buf[i]!);
  const words = line.split(" ").filter((w) => w !== "");
  const verb = VERBS.get(words[0] ?? "");
  // the verb is the line's first word exactly ("pingx" is not ping)
  if (!verb || !line.startsWith(words[0]! + " ") && line !== words[0]) return (cmd.op = OP.UNKNOWN_COMMAND);
  const [op, min, max] = verb;
  const a = words.slice(1);
  cmd.op = op;
  if (a.length < min || a.length > max) return (cmd.op = OP.BAD_FORMAT);
  return readArgs(cmd, op, a) ? op : (cmd.op = OP.BAD_FORMAT);
}

/** The arguments of an extension command; false when one is malformed. */
function readArgs(cmd: Command, op: Op, a: string[]): boolean {
  switch (op) {
    case OP.PUT_AT: {
      // put-at <pri> <unix-ts> <ttr> <bytes>: ts is signed 64-bit (past: ready now)
      cmd.pri = u32(a[0]!);
      const at = I64.test(a[1]!) ? Number(a[1]) : NaN;
      cmd.at = at;
      cmd.ttr = u32(a[2]!);
      cmd.n = u32(a[3]!);
      cmd.trailing = false;
      return cmd.pri >= 0 && Math.abs(at) < 2 ** 63 && cmd.ttr >= 0 && cmd.n >= 0;
    }
    case OP.PUT_UNIQUE:
      // put-unique <key> <pri> <delay> <ttr> <bytes>
      cmd.key = a[0]!;
      cmd.pri = u32(a[1]!);
      cmd.delay = u32(a[2]!);
      cmd.ttr = u32(a[3]!);
      cmd.n = u32(a[4]!);
      cmd.trailing = false;
      return key(cmd.key) && cmd.pri >= 0 && cmd.delay >= 0 && cmd.ttr >= 0 && cmd.n >= 0;
    case OP.KICK_TUBE:
      // kick-tube <tube> <bound> [buried|delayed]
      cmd.tube = a[0]!;
      cmd.n = u32(a[1]!);
      cmd.state = a[2] ?? "";
      return tube(cmd.tube) && cmd.n >= 0 && (cmd.state === "" || cmd.state === "buried" || cmd.state === "delayed");
    case OP.DELETE_TUBE:
      // delete-tube <tube> [ready|delayed|buried]
      cmd.tube = a[0]!;
      cmd.state = a[1] ?? "";
      return tube(cmd.tube) && (cmd.state === "" || listState(cmd.state));
    case OP.PEEK_TUBE:
      cmd.tube = a[0]!;
      cmd.state = a[1]!;
      return tube(cmd.tube) && listState(cmd.state);
    case OP.LIST_JOBS:
      // list-jobs <tube> <state> [limit [offset]]
      cmd.tube = a[0]!;
      cmd.state = a[1]!;
      cmd.n = a[2] === undefined ? LIST_JOBS_DEFAULT : Math.min(u32(a[2]), LIST_JOBS_MAX);
      cmd.offset = a[3] === undefined ? 0 : u32(a[3]);
      return tube(cmd.tube) && listState(cmd.state) && cmd.n >= 0 && cmd.offset >= 0;
    case OP.SET_DLQ:
      // set-dlq <tube> <max-attempts> <dead-tube>
      cmd.tube = a[0]!;
      cmd.n = u32(a[1]!);
      cmd.tube2 = a[2]!;
      return tube(cmd.tube) && cmd.n >= 0 && tube(cmd.tube2);
    case OP.STATS_CONN:
      // stats-conn [id]: a connection id (u64, as beanstalkd-pi reads it)
      if (a[0] !== undefined && !(/^[0-9]{1,20}$/.test(a[0]) && BigInt(a[0]) <= 0xffffffffffffffffn)) return false;
      cmd.id = a[0] === undefined ? 0 : Number(a[0]);
      return true;
    case OP.DRAIN:
      // drain on|off|status
      cmd.state = a[0]!;
      return cmd.state === "on" || cmd.state === "off" || cmd.state === "status";
    case OP.SET_BACKOFF:
      // set-backoff <tube> <base-seconds> <cap-seconds>
      cmd.tube = a[0]!;
      cmd.delay = u32(a[1]!);
      cmd.ttr = u32(a[2]!);
      return tube(cmd.tube) && cmd.delay >= 0 && cmd.ttr >= 0;
    case OP.PING:
    case OP.CAPABILITIES:
    case OP.STATS_TUBE_ALL:
    case OP.LIST_TUBES_PAUSED:
    case OP.LIST_CONNECTIONS:
      return true;
    default:
      return readFlowArgs(cmd, op, a);
  }
}

/** Whether this engine serves op (ping and capabilities: always). */
function serves(q: Engine, op: Op): boolean {
  const m = METHOD[op];
  return m === undefined || typeof q[m] === "function";
}

/** Run a parsed extension command (cmd.op is one of the extension ops). */
export function dispatchExtension(s: Session, op: Op): Step | Promise<Step> {
  const q = s.engine;
  const cmd = s.cmd;
  if (!serves(q, op)) return reply(s.out, R.UNKNOWN_COMMAND);
  s.ctx.counters.bumpExt(EXT_INDEX[op]!);
  switch (op) {
    case OP.PING:
      return reply(s.out, PONG);
    case OP.CAPABILITIES:
      s.out.data(capabilitiesYaml(q));
      return STEP.NEXT;
    case OP.STATS_TUBE_ALL:
    case OP.LIST_TUBES_PAUSED: {
      const names = q.tubeNames();
      return names instanceof Promise ? names.then((n) => everyTube(s, op, n)) : everyTube(s, op, names);
    }
    case OP.PUT_AT:
    case OP.PUT_UNIQUE:
      if (cmd.n > q.maxJobSize) return STEP.SKIP;
      markProducer(s);
      s.putId = q.takeId();
      return STEP.BODY;
    case OP.KICK_TUBE: {
      const state = cmd.state === "" ? undefined : cmd.state as "buried" | "delayed";
      return answer(s, q.kickTube!(cmd.tube, cmd.n, state), kicked);
    }
    case OP.DELETE_TUBE:
      return answer(s, q.deleteTube!(cmd.tube, cmd.state === "" ? undefined : cmd.state as ListState), deleted);
    case OP.PEEK_TUBE:
      return answer(s, q.peekTube!(cmd.tube, cmd.state as ListState), found);
    case OP.LIST_JOBS:
      return answer(s, q.listJobs(cmd.tube, cmd.state as ListState, cmd.n, cmd.offset), listed);
    case OP.SET_DLQ:
      return answer(s, q.setDlq!(cmd.tube, cmd.n, cmd.tube2), (s, r) => policySet(s, r, DLQ_SET));
    case OP.SET_BACKOFF:
      return answer(s, q.setBackoff!(cmd.tube, cmd.delay, cmd.ttr), (s, r) => policySet(s, r, BACKOFF_SET));
    case OP.STATS_CONN: {
      let target: Session | undefined = s;
      if (cmd.id !== 0) {
        target = undefined;
        for (const x of s.ctx.sessions()) if (x.id === cmd.id) target = x;
      }
      if (!target) return reply(s.out, R.NOT_FOUND);
      return connections(s, [target], "");
    }
    case OP.LIST_CONNECTIONS:
      return connections(s, [...s.ctx.sessions()], "- ");
    case OP.DRAIN:
      // the state after the command, as beanstalkd-pi answers (stats' draining shows it too)
      if (cmd.state === "on") q.drain();
      else if (cmd.state === "off") q.undrain();
      return reply(s.out, q.draining ? R.DRAINING : NOT_DRAINING);
    default:
      return dispatchFlow(s, op);
  }
}

/** The body of a put-at, put-unique or schedule (with its CRLF checked by the caller). */
export function extensionPutBody(s: Session, body: Uint8Array): Step | Promise<Step> {
  const cmd = s.cmd;
  const q = s.engine;
  if (cmd.op === OP.SCHEDULE) return flowBody(s, body);
  const job = { id: s.putId, pri: cmd.pri, delaySec: cmd.delay, ttrSec: cmd.ttr, body };
  if (cmd.op === OP.PUT_AT) return answer(s, q.putAt!(s.client, { ...job, atSec: cmd.at }), inserted);
  return answer(s, q.putUnique!(s.client, { ...job, key: cmd.key }), inserted);
}

/** Index into EXT_KEYS of each extension op. */
const EXT_INDEX: Partial<Record<Op, number>> = {};
for (const [name, [op]] of VERBS) EXT_INDEX[op] = (EXT_KEYS as readonly string[]).indexOf(name);

/** capabilities: beanstalkd-pi's document, listing the extensions this engine serves. */
export function capabilitiesYaml(q: Engine): string {
  let y = "---\n";
  y += `version: tubeway-${VERSION}\n`;
  y += `max-job-size: ${q.maxJobSize}\n`;
  y += `max-tube-name-len: ${MAX_TUBE_NAME}\n`;
  y += "extensions:\n";
  for (const [name, [op]] of VERBS) if (serves(q, op)) y += `- ${name}\n`;
  return y;
}

/** list-jobs: one mapping per job, beanstalkd-pi's keys in its order, then tubeway's attempts. */
export function listJobsYaml(l: JobList): string {
  let y = "---\n";
  for (const j of l.jobs) {
    y += `- id: ${j.id}\n`;
    y += `  pri: ${j.pri}\n`;
    y += `  age: ${Math.trunc(j.ageMs / 1000)}\n`;
    y += `  size: ${j.body.length}\n`;
    if (l.state === "delayed") y += `  time-left: ${Math.trunc(j.timeLeftMs / 1000)}\n`;
    y += `  attempts: ${j.releases + j.timeouts}\n`;
  }
  return y;
}

/**
 * stats-tube-all / list-tubes-paused: every tube's stats-tube (one engine call each,
 * O(1) apiece), `default` first and the rest by name, as beanstalkd-pi orders them.
 */
function everyTube(s: Session, op: Op, names: string[]): Step | Promise<Step> {
  const q = s.engine;
  const sorted = names.filter((n) => n !== "default").sort();
  if (names.includes("default")) sorted.unshift("default");
  const each = sorted.map((n) => q.statsTube(n));
  const write = (stats: (TubeStats | undefined)[]): Step => {
    const live = stats.filter((t): t is TubeStats => t !== undefined);
    if (op === OP.LIST_TUBES_PAUSED) {
      s.out.data(listYaml(live.filter((t) => t.pause > 0).map((t) => t.name).sort()));
    } else s.out.data(statsTubeAllYaml(live));
    return STEP.NEXT;
  };
  return each.some((a) => a instanceof Promise)
    ? Promise.all(each).then(write)
    : write(each as (TubeStats | undefined)[]);
}

/**
 * stats-tube-all: one mapping per tube with beanstalkd-pi's keys in its order (which is
 * not stats-tube's: current-waiting before current-watching, pause before cmd-delete),
 * its dlq keys whether or not the tube has a policy, then tubeway's own (backoff,
 * limits), always there too: a new command has no stock reader to surprise.
 */
export function statsTubeAllYaml(tubes: readonly TubeStats[]): string {
  let y = "---\n";
  for (const t of tubes) {
    y += `- name: ${scalar(t.name)}\n` +
      `  current-jobs-urgent: ${t.urgent}\n` +
      `  current-jobs-ready: ${t.ready}\n` +
      `  current-jobs-reserved: ${t.reserved}\n` +
      `  current-jobs-delayed: ${t.delayed}\n` +
      `  current-jobs-buried: ${t.buried}\n` +
      `  total-jobs: ${t.totalJobs}\n` +
      `  current-using: ${t.using}\n` +
      `  current-waiting: ${t.waiting}\n` +
      `  current-watching: ${t.watching}\n` +
      `  pause: ${t.pause}\n` +
      `  cmd-delete: ${t.cmdDelete}\n` +
      `  cmd-pause-tube: ${t.cmdPauseTube}\n` +
      `  pause-time-left: ${t.pauseTimeLeft}\n` +
      policyYaml(t.policy ?? NO_POLICY, "  ") +
      limitsYaml(t.limits ?? NO_LIMITS, "  ");
  }
  return y;
}

/**
 * stats-conn (`first` "") or list-connections ("- "): these connections, once the engine
 * says which jobs each holds (a database engine answers later).
 */
function connections(s: Session, xs: Session[], first: string): Step | Promise<Step> {
  return answer(s, s.engine.reservedIds!(xs.map((x) => x.client)), (s, held) => {
    let y = "---\n";
    xs.forEach((x, i) => (y += connectionYaml(x, first, held[i]!)));
    s.out.data(y);
    return STEP.NEXT;
  });
}

/**
 * One connection as stats-conn shows it, beanstalkd-pi's keys in its order; `first`
 * starts the first line ("- " in list-connections, whose other lines are indented);
 * `held` the ids of the jobs it holds reserved.
 */
function connectionYaml(x: Session, first: string, held: readonly number[]): string {
  const c = x.client;
  const pad = first === "" ? "" : "  ";
  const watching = c.watchedTubes().sort().join(", ");
  const reserved = held.join(", ");
  return `${first}id: ${x.id}\n` +
    `${pad}addr: ${scalar(x.addr)}\n` +
    `${pad}tube: ${scalar(c.usedTube)}\n` +
    `${pad}watching: [${watching}]\n` +
    `${pad}reserved-jobs: [${reserved}]\n` +
    `${pad}producer: ${x.producer}\n` +
    `${pad}worker: ${x.worker}\n` +
    `${pad}waiting: ${c.isWaiting === true}\n`;
}

const NO_POLICY: RetryPolicy = { maxAttempts: 0, deadTube: "", backoffBaseSec: 0, backoffCapSec: 0 };
const NO_LIMITS: TubeLimits = { concurrency: 0, rateCount: 0, rateWindowSec: 0 };

// ---- answers ------------------------------------------------------------------------

function inserted(s: Session, r: PutResult | Exists): Step {
  if (r === "DRAINING") return reply(s.out, R.DRAINING);
  if (r === "OUT_OF_MEMORY") return reply(s.out, R.OUT_OF_MEMORY);
  if ("exists" in r) {
    s.out.line(EXISTS_, r.exists);
    return STEP.NEXT;
  }
  s.out.line(R.INSERTED_, r.id);
  return STEP.CHANGED;
}

function kicked(s: Session, n: number | Refusal): Step {
  if (typeof n === "string") return reply(s.out, R[n]);
  s.out.line(R.KICKED_, n);
  return n > 0 ? STEP.CHANGED : STEP.NEXT;
}

function deleted(s: Session, n: number | Refusal): Step {
  if (typeof n === "string") return reply(s.out, R[n]);
  s.out.line(DELETED_, n);
  // even DELETED 0 may have logged reserved jobs as deleted
  return STEP.CHANGED;
}

function listed(s: Session, l: JobList | undefined): Step {
  if (!l) return reply(s.out, R.NOT_FOUND);
  s.out.data(listJobsYaml(l));
  return STEP.NEXT;
}

function policySet(s: Session, r: "OK" | "INTERNAL_ERROR", ok: Uint8Array): Step {
  if (r === "INTERNAL_ERROR") return reply(s.out, R.INTERNAL_ERROR);
  s.out.bytes(ok);
  return STEP.CHANGED;
}
