// Jobs as a client sees them (peek + stats-job), for comparing one server's jobs with
// another's across a switch or a restart: the takeover and import suites.
import assert from "node:assert/strict";
import type { Running } from "./targets.ts";
import { dial, type Wire } from "./wire.ts";

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

/** -z for writeJobs's jobs: a body of exactly this size is among them. */
export const WRITE_JOBS_Z = 1000;

/**
 * Jobs in every state on a server (ids 1..12 on a fresh one; 11 deleted). Returns
 * the connection, which holds job 10 reserved, and the bury order of tube beta.
 */
export async function writeJobs(s: Running): Promise<{ w: Wire; ids: number[]; buried: number[] }> {
  const w = await dial(s.addr);
  const put = async (body: string, pri = 0, delay = 0, ttr = 60) => {
    const r = await w.put(body, pri, delay, ttr);
    return Number(/^INSERTED (\d+)\r\n$/.exec(r)![1]);
  };
  const ok = async (cmd: string, want: string) => assert.equal(await w.cmd(cmd), want, cmd);
  assert.equal(await put("plain", 5), 1);
  await ok("use alpha", "USING alpha\r\n");
  assert.equal(await put("line1\r\nline2\r\n", 100), 2);
  assert.equal(await put("m".repeat(WRITE_JOBS_Z), 3), 3);
  assert.equal(await put("n".repeat(WRITE_JOBS_Z - 1), 4), 4);
  await ok("use beta", "USING beta\r\n");
  assert.equal(await put("later", 9, 300), 5);
  assert.equal(await put("released", 8), 6);
  await ok("reserve-job 6", "RESERVED 6 8\r\nreleased\r\n");
  await ok("release 6 7 200", "RELEASED\r\n");
  assert.equal(await put("buried second", 50), 7);
  assert.equal(await put("buried first", 51), 8);
  await ok("reserve-job 8", "RESERVED 8 12\r\nburied first\r\n");
  await ok("bury 8 60", "BURIED\r\n");
  await ok("reserve-job 7", "RESERVED 7 13\r\nburied second\r\n");
  await ok("bury 7 61", "BURIED\r\n");
  assert.equal(await put("kicked", 2), 9);
  await ok("reserve-job 9", "RESERVED 9 6\r\nkicked\r\n");
  await ok("bury 9 2", "BURIED\r\n");
  await ok("kick-job 9", "KICKED\r\n");
  await ok("use gamma-x_y.z$(1)", "USING gamma-x_y.z$(1)\r\n");
  assert.equal(await put("held", 1, 0, 10), 10);
  await ok("reserve-job 10", "RESERVED 10 4\r\nheld\r\n");
  assert.equal(await put("gone"), 11);
  await ok("delete 11", "DELETED\r\n");
  assert.equal(await put("max pri", 4294967295), 12);
  return { w, ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], buried: [8, 7] };
}
