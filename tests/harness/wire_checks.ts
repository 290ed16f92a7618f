// Replies and checks for tests that speak the protocol (the wire suite, tests/system/wire/,
// and the other system tests): expected reply bytes, a put that returns its id, YAML
// replies read as maps, polling for state no reply announces, and connections closed
// with their test.
import assert from "node:assert/strict";
import { type Address, dial, type Wire } from "./wire.ts";
import type { Running } from "./targets.ts";

/** `<WORD> <id> <bytes>\r\n<body>\r\n` (latin1: one char, one byte). */
export function jobReply(word: "FOUND" | "RESERVED", id: number, body: string): string {
  return `${word} ${id} ${body.length}\r\n${body}\r\n`;
}

/** `OK <n>\r\n<yaml>\r\n`. */
export function ok(yaml: string): string {
  return `OK ${yaml.length}\r\n${yaml}\r\n`;
}

/** A list-tubes / list-tubes-watched reply. */
export function list(...names: string[]): string {
  return ok("---\n" + names.map((n) => `- ${n}\n`).join(""));
}

let seq = 0;
/** A tube name no other test on the same server uses. */
export function tubeName(prefix: string): string {
  return `${prefix}.${++seq}`;
}

/** `w` watches `tube` alone (it ignores default). */
export async function watchOnly(w: Wire, tube: string): Promise<void> {
  await w.cmd(`watch ${tube}`);
  await w.cmd("ignore default");
}

/** A fresh tube that `w` uses and watches alone. */
export async function onlyTube(w: Wire, prefix: string): Promise<string> {
  const t = tubeName(prefix);
  await w.cmd(`use ${t}`);
  await watchOnly(w, t);
  return t;
}

/** put and return the new job id (asserting INSERTED). */
export async function putId(w: Wire, body: string, pri = 0, delay = 0, ttr = 60): Promise<number> {
  return insertedId(await w.put(body, pri, delay, ttr), `put ${pri} ${delay} ${ttr}`);
}

/** The job id of a put's reply, asserting it is `INSERTED <id>`. */
export function insertedId(reply: string, what = "put"): number {
  const m = /^INSERTED (\d+)\r\n$/.exec(reply);
  assert.ok(m, `${what}: expected INSERTED <id>, got ${JSON.stringify(reply)}`);
  return Number(m[1]);
}

/** Parse an `OK <n>` YAML reply into [key, value] pairs, checking the byte count and framing. */
export function yamlPairs(reply: string): Array<[string, string]> {
  const m = /^OK (\d+)\r\n([\s\S]*)\r\n$/.exec(reply);
  assert.ok(m, `expected OK <n> with data, got ${JSON.stringify(reply)}`);
  const doc = m[2]!;
  assert.equal(Number(m[1]), doc.length, "OK <n> must count the YAML bytes");
  assert.ok(doc.startsWith("---\n") && doc.endsWith("\n"), `YAML framing: ${JSON.stringify(doc)}`);
  return doc.slice(4, -1).split("\n").map((l) => {
    const i = l.indexOf(": ");
    assert.ok(i > 0, `YAML line ${JSON.stringify(l)}`);
    return [l.slice(0, i), l.slice(i + 2)] as [string, string];
  });
}

/** A YAML reply as a map with a numeric getter that fails loudly on a missing key. */
export class Yaml {
  readonly keys: string[];
  readonly map: Map<string, string>;
  constructor(reply: string) {
    const pairs = yamlPairs(reply);
    this.keys = pairs.map(([k]) => k);
    this.map = new Map(pairs);
  }
  str(k: string): string {
    const v = this.map.get(k);
    assert.ok(v !== undefined, `missing key ${k} in ${JSON.stringify(this.keys)}`);
    return v;
  }
  num(k: string): number {
    const v = this.str(k);
    assert.match(v, /^-?\d+$/, `${k} should be an integer, got ${JSON.stringify(v)}`);
    return Number(v);
  }
}

export async function stats(w: Wire): Promise<Yaml> {
  return new Yaml(await w.cmd("stats"));
}
export async function statsJob(w: Wire, id: number): Promise<Yaml> {
  return new Yaml(await w.cmd(`stats-job ${id}`));
}
export async function statsTube(w: Wire, tube: string): Promise<Yaml> {
  return new Yaml(await w.cmd(`stats-tube ${tube}`));
}

/** Wait `ms` (for what real time does; a manual clock cannot reach a server process). */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Poll `probe` until `done` holds: at most `timeoutMs`, at most 200 tries. For state
 * that no reply announces (another connection's close being noticed, a signal landing).
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 3000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (let i = 0; i < 200; i++) {
    last = await probe();
    if (done(last)) return last;
    if (Date.now() > deadline) break;
    await sleep(15);
  }
  assert.fail(`${what}: still not so after ${timeoutMs} ms; last ${JSON.stringify(last)}`);
}

/** Wait until `n` connections wait in reserve on `tube` (seen through `obs`). */
export async function waitersOn(obs: Wire, tube: string, n: number): Promise<void> {
  await eventually(
    `${n} waiting on ${tube}`,
    async () => (await statsTube(obs, tube)).num("current-waiting"),
    (v) => v === n,
  );
}

/** Connections opened by one test, all closed when it ends (pass or fail). */
export class Conns {
  readonly #addr: Address;
  readonly #open: Wire[] = [];
  constructor(addr: Address) {
    this.#addr = addr;
  }
  async dial(): Promise<Wire> {
    const w = await dial(this.#addr);
    this.#open.push(w);
    return w;
  }
  closeAll(): void {
    for (const w of this.#open) w.close();
    this.#open.length = 0;
  }
}

/** Run `body` with a fresh set of connections to `srv`, closing them afterwards. */
export async function withConns(srv: () => Running, body: (c: Conns) => Promise<void>): Promise<void> {
  const c = new Conns(srv().addr);
  try {
    await body(c);
  } finally {
    c.closeAll();
  }
}

/** Milliseconds `p` takes. */
export async function timed<T>(p: Promise<T>): Promise<[T, number]> {
  const t0 = Date.now();
  const v = await p;
  return [v, Date.now() - t0];
}
