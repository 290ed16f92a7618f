// Bounded loads that check flow control and schedules from the outside, on one node or
// several (connection i goes to addrs[i % addrs.length]): workers that hold what they
// reserve, a sampler of how many jobs are reserved at once, and the times reservations
// and scheduled jobs arrive. Each run is bounded in time and in jobs; the checks are the
// callers' (tests/system/flow_control_test.ts, pg_flow_control_test.ts).
import { type Address, dial, type Wire } from "./wire.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Fill `tube` with `n` small jobs through one connection (pipelined in batches). */
export async function fill(addr: Address, tube: string, n: number): Promise<void> {
  const w = await dial(addr);
  try {
    await w.cmd(`use ${tube}`);
    for (let done = 0; done < n;) {
      const k = Math.min(500, n - done);
      w.send(`put 0 0 120 1\r\nx\r\n`.repeat(k));
      for (let i = 0; i < k; i++) {
        const r = await w.line(10_000);
        if (!r.startsWith("INSERTED ")) throw new Error(`fill: ${r}`);
      }
      done += k;
    }
  } finally {
    w.close();
  }
}

export interface HoldResult {
  /** The most jobs the workers held at once (received RESERVED, not yet sent the delete). */
  maxHeld: number;
  /** The most `current-jobs-reserved` a sampler saw on any node (stats-tube). */
  maxReservedSeen: number;
  /** Samples the sampler took. */
  samples: number;
  /** Jobs reserved and deleted. */
  done: number;
  /** Ms the run took. */
  ms: number;
}

/**
 * `workers` connections reserve from `tube` (watched alone), hold each job `holdMs`, then
 * delete it, for `seconds` or until `jobs` are done; meanwhile a sampler asks each node
 * for the tube's reserved count every `sampleMs`.
 */
export async function holdRun(
  addrs: Address[],
  o: { tube: string; workers: number; holdMs: number; seconds: number; jobs: number; sampleMs?: number },
): Promise<HoldResult> {
  const conns: Wire[] = [];
  for (let i = 0; i < o.workers; i++) conns.push(await dial(addrs[i % addrs.length]!));
  const samplers = await Promise.all(addrs.map((a) => dial(a)));
  for (const c of conns) {
    await c.cmd(`watch ${o.tube}`);
    await c.cmd("ignore default");
  }
  const t0 = Date.now();
  const end = t0 + o.seconds * 1000;
  let held = 0, maxHeld = 0, done = 0, maxReservedSeen = 0, samples = 0;
  let stop = false;
  const worker = async (c: Wire) => {
    while (!stop && Date.now() < end && done < o.jobs) {
      const r = await c.cmd("reserve-with-timeout 1", 10_000);
      const m = /^RESERVED (\d+) /.exec(r);
      if (!m) {
        if (r !== "TIMED_OUT\r\n") throw new Error(`worker: ${JSON.stringify(r)}`);
        continue;
      }
      maxHeld = Math.max(maxHeld, ++held);
      await sleep(o.holdMs);
      held--;
      const d = await c.cmd(`delete ${m[1]}`, 10_000);
      if (d !== "DELETED\r\n") throw new Error(`delete: ${JSON.stringify(d)}`);
      done++;
    }
  };
  const sampler = async () => {
    while (!stop) {
      for (const s of samplers) {
        const st = await s.cmd(`stats-tube ${o.tube}`, 10_000);
        const m = /current-jobs-reserved: (\d+)/.exec(st);
        if (m) maxReservedSeen = Math.max(maxReservedSeen, Number(m[1]));
        samples++;
      }
      await sleep(o.sampleMs ?? 20);
    }
  };
  const s = sampler();
  try {
    await Promise.all(conns.map(worker));
  } finally {
    stop = true;
    await s.catch(() => {});
    for (const c of [...conns, ...samplers]) c.close();
  }
  return { maxHeld, maxReservedSeen, samples, done, ms: Date.now() - t0 };
}

/**
 * `workers` connections reserve and delete from `tube` as fast as they can for `seconds`;
 * returns when each reservation arrived (ms since the epoch, ascending).
 */
export async function reserveTimes(
  addrs: Address[],
  o: { tube: string; workers: number; seconds: number },
): Promise<number[]> {
  const conns: Wire[] = [];
  for (let i = 0; i < o.workers; i++) conns.push(await dial(addrs[i % addrs.length]!));
  for (const c of conns) await c.cmd(`watch ${o.tube}`);
  const end = Date.now() + o.seconds * 1000;
  const times: number[] = [];
  const worker = async (c: Wire) => {
    for (;;) {
      const left = end - Date.now();
      if (left <= 0) return;
      const r = await c.cmd(`reserve-with-timeout ${Math.max(1, Math.ceil(left / 1000))}`, left + 10_000);
      const m = /^RESERVED (\d+) /.exec(r);
      if (!m) continue;
      if (Date.now() <= end) times.push(Date.now());
      await c.cmd(`delete ${m[1]}`, 10_000);
    }
  };
  try {
    await Promise.all(conns.map(worker));
  } finally {
    for (const c of conns) c.close();
  }
  return times.sort((a, b) => a - b);
}

/** Reservations per window of `windowMs` from the first one (the last, partial window left out). */
export function perWindow(times: number[], windowMs: number, untilMs: number): number[] {
  if (times.length === 0) return [];
  const t0 = times[0]!;
  const n = Math.floor((untilMs - t0) / windowMs);
  const counts = new Array<number>(n).fill(0);
  for (const t of times) {
    const k = Math.floor((t - t0) / windowMs);
    if (k < n) counts[k]!++;
  }
  return counts;
}

/** The most reservations any window of `windowMs - slackMs` holds (a sliding window, client-side times). */
export function mostInAnyWindow(times: number[], windowMs: number, slackMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= windowMs - slackMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** The due times of the jobs in `tube` put by schedule `name` (their keys `<name>@<due>`), ascending. */
export async function scheduledDues(addr: Address, tube: string, name: string): Promise<number[]> {
  const w = await dial(addr);
  try {
    const list = await w.cmd(`list-jobs ${tube} ready 10000`, 10_000);
    const ids = [...list.matchAll(/^- id: (\d+)$/gm)].map((m) => m[1]!);
    const dues: number[] = [];
    for (const id of ids) {
      const st = await w.cmd(`stats-job ${id}`, 10_000);
      const m = new RegExp(`\\nunique-key: ${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}@(\\d+)\\n`).exec(st);
      if (m) dues.push(Number(m[1]));
    }
    return dues.sort((a, b) => a - b);
  } finally {
    w.close();
  }
}
