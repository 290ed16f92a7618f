// The in-memory engine's extension commands (docs/extensions.md): empty or kick a whole
// tube, peek at a named tube, put at an absolute time, unique puts, retry policies (dead
// letters, backoff) and the tubes' limits (their holds: limits.ts; the recurring jobs are
// schedules.ts). They change state only through the Store's
// primitives, like the stock commands (core/memory/queue.ts), and log every change first.
//
// What stock clients pay: nothing per job. Extension state lives in Store.extras (jobs
// that have a key, an origin or a doom) and on the tubes that have a policy or keys;
// the stock paths look at it only through `tube.policy !== null` and `extras.size > 0`.
import type { Client, Job, Tube } from "./model.ts";
import type {
  Exists,
  JobStats,
  ListState,
  NewJobAt,
  PutResult,
  Refusal,
  RetryPolicy,
  TubeLimits,
  TubeState,
  UniqueJob,
} from "../engine.ts";
import { activePolicy, backoffSec } from "./extras.ts";
import type { Store } from "./store.ts";

/** Seconds a delay may take on the wire (u32), as put's. */
const MAX_DELAY_SEC = 4294967295;

const NO_POLICY: RetryPolicy = { maxAttempts: 0, deadTube: "", backoffBaseSec: 0, backoffCapSec: 0 };
const NO_LIMITS: TubeLimits = { concurrency: 0, rateCount: 0, rateWindowSec: 0 };

export class Extensions {
  readonly #s: Store;

  constructor(store: Store) {
    this.#s = store;
  }

  // ---- whole tubes ------------------------------------------------------------------

  /**
   * delete-tube: the tube's jobs in `state` (none: ready, delayed and buried) deleted
   * now, with one log record; without a state, the jobs reserved now are deleted when
   * they come back (see comesBack). O(jobs deleted), plus a scan of the reserved jobs.
   */
  deleteTube(name: string, state?: TubeState): number | Refusal {
    const s = this.#s;
    const t = s.tubes.get(name);
    if (!t) return "NOT_FOUND";
    const gone: Job[] = [];
    // Last first: taking a heap's last item moves nothing.
    if (state === undefined || state === "ready") {
      for (let i = t.ready.size - 1; i >= 0; i--) gone.push(t.ready.items[i]!);
    }
    if (state === undefined || state === "delayed") {
      for (let i = t.delayed.size - 1; i >= 0; i--) gone.push(t.delayed.items[i]!);
    }
    if (state === undefined || state === "buried") { for (let j = t.buried.head; j; j = j.next) gone.push(j); }
    const doomed: Job[] = [];
    if (state === undefined && t.reserved > 0) {
      for (const j of s.schedule.ttr.items) if (j.tube === t && !s.extras.get(j.id)?.doomed) doomed.push(j);
    }
    if (gone.length === 0 && doomed.length === 0) return 0;
    const now = s.clock.now();
    // The reserved ones are deleted in the log now: a restart brings them back, and
    // coming back is when they go.
    if (s.logging && !s.logged(s.wal.purge(name, [...gone, ...doomed].map((j) => j.id)), now)) {
      return "INTERNAL_ERROR";
    }
    for (const j of gone) {
      s.unlink(j);
      s.forget(j);
    }
    for (const j of doomed) {
      const x = s.extras.get(j.id);
      if (x) x.doomed = true;
      else s.extras.set(j.id, { doomed: true });
    }
    // as beanstalkd-pi: each job counts in the tube's cmd-delete
    t.cmdDelete += gone.length;
    s.tubes.dropIfUnused(t);
    return gone.length;
  }

  /** kick-tube: kick on a named tube; with a state, only buried or only delayed jobs. */
  kickTube(name: string, bound: number, state?: "buried" | "delayed"): number | Refusal {
    const t = this.#s.tubes.get(name);
    if (!t) return "NOT_FOUND";
    return this.#s.kickIn(t, bound, state === undefined ? t.buried.size > 0 : state === "buried");
  }

  /** peek-tube: the job peek-ready, -delayed or -buried would show on that tube. */
  peekTube(name: string, state: ListState): Job | undefined {
    const t = this.#s.tubes.get(name);
    if (!t) return undefined;
    return state === "ready" ? t.ready.peek() : state === "delayed" ? t.delayed.peek() : t.buried.head ?? undefined;
  }

  // ---- puts -------------------------------------------------------------------------

  /** put-at: ready at `atSec` (Unix seconds), resolved now into a delay (as beanstalkd-pi). */
  putAt(c: Client, job: NewJobAt): Job | PutResult {
    const s = this.#s;
    const now = s.clock.now();
    const delayMs = Math.min(Math.max(0, Math.floor(job.atSec * 1000 - s.clock.wallMs())), MAX_DELAY_SEC * 1000);
    const j = s.newJob(c.use, job.pri, delayMs, job.ttrSec, job.body, job.id, now);
    return s.insert(j, now) ? j : "OUT_OF_MEMORY";
  }

  /** put-unique: put, unless a live job of the used tube holds the key (O(1): the tube's key map). */
  putUnique(c: Client, job: UniqueJob): Job | PutResult | Exists {
    const s = this.#s;
    const t = c.use;
    const key = job.key;
    const held = t.keys?.get(key);
    if (held) return { exists: held.id };
    const now = s.clock.now();
    const j = s.newJob(t, job.pri, job.delaySec * 1000, job.ttrSec, job.body, job.id, now);
    s.extras.set(job.id, { key }); // before insert: the log's full record carries the key
    // Keyed before insert too: a waiting worker may take the job inside insert, and
    // a delete of it must find the key.
    (t.keys ??= new Map()).set(key, j);
    if (!s.insert(j, now)) {
      s.dropExtras(j);
      return "OUT_OF_MEMORY";
    }
    return j;
  }

  // ---- retry policies ---------------------------------------------------------------

  /** set-dlq: the limit and dead-letter tube of a tube's policy (0: no limit). */
  setDlq(name: string, maxAttempts: number, deadTube: string): "OK" | "INTERNAL_ERROR" {
    const t = this.#s.tubes.obtain(name);
    const p = t.policy ?? NO_POLICY;
    return this.#setPolicy(t, { ...p, maxAttempts, deadTube: maxAttempts > 0 ? deadTube : "" });
  }

  /** set-backoff: the delays of a tube's policy (base 0: none). */
  setBackoff(name: string, baseSec: number, capSec: number): "OK" | "INTERNAL_ERROR" {
    const t = this.#s.tubes.obtain(name);
    const p = t.policy ?? NO_POLICY;
    return this.#setPolicy(t, { ...p, backoffBaseSec: baseSec, backoffCapSec: baseSec > 0 ? capSec : 0 });
  }

  #setPolicy(t: Tube, p: RetryPolicy): "OK" | "INTERNAL_ERROR" {
    const s = this.#s;
    if (s.logging && !s.logged(s.wal.policy(t.name, p), s.clock.now())) {
      s.tubes.dropIfUnused(t);
      return "INTERNAL_ERROR";
    }
    t.policy = activePolicy(p) ? p : null;
    s.tubes.dropIfUnused(t);
    return "OK";
  }

  // ---- limits -------------------------------------------------------------------------

  /** set-concurrency: at most `max` jobs of the tube reserved at once (0: none). */
  setConcurrency(name: string, max: number): "OK" | "INTERNAL_ERROR" {
    const t = this.#s.tubes.obtain(name);
    return this.#setLimits(t, { ...(t.limits?.view ?? NO_LIMITS), concurrency: max });
  }

  /** set-rate: at most `count` reservations of the tube in any window of `windowSec` seconds (count 0: none). */
  setRate(name: string, count: number, windowSec: number): "OK" | "INTERNAL_ERROR" {
    const t = this.#s.tubes.obtain(name);
    const l = t.limits?.view ?? NO_LIMITS;
    return this.#setLimits(t, { ...l, rateCount: count, rateWindowSec: count > 0 ? windowSec : 0 });
  }

  #setLimits(t: Tube, l: TubeLimits): "OK" | "INTERNAL_ERROR" {
    const s = this.#s;
    const now = s.clock.now();
    if (s.logging && !s.logged(s.wal.limits(t.name, l), now)) {
      s.tubes.dropIfUnused(t);
      return "INTERNAL_ERROR";
    }
    s.limits.set(t, l, now);
    // a higher limit, or none, may let waiting clients have the tube's jobs now
    s.serve([t]);
    s.tubes.dropIfUnused(t);
    return "OK";
  }

  /** Limits restored from the log. */
  restoreLimits(limits: Map<string, TubeLimits>): void {
    const now = this.#s.clock.now();
    for (const [name, l] of limits) {
      if (l.concurrency > 0 || l.rateCount > 0) this.#s.limits.set(this.#s.tubes.obtain(name), l, now);
    }
  }

  // ---- what comes back from a reservation -------------------------------------------

  /**
   * A release of j (reserved, still linked) by its holder, when its tube has a policy
   * or some job has extension state: the reply when this handled it (a doomed job is
   * deleted, a job out of attempts dead-lettered), else the delay the release goes on
   * with (the requested one, or the backoff's when longer).
   */
  released(j: Job, pri: number, delaySec: number): "RELEASED" | "INTERNAL_ERROR" | number {
    const s = this.#s;
    if (s.extras.size > 0 && this.#doomed(j)) {
      s.unlink(j);
      this.#drop(j);
      return "RELEASED";
    }
    const p = j.tube.policy;
    if (p === null) return delaySec;
    const attempts = j.releases + j.timeouts + 1;
    if (p.maxAttempts > 0 && attempts >= p.maxAttempts) {
      return this.#deadLetter(j, pri, 1, s.clock.now()) ? "RELEASED" : "INTERNAL_ERROR";
    }
    return p.backoffBaseSec > 0 ? Math.max(delaySec, backoffSec(p, attempts)) : delaySec;
  }

  /** A bury of j (reserved, still linked) by its holder: true when j was doomed and is now deleted. */
  buried(j: Job): boolean {
    if (!this.#doomed(j)) return false;
    this.#s.unlink(j);
    this.#drop(j);
    return true;
  }

  /**
   * j's TTR ran out (j is unlinked, its timeouts counted): true when this handled it
   * (deleted when doomed, dead-lettered, or delayed by the backoff); false: it goes
   * back to ready as usual. Under a policy the attempt is logged (so attempts survive
   * a restart); when the log refuses, the job goes back to ready as in 1.12.
   */
  timedOut(j: Job, now: number): boolean {
    const s = this.#s;
    if (s.extras.size > 0 && this.comesBack(j)) return true;
    const p = j.tube.policy;
    if (p === null) return false;
    const attempts = j.releases + j.timeouts;
    if (p.maxAttempts > 0 && attempts >= p.maxAttempts) return this.#deadLetter(j, j.pri, 0, now);
    const d = p.backoffBaseSec > 0 ? backoffSec(p, attempts) : 0;
    const deadline = now + d * 1000;
    if (s.logging) {
      const logged = s.logUpdate(j, d > 0 ? "delayed" : "ready", now, (rec) => {
        rec.delayMs = d > 0 ? d * 1000 : rec.delayMs;
        rec.deadlineAtMs = d > 0 ? s.records.wall(deadline, now) : 0;
      });
      if (!logged || d === 0) return false;
    } else if (d === 0) return false;
    j.delayMs = d * 1000;
    j.deadline = Math.floor(deadline);
    s.addDelayed(j);
    return true;
  }

  /** j (unlinked) came back from a reservation: true when it was doomed by delete-tube, and is now deleted. */
  comesBack(j: Job): boolean {
    if (!this.#doomed(j)) return false;
    this.#drop(j);
    return true;
  }

  #doomed(j: Job): boolean {
    return this.#s.extras.get(j.id)?.doomed === true;
  }

  /** A doomed job goes (its delete is in the log since the delete-tube). */
  #drop(j: Job): void {
    this.#s.forget(j);
    this.#s.tubes.dropIfUnused(j.tube);
  }

  /**
   * j's attempts ran out: buried at the tail of its tube's dead-letter tube, with where
   * it came from; its unique key is released (a dead letter is no longer pending
   * work). `releases`: 1 when a release ended the attempt. One full record in the log
   * (the job changes tube). j is linked (a release) or not (a TTR).
   */
  #deadLetter(j: Job, pri: number, releases: number, now: number): boolean {
    const s = this.#s;
    const from = j.tube;
    const to = s.tubes.obtain(from.policy!.deadTube);
    const logged = !s.logging || s.logFull(j, now, (rec) => {
      rec.tube = to.name;
      rec.state = "buried";
      rec.pri = pri;
      rec.deadlineAtMs = 0;
      rec.releases += releases;
      rec.from = from.name;
      delete rec.key;
    });
    if (!logged) {
      s.tubes.dropIfUnused(to);
      return false;
    }
    if (j.owner !== null) s.unlink(j);
    s.dropExtras(j);
    s.extras.set(j.id, { from: from.name });
    j.pri = pri;
    j.releases += releases;
    j.tube = to;
    s.addBuried(j);
    s.deadLettered++;
    s.tubes.dropIfUnused(from);
    return true;
  }

  // ---- looking ----------------------------------------------------------------------

  /** stats-job's extension keys, for a job that has them. */
  jobStats(st: JobStats): JobStats {
    const x = this.#s.extras.get(st.id);
    if (x?.key !== undefined) st.key = x.key;
    if (x?.from !== undefined) st.deadLetterFrom = x.from;
    return st;
  }

  /** Policies restored from the log (set-dlq, set-backoff). */
  restorePolicies(policies: Map<string, RetryPolicy>): void {
    for (const [name, p] of policies) if (activePolicy(p)) this.#s.tubes.obtain(name).policy = { ...p };
  }
}
