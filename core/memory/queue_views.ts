// The in-memory engine's read side: the Engine calls that only look (peeks, stats-job,
// stats-tube, stats, the tube and job listings, metrics) and change nothing. Queue
// (core/memory/queue.ts) extends this class and holds the state; the split keeps queue.ts to
// the calls that change jobs, tubes and waiting clients (and log those changes), so
// that a reader following a put or a reserve does not wade through the stats.
import type { Client, Job } from "./model.ts";
import type { Clock } from "../clock.ts";
import type { EngineMetrics, EngineStats, JobList, JobStats, ListState, TubeSnapshot, TubeStats } from "../engine.ts";
import { jobGauges, jobStats, listJobs, tubeSnapshot, tubeStats } from "./stats.ts";
import type { Wal } from "./wal.ts";
import type { Store } from "./store.ts";
import type { Extensions } from "./extensions.ts";
import type { Schedules } from "./schedules.ts";

export abstract class QueueViews {
  abstract readonly clock: Clock;
  abstract readonly wal: Wal;
  /** True while put is refused (drain mode). */
  abstract readonly draining: boolean;
  /** Queue's store and extensions (core/memory/store.ts, core/memory/extensions.ts). */
  protected abstract readonly s: Store;
  protected abstract readonly x: Extensions;
  protected abstract readonly schedules: Schedules;

  peek(id: number): Job | undefined {
    return this.s.jobs.get(id);
  }
  peekReady(c: Client): Job | undefined {
    return c.use.ready.peek();
  }
  peekDelayed(c: Client): Job | undefined {
    return c.use.delayed.peek();
  }
  /** The oldest-buried job of the used tube (head of its FIFO). */
  peekBuried(c: Client): Job | undefined {
    return c.use.buried.head ?? undefined;
  }

  statsJob(id: number): JobStats | undefined {
    const j = this.s.jobs.get(id);
    if (!j) return undefined;
    const st = jobStats(j, this.clock.now(), this.wal.fileOf(id));
    return this.s.extras.size > 0 ? this.x.jobStats(st) : st;
  }

  statsTube(name: string): TubeStats | undefined {
    const t = this.s.tubes.get(name);
    return t && tubeStats(t, this.clock.now());
  }

  stats(): EngineStats {
    return {
      ...jobGauges(this.s.tubes.all()),
      tubes: this.s.tubes.size,
      waiting: this.s.waits.count,
      totalJobs: this.s.totalJobs,
      jobTimeouts: this.s.jobTimeouts,
      draining: this.draining,
      binlog: this.wal.stats(),
    };
  }

  tubeNames(): string[] {
    return this.s.tubes.all().map((t) => t.name);
  }

  tubes(names: readonly string[]): TubeSnapshot[] {
    const now = this.clock.now();
    const out: TubeSnapshot[] = [];
    for (const n of names) {
      const t = this.s.tubes.get(n);
      if (t) out.push(tubeSnapshot(t, now));
    }
    return out;
  }

  listJobs(tube: string, state: ListState, limit: number, offset = 0): JobList | undefined {
    const t = this.s.tubes.get(tube);
    return t && listJobs(t, state, limit, this.clock.now(), offset);
  }

  metrics(): EngineMetrics {
    return {
      readyToReserve: this.s.readyToReserve,
      reserveToDelete: this.s.reserveToDelete,
      log: this.wal.health?.(),
      deadLettered: this.s.deadLettered,
      scheduleRuns: this.schedules.runs,
    };
  }

  hasTube(name: string): boolean {
    return this.s.tubes.get(name) !== undefined;
  }

  peekTube(tube: string, state: ListState): Job | undefined {
    return this.x.peekTube(tube, state);
  }

  /** stats-conn, list-connections: the ids each client holds reserved, ascending. */
  reservedIds(clients: readonly Client[]): number[][] {
    return clients.map((c) => c.reservedIds());
  }
}
