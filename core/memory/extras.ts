// The extension state the in-memory engine keeps beside the stock model (docs/extensions.md):
// per job, in Store.extras, only for jobs that have some; per tube, in Tube.policy
// and Tube.keys, only for tubes that have them. Plain data, so the log (records.ts,
// core/memory/binlog/) can carry it.
import type { RetryPolicy } from "../engine.ts";

export type { RetryPolicy };

/** What a job may carry beyond beanstalkd's fields. */
export interface JobExtras {
  /** put-unique's key: no other job of its tube has it while this one lives. */
  key?: string;
  /** A dead letter: the tube it was in when its attempts ran out. */
  from?: string;
  /** Reserved when delete-tube emptied its tube: deleted instead of coming back. */
  doomed?: boolean;
}

/** Whether a policy does anything (a tube keeps none that does not). */
export function activePolicy(p: RetryPolicy): boolean {
  return p.maxAttempts > 0 || p.backoffBaseSec > 0;
}

/**
 * The delay (s) a job comes back with from its n-th failed attempt (n >= 1) under
 * backoff: base × 2^(n-1), at most cap (0: no cap), at most 2^32-1 s.
 */
export function backoffSec(p: RetryPolicy, n: number): number {
  const d = p.backoffBaseSec * 2 ** Math.min(n - 1, 32);
  const cap = p.backoffCapSec > 0 ? p.backoffCapSec : 4294967295;
  return Math.min(d, cap, 4294967295);
}
