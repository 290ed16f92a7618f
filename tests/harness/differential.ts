// The differential suite's machinery (tests/system/differential_test.ts,
// tests/system/pg_three_nodes_test.ts): play a scripted session (harness/sessions.ts)
// against a server, normalise what depends on the process or the clock, and compare
// transcripts.
import { type Running, type Target } from "./targets.ts";
import { dial, type Wire } from "./wire.ts";
import { scalar } from "../../protocol/yaml.ts";
import { ANY, type Dialect, type Session, STATS_NORMALISED, type Step, type Want } from "./sessions.ts";

/** How long a step waits for its reply. */
export const REPLY_MS = 3000;

/**
 * String values, per YAML kind: 1.12 writes them raw, tubeway plain too unless a YAML
 * reader would misread them (then double-quoted, as 1.13 does; see protocol/yaml.ts).
 */
const STRINGS: Record<string, string[]> = {
  stats: ["hostname", "os", "platform"],
  "stats-tube": ["name"],
  "stats-job": ["tube"],
};

const FORMAT: Record<string, RegExp> = {
  pid: /^\d+$/,
  uptime: /^\d+$/,
  "rusage-utime": /^\d+\.\d{6}$/,
  "rusage-stime": /^\d+\.\d{6}$/,
  "current-connections": /^\d+$/,
  "total-connections": /^\d+$/,
  version: /^".+"$/,
  id: /^[0-9a-f]{16}$/,
  hostname: /^.*$/,
  os: /^.*$/,
  platform: /^.*$/,
};

/**
 * Replace process- and time-dependent values in an `OK` reply with "*", strip the quotes
 * that the dialect puts around string values, and recompute the byte count. A value
 * that is not in the expected shape is left as it is (so the comparison shows it).
 */
export function normalise(reply: string, dialect: Dialect, exact: readonly string[] = []): string {
  const m = /^OK (\d+)\r\n/.exec(reply);
  if (!m) return reply;
  const body = reply.slice(m[0].length);
  if (!body.endsWith("\r\n") || body.length !== Number(m[1]) + 2) return reply;
  const lines = body.slice(0, -2).split("\n");
  const first = lines[1]?.split(": ")[0];
  const kind = first === "current-jobs-urgent"
    ? "stats"
    : first === "id"
    ? "stats-job"
    : first === "name"
    ? "stats-tube"
    : "";
  if (!kind) return reply;
  const seen: Record<string, string> = {};
  const out = lines.map((line) => {
    const i = line.indexOf(": ");
    if (i < 0) return line;
    const key = line.slice(0, i);
    let value = line.slice(i + 2);
    if (STRINGS[kind]!.includes(key)) {
      // The values compared here need no escapes, so the quotes are all there is to strip.
      const raw = /^".*"$/.test(value) ? value.slice(1, -1) : value;
      const want = dialect === "tubeway" ? scalar(raw) : raw;
      // A wrong quoting is reported as is, never normalised away.
      if (value !== want) return `${key}: ${value} (expected ${want})`;
      value = raw;
    }
    seen[key] = value;
    let replace = false;
    if (kind === "stats") {
      replace = STATS_NORMALISED.includes(key) && !exact.includes(key) && (FORMAT[key]?.test(value) ?? false);
    } else if (kind === "stats-job") {
      replace = (key === "age" && /^\d+$/.test(value)) ||
        (key === "time-left" && /^-?\d+$/.test(value) && (seen["state"] === "reserved" || seen["state"] === "delayed"));
    } else {
      replace = key === "pause-time-left" && /^\d+$/.test(value) && seen["pause"] !== "0";
    }
    return `${key}: ${replace ? ANY : value}`;
  });
  const yaml = out.join("\n");
  return `OK ${yaml.length}\r\n${yaml}\r\n`;
}

export interface Entry {
  step: number;
  label: string;
  got: string;
}

function show(data: string): string {
  const s = data.length > 80 ? `${data.slice(0, 40)}…${data.slice(-20)} (${data.length} bytes)` : data;
  return JSON.stringify(s);
}

function label(s: Step): string {
  switch (s.op) {
    case "cmd":
      return `c${s.c} ${show(s.line + "\r\n")}`;
    case "send":
      return `c${s.c} send ${s.data.map(show).join(" + ")}`;
    case "reply":
      return `c${s.c} reply`;
    case "idle":
      return `c${s.c} after ${s.ms} ms`;
    case "closed":
      return `c${s.c} closed?`;
    case "until":
      return `c${s.c} ${show(s.line + "\r\n")} until ${s.match}`;
    default:
      return s.op;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Play a session against a fresh server; returns the normalised transcript. */
/**
 * What a comparison across servers whose job ids differ rewrites (see IdMap): the ids in
 * the command text sent, and those in the replies before they are recorded.
 */
export interface Rewrite {
  /** Command text (a line, or data sent raw) on connection `c` as this server must receive it. */
  sent(c: number, text: string): string;
  /** A reply at step `step`, as it is recorded for the comparison. */
  got(step: number, reply: string): string;
}

export async function play(
  target: Target,
  session: Session,
  dialect: Dialect,
  rewrite?: Rewrite,
): Promise<Entry[]> {
  const running: Running = await target.start(session.flags ?? []);
  const wires = new Map<number, Wire>();
  const out: Entry[] = [];
  const wire = async (c: number) => {
    let w = wires.get(c);
    if (!w) {
      w = await dial(running.addr);
      wires.set(c, w);
    }
    return w;
  };
  const record = (step: number, s: Step, got: string) =>
    out.push({ step, label: label(s), got: normalise(rewrite ? rewrite.got(step, got) : got, dialect, session.exact) });
  const sent = (c: number, text: string) => (rewrite ? rewrite.sent(c, text) : text);
  try {
    for (const [i, s] of session.steps.entries()) {
      try {
        switch (s.op) {
          case "cmd": {
            const w = await wire(s.c);
            record(i, s, await w.cmd(sent(s.c, s.line), s.ms ?? REPLY_MS));
            break;
          }
          case "send": {
            const w = await wire(s.c);
            for (const [k, d] of s.data.entries()) {
              if (k > 0 && s.gapMs > 0) await pause(s.gapMs);
              w.send(sent(s.c, d));
            }
            break;
          }
          case "reply":
            record(i, s, await (await wire(s.c)).reply(s.ms ?? REPLY_MS));
            break;
          case "idle": {
            const w = await wire(s.c);
            await w.silentFor(s.ms);
            const n = w.pending.length;
            record(i, s, n ? (await w.bytes(n)).toString("latin1") : "");
            break;
          }
          case "closed": {
            const w = await wire(s.c);
            let got = "(closed)";
            try {
              await w.closed(REPLY_MS);
            } catch {
              got = "(open)";
            }
            if (w.pending) got += ` after ${JSON.stringify(w.pending)}`;
            record(i, s, got);
            break;
          }
          case "until": {
            const w = await wire(s.c);
            const deadline = Date.now() + REPLY_MS;
            for (let last = ""; !s.match.test(last); await pause(20)) {
              if (Date.now() > deadline) throw new Error(`no reply matched (last ${JSON.stringify(last)})`);
              last = await w.cmd(sent(s.c, s.line), REPLY_MS);
            }
            break;
          }
          case "end":
            (await wire(s.c)).end();
            break;
          case "close":
            (await wire(s.c)).close();
            break;
          case "sleep":
            await pause(s.ms);
            break;
          case "signal":
            if (running.child) running.child.kill(s.sig);
            else if (s.sig === "SIGUSR1" && running.drain) running.drain(); // in process: what SIGUSR1 does
            else throw new Error("no server process to signal");
            break;
        }
      } catch (e) {
        // The first failure ends the session; the comparison shows where.
        out.push({ step: i, label: label(s), got: `(error: ${(e as Error).message})` });
        // and what the server printed, so that a failure in CI says why (not in the
        // comparison: some sessions end with an error on every server, beanstalkd too)
        const said = running.output().slice(-1500).trim();
        if (said) console.error(`${target.name}, "${session.name}", step ${i}: the server said:\n${said}`);
        break;
      }
    }
  } finally {
    for (const w of wires.values()) w.close();
    await running.stop();
  }
  return out;
}

function wantFor(want: Want, dialect: Dialect): string {
  return typeof want === "string" ? want : want[dialect];
}

/** The reply a step must give, if it says; cmd/reply wants get their CRLF added. */
function expected(s: Step, dialect: Dialect): string | undefined {
  if (!("want" in s) || s.want === undefined) return undefined;
  const w = wantFor(s.want, dialect);
  return (s.op === "cmd" || s.op === "reply") && !w.endsWith("\r\n") ? w + "\r\n" : w;
}

/** Steps whose want does not hold, as readable lines (empty when all hold). */
export function wrongWants(session: Session, got: Entry[], dialect: Dialect): string[] {
  const bad: string[] = [];
  for (const e of got) {
    const step = session.steps[e.step];
    const want = step && expected(step, dialect);
    if (want !== undefined && want !== e.got) {
      bad.push(`step ${e.step} ${e.label}: want ${JSON.stringify(want)}, got ${JSON.stringify(e.got)}`);
    }
  }
  return bad;
}

/** The transcript the subject must produce: beanstalkd's, with the deliberate differences swapped in. */
export function subjectTranscript(session: Session, reference: Entry[], dialect: Dialect): string[] {
  return lines(subjectEntries(session, reference, dialect));
}

/** subjectTranscript's entries. */
export function subjectEntries(session: Session, reference: Entry[], dialect: Dialect): Entry[] {
  return reference.map((e) => {
    const step = session.steps[e.step];
    const want = step && "want" in step && typeof step.want === "object" ? expected(step, dialect) : undefined;
    return { ...e, got: want ?? e.got };
  });
}

export const lines = (t: Entry[]) => t.map((e) => `${e.step} ${e.label} -> ${JSON.stringify(e.got)}`);

/** Run `fn` over items with at most `limit` at a time; results keep their order. */
export function pool<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R>[] {
  let active = 0;
  const queue: Array<() => void> = [];
  return items.map(async (item) => {
    if (active >= limit) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await fn(item);
    } finally {
      active--;
      queue.shift()?.();
    }
  });
}

/**
 * Rewrite the job ids in replies with `f`: `INSERTED <id>`, `BURIED <id>`,
 * `RESERVED <id> <n>` and `FOUND <id> <n>` (their bodies untouched), and the `id` of a
 * `stats-job` reply (its `OK <n>` recounted). Other text is kept as it is.
 */
export function mapIds(reply: string, f: (id: string) => string): string {
  let out = "";
  let p = 0;
  while (p < reply.length) {
    const e = reply.indexOf("\r\n", p);
    if (e < 0) return out + reply.slice(p);
    const head = reply.slice(p, e);
    let m: RegExpExecArray | null;
    if ((m = /^(INSERTED|BURIED) (\d+)$/.exec(head))) {
      out += `${m[1]} ${f(m[2]!)}\r\n`;
      p = e + 2;
    } else if ((m = /^(RESERVED|FOUND) (\d+) (\d+)$/.exec(head))) {
      const end = e + 2 + Number(m[3]) + 2;
      out += `${m[1]} ${f(m[2]!)} ${m[3]}\r\n${reply.slice(e + 2, end)}`;
      p = end;
    } else if ((m = /^OK (\d+)$/.exec(head))) {
      const n = Number(m[1]);
      const yaml = reply.slice(e + 2, e + 2 + n).replace(/^---\nid: (\d+)\n/, (_, id: string) => `---\nid: ${f(id)}\n`);
      out += `OK ${yaml.length}\r\n${yaml}${reply.slice(e + 2 + n, e + 2 + n + 2)}`;
      p = e + 2 + n + 2;
    } else {
      out += head + "\r\n";
      p = e + 2;
    }
  }
  return out;
}

/** The commands whose first argument is a job id. */
const ID_COMMAND = /(^|\r\n)(delete|release|bury|touch|peek|kick-job|stats-job|reserve-job) (\d+)(?=[ \r]|$)/g;

/**
 * A session played against several nodes that number jobs by block (docs/pg.md, "ids"):
 * ids are paired by order of appearance, step by step, the reference's n-th new id in
 * a reply with the subject's n-th new id in the same step's reply. Commands the session
 * sends with a reference id go out with the subject's, and the subject's replies are
 * recorded with the reference's ids. An id that pairs with none is left as it is, so a
 * job that is not the one the reference named still shows in the comparison.
 *
 * A command may name a job whose INSERTED has not come back yet (sent in the same write
 * as its put): its id is then predicted as the one beanstalkd would give, counted on
 * from the last id seen, on the node of the connection that sends it, whose ids start
 * at `firstId(c)` (the jobs between are taken to be put through that node too).
 */
export class IdMap implements Rewrite {
  readonly #reference: Entry[];
  readonly #firstId: (c: number) => number;
  readonly #toSubject = new Map<string, string>();
  readonly #toReference = new Map<string, string>();

  constructor(reference: Entry[], firstId: (c: number) => number = () => 1) {
    this.#reference = reference;
    this.#firstId = firstId;
  }

  sent(c: number, text: string): string {
    return text.replace(
      ID_COMMAND,
      (_, pre: string, verb: string, id: string) => `${pre}${verb} ${this.#toSubject.get(id) ?? this.#predict(c, id)}`,
    );
  }

  /** The subject's id for reference id `id` not seen yet, put through c's node; or `id` when it cannot be. */
  #predict(c: number, id: string): string {
    const r = Number(id);
    const refNext = Math.max(0, ...[...this.#toSubject.keys()].map(Number)) + 1;
    if (!Number.isSafeInteger(r) || r < refNext || r - refNext > 100) return id;
    const first = this.#firstId(c);
    const seen = [...this.#toReference.keys()].map(Number).filter((s) => s >= first && s < first + 1000);
    return String(Math.max(first - 1, ...seen) + 1 + (r - refNext));
  }

  got(step: number, reply: string): string {
    const ref: string[] = [];
    mapIds(this.#reference.find((e) => e.step === step)?.got ?? "", (id) => (ref.push(id), id));
    const sub: string[] = [];
    mapIds(reply, (id) => (sub.push(id), id));
    for (let k = 0; k < Math.min(ref.length, sub.length); k++) {
      if (!this.#toReference.has(sub[k]!) && !this.#toSubject.has(ref[k]!)) {
        this.#toReference.set(sub[k]!, ref[k]!);
        this.#toSubject.set(ref[k]!, sub[k]!);
      }
    }
    return mapIds(reply, (id) => this.#toReference.get(id) ?? id);
  }
}
