// GET /metrics: the Prometheus text format (version 0.0.4). The beanstalkd_* names
// and labels are beanstalkd-pi's, so alerts written for it carry over; tubeway_* are
// ours (queue latency, the log's health).
//
// A scrape walks every tube. With many tubes that is real work on the one thread the
// protocol port also runs on, so the per-tube part is built in slices of TUBES_PER_SLICE
// tubes with a macrotask yield between them: protocol connections are served in the
// gaps and a scrape never holds the loop for long. The tube list is copied first (the
// live one is reordered as tubes come and go); a tube dropped mid-scrape still shows.
import type { Queue } from "../../core/queue.ts";
import type { Tube } from "../../core/model.ts";
import type { Histogram } from "../../core/histogram.ts";
import { CMD_KEYS } from "../../core/stats.ts";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Tubes rendered between two yields to the event loop. */
export const TUBES_PER_SLICE = 500;

/** What a scrape reads. */
export interface MetricsSource {
  queue: Queue;
  /** Monotonic ms at start (for uptime). */
  startedAtMs: number;
  version: string;
}

type Kind = "gauge" | "counter" | "histogram";

/** One metric family: its header and sample lines, rendered contiguously as the format requires. */
class Family {
  readonly lines: string[] = [];
  constructor(readonly name: string, readonly kind: Kind, readonly help: string) {}
  add(labels: string, value: number): void {
    this.lines.push(`${this.name}${labels} ${num(value)}`);
  }
  text(): string {
    const head = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} ${this.kind}\n`;
    return this.lines.length === 0 ? head : head + this.lines.join("\n") + "\n";
  }
}

function num(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** A label value escaped as the format says (backslash, quote, newline). */
export function labelValue(v: string): string {
  return /[\\"\n]/.test(v) ? v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n") : v;
}

/** Seconds since the oldest ready job of t became ready; 0 when none is ready. */
export function oldestReadyMs(t: Tube, nowMs: number): number {
  let oldest = Infinity;
  for (const j of t.ready.items) if (j.readySince < oldest) oldest = j.readySince;
  return oldest === Infinity ? 0 : Math.max(0, nowMs - oldest);
}

function histogram(f: Family, h: Histogram, labels = ""): void {
  const sep = labels ? "," : "";
  let cumulative = 0;
  for (let i = 0; i < h.boundsMs.length; i++) {
    cumulative += h.counts[i]!;
    f.lines.push(`${f.name}_bucket{${labels}${sep}le="${h.boundsMs[i]! / 1000}"} ${cumulative}`);
  }
  f.lines.push(`${f.name}_bucket{${labels}${sep}le="+Inf"} ${h.count}`);
  f.lines.push(`${f.name}_sum${labels ? `{${labels}}` : ""} ${h.sumMs / 1000}`);
  f.lines.push(`${f.name}_count${labels ? `{${labels}}` : ""} ${h.count}`);
}

const yieldToLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** The whole exposition text. `pause` is awaited between slices (tests pass their own). */
export async function renderMetrics(src: MetricsSource, pause: () => Promise<void> = yieldToLoop): Promise<string> {
  const q = src.queue;
  const fams: Family[] = [];
  const fam = (name: string, kind: Kind, help: string) => {
    const f = new Family(name, kind, help);
    fams.push(f);
    return f;
  };
  const now = q.clock.now();
  const g = q.gauges();
  const c = q.counters;

  fam("beanstalkd_up", "gauge", "1 while the server answers.").add("", 1);
  fam("beanstalkd_uptime_seconds", "gauge", "Seconds since the server started.")
    .add("", Math.floor((now - src.startedAtMs) / 1000));
  fam("beanstalkd_draining", "gauge", "1 in drain mode (puts are refused).").add("", q.draining ? 1 : 0);
  const jobs = fam("beanstalkd_jobs", "gauge", "Jobs by state (urgent: ready with pri < 1024).");
  for (const s of ["urgent", "ready", "reserved", "delayed", "buried"] as const) jobs.add(`{state="${s}"}`, g[s]);
  fam("beanstalkd_jobs_total", "counter", "Jobs created by put since start.").add("", c.totalJobs);
  fam("beanstalkd_job_timeouts_total", "counter", "Reservations that ran out of TTR.").add("", c.jobTimeouts);
  const conns = fam("beanstalkd_connections", "gauge", "Open connections by role.");
  conns.add(`{role="current"}`, g.connections);
  conns.add(`{role="producers"}`, g.producers);
  conns.add(`{role="workers"}`, g.workers);
  conns.add(`{role="waiting"}`, g.waiting);
  fam("beanstalkd_connections_total", "counter", "Connections accepted since start.").add("", c.totalConnections);
  fam("beanstalkd_tubes_current", "gauge", "Tubes that exist now.").add("", g.tubes);
  const cmds = fam("beanstalkd_commands_total", "counter", "Commands received, by command.");
  CMD_KEYS.forEach((k, i) => cmds.add(`{command="${k}"}`, c.cmd[i]!));

  const tubeJobs = fam("beanstalkd_tube_jobs", "gauge", "Jobs in a tube by state.");
  const tubeConns = fam("beanstalkd_tube_connections", "gauge", "Connections using, watching or waiting on a tube.");
  const paused = fam("beanstalkd_tube_paused", "gauge", "1 while a tube is paused.");
  const tubeTotal = fam("beanstalkd_tube_jobs_total", "counter", "Jobs put into a tube since it was created.");
  const tubeDeletes = fam("beanstalkd_tube_deletes_total", "counter", "delete commands on a tube's jobs.");
  const pauseLeft = fam("tubeway_tube_pause_remaining_seconds", "gauge", "Seconds until a paused tube resumes.");
  const oldest = fam(
    "tubeway_tube_oldest_ready_seconds",
    "gauge",
    "Age of the oldest ready job in a tube (time since it became ready): queue latency.",
  );
  const tubes = [...q.tubeList()];
  for (let from = 0; from < tubes.length; from += TUBES_PER_SLICE) {
    if (from > 0) await pause();
    const sliceNow = q.clock.now();
    for (const t of tubes.slice(from, from + TUBES_PER_SLICE)) {
      const l = `tube="${labelValue(t.name)}"`;
      tubeJobs.add(`{${l},state="urgent"}`, t.urgent);
      tubeJobs.add(`{${l},state="ready"}`, t.ready.size);
      tubeJobs.add(`{${l},state="reserved"}`, t.reserved);
      tubeJobs.add(`{${l},state="delayed"}`, t.delayed.size);
      tubeJobs.add(`{${l},state="buried"}`, t.buried.size);
      tubeConns.add(`{${l},role="using"}`, t.using);
      tubeConns.add(`{${l},role="watching"}`, t.watching);
      tubeConns.add(`{${l},role="waiting"}`, t.waiting);
      const isPaused = t.unpauseAt > sliceNow;
      paused.add(`{${l}}`, isPaused ? 1 : 0);
      pauseLeft.add(`{${l}}`, isPaused ? Math.ceil((t.unpauseAt - sliceNow) / 1000) : 0);
      tubeTotal.add(`{${l}}`, t.totalJobs);
      tubeDeletes.add(`{${l}}`, t.cmdDelete);
      oldest.add(`{${l}}`, oldestReadyMs(t, sliceNow) / 1000);
    }
  }

  histogram(
    fam("tubeway_ready_to_reserve_seconds", "histogram", "Time a job waited ready before a reserve took it."),
    q.latency.readyToReserve,
  );
  histogram(
    fam("tubeway_reserve_to_delete_seconds", "histogram", "Time from reserve to delete (jobs deleted while reserved)."),
    q.latency.reserveToDelete,
  );

  const health = q.wal.health?.();
  fam("tubeway_binlog_enabled", "gauge", "1 when jobs are logged (-b).").add("", health ? 1 : 0);
  if (health) {
    const ws = q.wal.stats();
    fam("tubeway_binlog_written_bytes_total", "counter", "Bytes appended to the log.").add("", health.bytesWritten);
    fam("tubeway_binlog_records_written_total", "counter", "Records written to the log.").add("", ws.recordsWritten);
    fam("tubeway_binlog_records_migrated_total", "counter", "Records moved by compaction.").add("", ws.recordsMigrated);
    fam("tubeway_binlog_files", "gauge", "Log files on disk.").add("", health.files);
    fam("tubeway_binlog_writable", "gauge", "1 while the last write and fsync succeeded.").add(
      "",
      health.writable ? 1 : 0,
    );
    fam("tubeway_binlog_disk_errors_total", "counter", "Failed log writes and fsyncs.").add("", health.diskErrors);
    histogram(fam("tubeway_binlog_fsync_seconds", "histogram", "Duration of each fsync round."), health.fsync);
  }
  fam("tubeway_build_info", "gauge", "Always 1; the version is a label.").add(
    `{version="${labelValue(src.version)}"}`,
    1,
  );
  return fams.map((f) => f.text()).join("");
}
