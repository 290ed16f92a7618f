// The extension state the in-memory engine keeps beside the stock model (issue 19):
// per job, in Store.extras, only for jobs that have some; per tube, in Tube.policy,
// only for tubes that have one. Plain data, so the log (records.ts, core/binlog/)
// can carry it.

/** What a job may carry beyond beanstalkd's fields. */
export interface JobExtras {
  /** put-unique's key: no other job of its tube has it while this one lives. */
  key?: string;
  /** A dead letter: the tube it was in when its attempts ran out. */
  from?: string;
  /** Reserved when delete-tube emptied its tube: deleted instead of coming back. */
  doomed?: boolean;
}

/** A tube's retry policy: set-dlq's limit and dead-letter tube, set-backoff's delays. */
export interface RetryPolicy {
  /** Attempts (reservations ended by a release or a TTR timeout) before the job is dead-lettered; 0: no limit. */
  maxAttempts: number;
  /** Where a job goes, buried, when its attempts run out ("" with no limit). */
  deadTube: string;
  /** A released or timed-out job comes back delayed by base × 2^(attempts-1) s, at most cap s; 0: no backoff. */
  backoffBaseSec: number;
  backoffCapSec: number;
}

/** The policy of a tube with none: no limit, no backoff. */
export function noPolicy(): RetryPolicy {
  return { maxAttempts: 0, deadTube: "", backoffBaseSec: 0, backoffCapSec: 0 };
}

/** Whether a policy does anything (a tube keeps none that does not). */
export function activePolicy(p: RetryPolicy): boolean {
  return p.maxAttempts > 0 || p.backoffBaseSec > 0;
}
