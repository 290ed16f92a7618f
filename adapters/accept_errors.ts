// What to do when accept() fails. Almost every accept error belongs to one connection
// (it was reset before we took it, ENOTCONN / ECONNABORTED) or to a passing shortage
// (out of file descriptors or buffers): the listener is fine, so log, wait a moment
// when resources ran out (as beanstalkd and nginx do), and accept again. Only an error
// saying the listener itself is gone ends serving, and the process must then exit
// non-zero so that a supervisor restarts it.

/** How the accept loop goes on after an error. */
export type AcceptVerdict = "retry" | "back-off" | "fatal";

/** errno values (Linux) of shortages that clear when connections close. */
const SHORTAGES = new Set([23, /* ENFILE */ 24, /* EMFILE */ 12, /* ENOMEM */ 105 /* ENOBUFS */]);

/** The listener resource is closed: nothing will ever be accepted from it again. */
const LISTENER_GONE = new Set(["BadResource", "Interrupted"]);

/** How long to wait after a shortage before accepting again. */
export const BACK_OFF_MS = 20;

export function acceptVerdict(err: unknown): AcceptVerdict {
  const name = err instanceof Error ? err.name : "";
  if (LISTENER_GONE.has(name)) return "fatal";
  const m = /os error (\d+)/.exec(err instanceof Error ? err.message : String(err));
  if (m && SHORTAGES.has(Number(m[1]))) return "back-off";
  return "retry";
}

/**
 * Logs accept errors without flooding the log: the first of a burst at once, then at
 * most one line per interval saying how many more there were.
 */
export class AcceptErrorLog {
  readonly #log: (line: string) => void;
  readonly #intervalMs: number;
  #lastAt = -Infinity;
  #quiet = 0;

  constructor(log: (line: string) => void, intervalMs = 1000) {
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  note(err: unknown, nowMs: number): void {
    if (nowMs - this.#lastAt < this.#intervalMs) {
      this.#quiet++;
      return;
    }
    const more = this.#quiet > 0 ? ` (and ${this.#quiet} more since the last report)` : "";
    this.#quiet = 0;
    this.#lastAt = nowMs;
    this.#log(`accept: ${err instanceof Error ? `${err.name}: ${err.message}` : err}${more}`);
  }
}
