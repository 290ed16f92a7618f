// When a recurring job (the `schedule` command, docs/extensions.md) is due: its spec
// read once, and its due times as whole Unix seconds, UTC. Both engines and the protocol
// (which refuses a malformed spec before the command is counted) read specs here.
//
// A spec is one token on the command line, so a cron expression cannot keep its spaces:
// its five fields are joined by `_`, which no cron field uses (`0_9_*_*_1-5` is
// `0 9 * * 1-5`); `@hourly`, `@daily`, `@midnight`, `@weekly`, `@monthly`, `@yearly`
// and `@annually` stand alone. `every:<seconds>` (1 to 2^32-1) is due at every multiple
// of that many seconds since the Unix epoch (as BullMQ's `every`), so `every:60` is due
// at the top of each minute and every node of a cluster computes the same due times.
// Cron is parsed by croner (npm, no dependencies, made for Node, Deno and Bun), in its
// 5-field mode, in UTC: a day of month and a day of week both given match either (as
// Vixie cron).
import { Cron } from "croner";

/** A well-formed spec. */
export interface Spec {
  /** The token as given. */
  readonly text: string;
  /** The first due time strictly after `afterSec` (Unix seconds), or Infinity: never again. */
  next(afterSec: number): number;
  /** The last due time at or before `atSec`, or -Infinity: none. */
  last(atSec: number): number;
}

const U32_MAX = 4294967295;
/** The most a spec token may be (the command line is at most 224 bytes in all). */
export const MAX_SPEC = 200;
const NICKNAMES = new Set(["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"]);
/** Characters of a cron field croner reads (numbers, names, * , - / L W # ?) and `_` between fields. */
const CRON_TOKEN = /^[0-9A-Za-z*,\-/#?]+(?:_[0-9A-Za-z*,\-/#?]+){4}$/;

/** The spec of a token, or undefined when it is malformed or never due. */
export function parseSpec(text: string): Spec | undefined {
  if (text.length > MAX_SPEC) return undefined;
  if (text.startsWith("every:")) {
    const digits = text.slice(6);
    if (!/^[0-9]{1,10}$/.test(digits)) return undefined;
    const n = Number(digits);
    return n >= 1 && n <= U32_MAX ? every(text, n) : undefined;
  }
  if (!NICKNAMES.has(text) && !CRON_TOKEN.test(text)) return undefined;
  let cron: Cron;
  try {
    // paused and without a function: croner sets no timer of its own
    cron = new Cron(NICKNAMES.has(text) ? text : text.replaceAll("_", " "), {
      mode: "5-part",
      utcOffset: 0,
      paused: true,
    });
  } catch {
    return undefined;
  }
  const spec: Spec = {
    text,
    next(afterSec) {
      const d = cron.nextRun(new Date(afterSec * 1000));
      return d === null ? Infinity : Math.floor(d.getTime() / 1000);
    },
    last(atSec) {
      // a run earlier in the same second as the reference counts: half a second past atSec
      const d = cron.previousRuns(1, new Date(atSec * 1000 + 500))[0];
      return d === undefined ? -Infinity : Math.floor(d.getTime() / 1000);
    },
  };
  // a day that never comes (`0_0_30_2_*`): from the epoch on, every other spec is due within a few years
  return spec.next(0) < Infinity ? spec : undefined;
}

function every(text: string, n: number): Spec {
  return {
    text,
    next: (afterSec) => (Math.floor(afterSec / n) + 1) * n,
    last: (atSec) => Math.floor(atSec / n) * n,
  };
}

/**
 * The due time a schedule runs for at `nowSec`, whose runs up to `afterSec` are done: the
 * latest due time in (afterSec, nowSec], so runs missed while nothing ran put one job,
 * not a burst; undefined when none is due yet.
 */
export function dueAt(spec: Spec, afterSec: number, nowSec: number): number | undefined {
  if (spec.next(afterSec) > nowSec) return undefined;
  return spec.last(nowSec);
}
