// Jobs as a client sees them (peek + stats-job), for comparing one server's jobs with
// another's across a switch or a restart: the takeover and import suites.
import assert from "node:assert/strict";
import type { Running } from "./targets.ts";
import type { Wire } from "./wire.ts";

export interface JobView {
  id: number;
  body: string;
  stats: Record<string, string>;
}

/** peek and stats-job of one job (values unquoted: 1.12 writes them plain); undefined if gone. */
export async function view(w: Wire, id: number): Promise<JobView | undefined> {
  const peek = await w.cmd(`peek ${id}`);
  if (peek === "NOT_FOUND\r\n") return undefined;
  const m = /^FOUND (\d+) (\d+)\r\n/.exec(peek);
  assert.ok(m && Number(m[1]) === id, peek.slice(0, 40));
  const body = peek.slice(m[0].length, -2);
  const stats: Record<string, string> = {};
  for (const line of (await w.cmd(`stats-job ${id}`)).split("\n").slice(2)) {
    const kv = /^([a-z-]+): "?(.*?)"?$/.exec(line);
    if (kv) stats[kv[1]!] = kv[2]!;
  }
  return { id, body, stats };
}

export async function viewAll(w: Wire, ids: number[]): Promise<Map<number, JobView | undefined>> {
  const out = new Map<number, JobView | undefined>();
  for (const id of ids) out.set(id, await view(w, id));
  return out;
}

/** Buried jobs of a tube in the order kick takes them (this kicks them all). */
export async function buriedOrder(w: Wire, tube: string): Promise<number[]> {
  assert.equal(await w.cmd(`use ${tube}`), `USING ${tube}\r\n`);
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await w.cmd("peek-buried");
    if (r === "NOT_FOUND\r\n") break;
    ids.push(Number(/^FOUND (\d+) /.exec(r)![1]));
    assert.equal(await w.cmd("kick 1"), "KICKED 1\r\n");
  }
  return ids;
}

/**
 * Expect `got` to be `want` as a restart shows it: same body and fields, reserved
 * made ready, delays counted on from their deadline, `buriesAdded` more buries for
 * buried jobs (1.12's replay counts one), ages no younger. A reserve is not logged
 * (by beanstalkd or tubeway), so a job reserved in `want` comes back with the count
 * of its last logged change: one reserve fewer here.
 */
export function assertSame(
  got: JobView | undefined,
  want: JobView | undefined,
  downSec: number,
  buriesAdded = 0,
): void {
  if (want === undefined) return assert.equal(got, undefined);
  assert.ok(got, `job ${want.id} is missing`);
  assert.equal(got.body, want.body, `job ${want.id} body`);
  const state = want.stats.state === "reserved" ? "ready" : want.stats.state;
  assert.equal(got.stats.state, state, `job ${want.id} state`);
  for (const k of ["tube", "pri", "delay", "ttr", "timeouts", "releases", "kicks"]) {
    assert.equal(got.stats[k], want.stats[k], `job ${want.id} ${k}`);
  }
  const reserves = Number(want.stats.reserves) - (want.stats.state === "reserved" ? 1 : 0);
  assert.equal(Number(got.stats.reserves), reserves, `job ${want.id} reserves`);
  const buries = Number(want.stats.buries) + (state === "buried" ? buriesAdded : 0);
  assert.equal(Number(got.stats.buries), buries, `job ${want.id} buries`);
  assert.ok(Number(got.stats.age) >= Number(want.stats.age), `job ${want.id} age ${got.stats.age}`);
  if (state === "delayed") {
    const left = Number(got.stats["time-left"]);
    const was = Number(want.stats["time-left"]);
    assert.ok(left <= was + 1 && left >= was - downSec - 2, `job ${want.id} time-left ${left}, was ${was}`);
  }
}

/** SIGKILL, and wait for the exit (at once if it has exited). */
export async function killed(s: Running): Promise<void> {
  if (s.child!.exitCode !== null || s.child!.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    s.child!.once("exit", () => resolve());
    s.child!.kill("SIGKILL");
  });
}
