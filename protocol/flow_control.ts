// The flow-control and recurring-job commands (docs/extensions.md): per-tube limits
// (set-concurrency, set-rate) and schedules (schedule, unschedule, list-schedules).
// Tubeway's own, in the extensions' style: one line, space-separated arguments,
// upper-case replies, BAD_FORMAT (not counted) for a malformed argument. extensions.ts
// looks their verbs up with its own and hands their arguments and their run here.
import { type Command, OP, type Op } from "./command.ts";
import { ascii } from "./bytes.ts";
import { R } from "./reply.ts";
import { answer, reply, type Session, STEP, type Step } from "./session.ts";
import { key, tube, u32 } from "./ext_args.ts";
import { scalar } from "./yaml.ts";
import { parseSpec } from "../core/schedule_spec.ts";
import type { Engine, Refusal, ScheduleInfo } from "../core/engine.ts";

/** Their verbs: [name, op, argument count range], in the order capabilities lists them. */
export const FLOW_VERBS: ReadonlyArray<[string, [Op, number, number]]> = [
  ["set-concurrency", [OP.SET_CONCURRENCY, 2, 2]],
  ["set-rate", [OP.SET_RATE, 3, 3]],
  ["schedule", [OP.SCHEDULE, 6, 6]],
  ["unschedule", [OP.UNSCHEDULE, 1, 1]],
  ["list-schedules", [OP.LIST_SCHEDULES, 0, 0]],
];

/** Which engine method serves each. */
export const FLOW_METHOD: Partial<Record<Op, keyof Engine>> = {
  [OP.SET_CONCURRENCY]: "setConcurrency",
  [OP.SET_RATE]: "setRate",
  [OP.SCHEDULE]: "schedule",
  [OP.UNSCHEDULE]: "unschedule",
  [OP.LIST_SCHEDULES]: "listSchedules",
};

const CONCURRENCY_SET = ascii("CONCURRENCY_SET\r\n");
const RATE_SET = ascii("RATE_SET\r\n");
const SCHEDULED = ascii("SCHEDULED\r\n");

/** Their arguments (a: the words after the verb, counted already); false when one is malformed. */
export function readFlowArgs(cmd: Command, op: Op, a: string[]): boolean {
  switch (op) {
    case OP.SET_CONCURRENCY:
      // set-concurrency <tube> <max>
      cmd.tube = a[0]!;
      cmd.n = u32(a[1]!);
      return tube(cmd.tube) && cmd.n >= 0;
    case OP.SET_RATE:
      // set-rate <tube> <count> <seconds>: a window of at least a second, unless count 0 removes it
      cmd.tube = a[0]!;
      cmd.n = u32(a[1]!);
      cmd.delay = u32(a[2]!);
      return tube(cmd.tube) && cmd.n >= 0 && cmd.delay >= 0 && (cmd.n === 0 || cmd.delay > 0);
    case OP.SCHEDULE:
      // schedule <name> <tube> <spec> <pri> <ttr> <bytes>
      cmd.key = a[0]!;
      cmd.tube = a[1]!;
      cmd.spec = a[2]!;
      cmd.pri = u32(a[3]!);
      cmd.ttr = u32(a[4]!);
      cmd.n = u32(a[5]!);
      cmd.trailing = false;
      return key(cmd.key) && tube(cmd.tube) && cmd.pri >= 0 && cmd.ttr >= 0 && cmd.n >= 0 &&
        parseSpec(cmd.spec) !== undefined;
    case OP.UNSCHEDULE:
      cmd.key = a[0]!;
      return key(cmd.key);
    case OP.LIST_SCHEDULES:
      return true;
    default:
      return false;
  }
}

/** Run one of them (parsed, counted, and served by this engine). */
export function dispatchFlow(s: Session, op: Op): Step | Promise<Step> {
  const q = s.engine;
  const cmd = s.cmd;
  switch (op) {
    case OP.SET_CONCURRENCY:
      return answer(s, q.setConcurrency!(cmd.tube, cmd.n), (s, r) => set(s, r, CONCURRENCY_SET));
    case OP.SET_RATE:
      return answer(s, q.setRate!(cmd.tube, cmd.n, cmd.delay), (s, r) => set(s, r, RATE_SET));
    case OP.SCHEDULE:
      // JOB_TOO_BIG after the body is swallowed, as put
      return cmd.n > q.maxJobSize ? STEP.SKIP : STEP.BODY;
    case OP.UNSCHEDULE:
      return answer(s, q.unschedule!(cmd.key), unscheduled);
    case OP.LIST_SCHEDULES:
      return answer(s, q.listSchedules!(), (s, list) => {
        s.out.data(listSchedulesYaml(list));
        return STEP.NEXT;
      });
    default:
      return reply(s.out, R.UNKNOWN_COMMAND);
  }
}

/** schedule's body (its CRLF checked by the caller). */
export function flowBody(s: Session, body: Uint8Array): Step | Promise<Step> {
  const cmd = s.cmd;
  const r = s.engine.schedule!({ name: cmd.key, tube: cmd.tube, spec: cmd.spec, pri: cmd.pri, ttrSec: cmd.ttr, body });
  return answer(s, r, (s, r) => set(s, r, SCHEDULED));
}

/**
 * list-schedules: a sequence of mappings by name, like list-connections': the first key
 * after `-`, the others indented by two spaces. Due times are Unix seconds (last-due 0:
 * none yet).
 */
export function listSchedulesYaml(list: readonly ScheduleInfo[]): string {
  let y = "---\n";
  for (const x of list) {
    y += `- name: ${scalar(x.name)}\n` +
      `  tube: ${x.tube}\n` +
      `  spec: ${scalar(x.spec)}\n` +
      `  pri: ${x.pri}\n` +
      `  ttr: ${x.ttrSec}\n` +
      `  size: ${x.size}\n` +
      `  next-due: ${x.nextDueSec}\n` +
      `  last-due: ${x.lastDueSec}\n`;
  }
  return y;
}

function set(s: Session, r: "OK" | "INTERNAL_ERROR", ok: Uint8Array): Step {
  if (r === "INTERNAL_ERROR") return reply(s.out, R.INTERNAL_ERROR);
  s.out.bytes(ok);
  return STEP.CHANGED;
}

function unscheduled(s: Session, r: "DELETED" | Refusal): Step {
  s.out.bytes(R[r]);
  return r === "DELETED" ? STEP.CHANGED : STEP.NEXT;
}
