// Group commit. Positions are bytes appended to the log since open (across files),
// so "everything written before this call" is just a number to wait for.
//
// wait() records the current position and resolves once a sync that started at or
// after it succeeds. The sync itself starts in a microtask, so every wait() made in
// the same synchronous turn (one batch of pipelined commands) shares it; while a
// sync is in flight, new waiters gather for the next one, which starts as soon as
// the running one ends. So under load each fsync covers everything that arrived
// during the previous one: one fsync per disk round trip, however many clients.
//
// No timers here: the interval policy (-f MS) is applied by the binlog after each
// write and by its tick(), which the server's single timer calls.

/** Performs one sync; resolves to the position it made durable, or false. */
export type SyncRun = () => Promise<number | false>;

interface Waiter {
  target: number;
  resolve: (ok: boolean) => void;
}

export class GroupCommit {
  #run: SyncRun;
  #position: () => number;
  #synced: number;
  #waiters: Waiter[] = [];
  #scheduled = false;
  #busy = false;
  #again = false;
  /** Completed sync runs (successful or not). */
  runs = 0;

  /** `synced`: the position already on disk when the log opens (0: nothing yet). */
  constructor(run: SyncRun, position: () => number, synced = 0) {
    this.#run = run;
    this.#position = position;
    this.#synced = synced;
  }

  /** Position known to be on disk. */
  get synced(): number {
    return this.#synced;
  }

  /** True while a sync is running or about to start. */
  get active(): boolean {
    return this.#busy || this.#scheduled;
  }

  /** Resolves true once everything written before the call is durable, false if that failed. */
  wait(): Promise<boolean> {
    const target = this.#position();
    if (target <= this.#synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      this.#waiters.push({ target, resolve });
      this.kick();
    });
  }

  /** Start a sync soon (or right after the running one) if anything is unsynced. */
  kick(): void {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => void this.#start());
  }

  /** Everything is durable now (a blocking sync at close): settle all waiters. */
  settleAll(ok: boolean): void {
    if (ok) this.#synced = this.#position();
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w.resolve(ok);
  }

  async #start(): Promise<void> {
    this.#scheduled = false;
    if (this.#busy) return;
    const startedAt = this.#position();
    if (startedAt <= this.#synced && this.#waiters.length === 0) return;
    this.#busy = true;
    this.#again = false;
    let result: number | false = false;
    try {
      result = await this.#run();
    } catch {
      result = false;
    }
    this.#busy = false;
    this.runs++;
    if (result !== false) this.#synced = Math.max(this.#synced, result);
    const keep: Waiter[] = [];
    for (const w of this.#waiters) {
      if (w.target <= this.#synced) w.resolve(true);
      else if (result === false && w.target <= startedAt) w.resolve(false);
      else keep.push(w);
    }
    this.#waiters = keep;
    if (keep.length > 0 || this.#again) this.kick();
  }
}
