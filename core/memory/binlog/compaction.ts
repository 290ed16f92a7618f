// The compaction policy: when the files hold more than twice the live bytes (plus two
// files' worth), rewrite the oldest live jobs into the current file so that the oldest
// files die and can be collected. The work is paced by credit: twice the bytes the
// commands wrote, so compaction costs at most a constant factor of the write rate. How
// a job is rewritten (and logged) is binlog.ts's; when, here (README.md says why).
import type { Segments } from "./segments.ts";
import type { Homes } from "./homes.ts";
import { type Ballast, ballastFor } from "./ballast.ts";

/** What the policy needs of the log. */
export interface CompactionHost {
  readonly segs: Segments;
  readonly homes: Homes;
  readonly ballast: Ballast;
  readonly maxFileSize: number;
  closed(): boolean;
  /** Rewrite a live job's full record into the current file; `rescue`: even when the ballast is short. */
  migrate(id: number, rescue: boolean): boolean;
  /** Remove the dead files that may go now. */
  collect(): void;
}

export class Compaction {
  readonly #host: CompactionHost;
  #credit = 0;
  #queued = false;

  constructor(host: CompactionHost) {
    this.#host = host;
  }

  /** The commands wrote n bytes: earn credit while the files are wasteful, and compact at the end of the turn. */
  afterWrite(n: number): void {
    if (this.#wasteful()) {
      this.#credit += 2 * n;
      if (!this.#queued) {
        this.#queued = true;
        queueMicrotask(() => this.#compact());
      }
    } else {
      this.#credit = 0;
    }
  }

  #wasteful(): boolean {
    const s = this.#host.segs;
    return s.count >= 2 && s.bytes - s.pendingDead > 2 * this.#host.homes.liveBytes + 2 * this.#host.maxFileSize;
  }

  #compact(): void {
    this.#queued = false;
    const h = this.#host;
    let rescue = false;
    while (!h.closed() && this.#credit > 0 && this.#wasteful()) {
      const id = h.homes.oldestLiveId();
      if (id === undefined) break;
      const before = h.segs.position;
      if (!h.migrate(id, rescue)) {
        if (!rescue && (rescue = this.#rescuable(id))) continue;
        this.#credit = 0;
        break;
      }
      this.#credit -= h.segs.position - before;
      h.collect();
    }
    // the moves go to the file now, not with the next batch of some connection
    h.segs.flush();
    h.collect();
  }

  /**
   * On a full disk (the ballast cannot grow back after giving room to a batch),
   * compaction could never move the last live jobs out of the oldest file, so the
   * dead files behind them would never go and puts would stay refused after every
   * delete. Moving them anyway is a net gain when they are a small part of their
   * file and the ballast holds their bytes beyond what the live jobs' deletes need:
   * the records draw on the ballast (as a delete does), and once the file is
   * collected, the space is back and the ballast grows again.
   */
  #rescuable(id: number): boolean {
    const h = this.#host;
    const jobs = h.homes.jobs;
    const file = jobs.get(id)?.file;
    if (!file || file === h.segs.current) return false;
    let live = 0;
    for (const other of h.homes.liveIds(file)) live += jobs.get(other)!.size;
    return live <= file.size / 2 && live + ballastFor(jobs.size) <= h.ballast.size;
  }
}
