// GET /metrics: the Prometheus text format (version 0.0.4). The beanstalkd_* names
// and labels are beanstalkd-pi's, so alerts written for it carry over; tubeway_* are
// ours (queue latency, the log's health, the database's under --pg).
//
// A scrape walks every tube. With many tubes that is real work on the one thread the
// protocol port also runs on, so the per-tube part is built in slices of TUBES_PER_SLICE
// tubes with a macrotask yield between them, and streamed out as it is made: protocol
// connections are served in the gaps and a scrape never holds the loop for long. The
// tube names are read first; each slice's snapshots are asked of the engine when the
// first family reaches it (a tube dropped before that is left out). Samples of one
// scrape may be taken a few ms apart.
import type { DatabaseHealth, Engine, EngineStats, HistogramView, LogHealth, TubeSnapshot } from "../../core/engine.ts";
import { CMD_KEYS, type Counters, EXT_KEYS } from "../counters.ts";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Tubes rendered (for one family) between two yields to the event loop. */
export const TUBES_PER_SLICE = 1000;

/** What a scrape reads (a Service has all but the version). */
export interface MetricsSource {
  engine: Engine;
  /** This server's commands and connections. */
  counters: Counters;
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

/** A histogram's samples; bounds and sum are divided by `per` (1000: ms to seconds; 1: counts). */
function histogram(f: Family, h: HistogramView, labels = "", per = 1000): void {
  const sep = labels ? "," : "";
  let cumulative = 0;
  for (let i = 0; i < h.boundsMs.length; i++) {
    cumulative += h.counts[i]!;
    f.lines.push(`${f.name}_bucket{${labels}${sep}le="${h.boundsMs[i]! / per}"} ${cumulative}`);
  }
  f.lines.push(`${f.name}_bucket{${labels}${sep}le="+Inf"} ${h.count}`);
  f.lines.push(`${f.name}_sum${labels ? `{${labels}}` : ""} ${h.sumMs / per}`);
  f.lines.push(`${f.name}_count${labels ? `{${labels}}` : ""} ${h.count}`);
}

const yieldToLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** A per-tube family: its samples for one tube (`l` is the tube's label pair). */
interface TubeFamily {
  name: string;
  kind: Kind;
  help: string;
  lines(t: TubeSnapshot, l: string): string;
}

const TUBE_FAMILIES: readonly TubeFamily[] = [
  {
    name: "beanstalkd_tube_jobs",
    kind: "gauge",
    help: "Jobs in a tube by state.",
    lines: (t, l) =>
      `beanstalkd_tube_jobs{${l},state="urgent"} ${t.urgent}\n` +
      `beanstalkd_tube_jobs{${l},state="ready"} ${t.ready}\n` +
      `beanstalkd_tube_jobs{${l},state="reserved"} ${t.reserved}\n` +
      `beanstalkd_tube_jobs{${l},state="delayed"} ${t.delayed}\n` +
      `beanstalkd_tube_jobs{${l},state="buried"} ${t.buried}\n`,
  },
  {
    name: "beanstalkd_tube_connections",
    kind: "gauge",
    help: "Connections using, watching or waiting on a tube.",
    lines: (t, l) =>
      `beanstalkd_tube_connections{${l},role="using"} ${t.using}\n` +
      `beanstalkd_tube_connections{${l},role="watching"} ${t.watching}\n` +
      `beanstalkd_tube_connections{${l},role="waiting"} ${t.waiting}\n`,
  },
  {
    name: "beanstalkd_tube_paused",
    kind: "gauge",
    help: "1 while a tube is paused.",
    lines: (t, l) => `beanstalkd_tube_paused{${l}} ${t.paused ? 1 : 0}\n`,
  },
  {
    name: "beanstalkd_tube_jobs_total",
    kind: "counter",
    help: "Jobs put into a tube since it was created.",
    lines: (t, l) => `beanstalkd_tube_jobs_total{${l}} ${t.totalJobs}\n`,
  },
  {
    name: "beanstalkd_tube_deletes_total",
    kind: "counter",
    help: "delete commands on a tube's jobs.",
    lines: (t, l) => `beanstalkd_tube_deletes_total{${l}} ${t.cmdDelete}\n`,
  },
  {
    name: "tubeway_tube_pause_remaining_seconds",
    kind: "gauge",
    help: "Seconds until a paused tube resumes.",
    lines: (t, l) => `tubeway_tube_pause_remaining_seconds{${l}} ${Math.ceil(t.pauseLeftMs / 1000)}\n`,
  },
  {
    name: "tubeway_tube_oldest_ready_seconds",
    kind: "gauge",
    help: "Age of the oldest ready job in a tube (time since it became ready): queue latency.",
    lines: (t, l) => `tubeway_tube_oldest_ready_seconds{${l}} ${t.oldestReadyMs / 1000}\n`,
  },
  // limits (set-concurrency, set-rate): samples only for the tubes that have them
  {
    name: "tubeway_tube_held_jobs",
    kind: "gauge",
    help: "Ready jobs of a tube with limits that the limits keep from being reserved now.",
    lines: (t, l) => t.limits === undefined ? "" : `tubeway_tube_held_jobs{${l}} ${t.heldJobs ?? 0}\n`,
  },
  {
    name: "tubeway_tube_concurrency_limit",
    kind: "gauge",
    help: "Most jobs of a tube reserved at once (set-concurrency; 0: none).",
    lines: (t, l) => t.limits === undefined ? "" : `tubeway_tube_concurrency_limit{${l}} ${t.limits.concurrency}\n`,
  },
  {
    name: "tubeway_tube_rate_limit",
    kind: "gauge",
    help: "Most reservations of a tube per window (set-rate; 0: none).",
    lines: (t, l) => t.limits === undefined ? "" : `tubeway_tube_rate_limit{${l}} ${t.limits.rateCount}\n`,
  },
  {
    name: "tubeway_tube_rate_window_seconds",
    kind: "gauge",
    help: "The window of a tube's rate limit, seconds (0: none).",
    lines: (t, l) => t.limits === undefined ? "" : `tubeway_tube_rate_window_seconds{${l}} ${t.limits.rateWindowSec}\n`,
  },
];

/** Families made one after the other, rendered together. */
class Families {
  readonly list: Family[] = [];
  add(name: string, kind: Kind, help: string): Family {
    const f = new Family(name, kind, help);
    this.list.push(f);
    return f;
  }
  text(): string {
    return this.list.map((f) => f.text()).join("");
  }
}

/**
 * The exposition text in chunks: the server-wide families, then each per-tube family
 * in slices of TUBES_PER_SLICE tubes, awaiting `pause` between slices so the protocol
 * port is served in the gaps; then the histograms and the log's health. Streamed to the
 * scraper as it is made, so no one piece of work (not even joining megabytes) is large.
 */
export async function* metricChunks(
  src: MetricsSource,
  pause: () => Promise<void> = yieldToLoop,
): AsyncGenerator<string> {
  const e = src.engine;
  // An engine over a database that is away (--pg) cannot count its jobs now: the node's own
  // figures still go out (connections, commands, the database's state), without the job
  // and tube samples, rather than no scrape at all. A database known away is not waited for.
  const m = e.metrics();
  const g = m.database && !m.database.available
    ? undefined
    : await Promise.resolve().then(() => e.stats()).catch(() => undefined);
  yield serverFamilies(src, g).text();
  yield* tubeChunks(e, g ? await e.tubeNames() : [], pause);
  const fams = new Families();
  histogram(
    fams.add("tubeway_ready_to_reserve_seconds", "histogram", "Time a job waited ready before a reserve took it."),
    m.readyToReserve,
  );
  histogram(
    fams.add(
      "tubeway_reserve_to_delete_seconds",
      "histogram",
      "Time from reserve to delete (jobs deleted while reserved).",
    ),
    m.reserveToDelete,
  );
  if (m.deadLettered !== undefined) {
    fams.add("tubeway_jobs_dead_lettered_total", "counter", "Jobs moved to a dead-letter tube (set-dlq) since start.")
      .add("", m.deadLettered);
  }
  if (m.scheduleRuns !== undefined) {
    const runs = fams.add(
      "tubeway_schedule_runs_total",
      "counter",
      "Jobs a schedule put through this node since start.",
    );
    for (const [name, n] of m.scheduleRuns) runs.add(`{schedule="${labelValue(name)}"}`, n);
  }
  if (m.database) await databaseFamilies(fams, m.database);
  if (m.log && g) logFamilies(fams, m.log, g);
  else fams.add("tubeway_binlog_enabled", "gauge", "1 when jobs are logged (-b).").add("", m.log ? 1 : 0);
  fams.add("tubeway_build_info", "gauge", "Always 1; the version is a label.").add(
    `{version="${labelValue(src.version)}"}`,
    1,
  );
  yield fams.text();
}

/** The server-wide families: up, uptime, drain mode, jobs, connections, tubes, commands. */
function serverFamilies(src: MetricsSource, g: EngineStats | undefined): Families {
  const e = src.engine;
  const c = src.counters;
  const fams = new Families();
  fams.add("beanstalkd_up", "gauge", "1 while the server answers.").add("", 1);
  fams.add("beanstalkd_uptime_seconds", "gauge", "Seconds since the server started.")
    .add("", Math.floor((e.clock.now() - src.startedAtMs) / 1000));
  fams.add("beanstalkd_draining", "gauge", "1 in drain mode (puts are refused).").add("", e.draining ? 1 : 0);
  const jobs = fams.add("beanstalkd_jobs", "gauge", "Jobs by state (urgent: ready with pri < 1024).");
  const total = fams.add("beanstalkd_jobs_total", "counter", "Jobs created by put since start.");
  const timeouts = fams.add("beanstalkd_job_timeouts_total", "counter", "Reservations that ran out of TTR.");
  if (g) {
    for (const s of ["urgent", "ready", "reserved", "delayed", "buried"] as const) jobs.add(`{state="${s}"}`, g[s]);
    total.add("", g.totalJobs);
    timeouts.add("", g.jobTimeouts);
  }
  const conns = fams.add("beanstalkd_connections", "gauge", "Open connections by role.");
  conns.add(`{role="current"}`, c.connections);
  conns.add(`{role="producers"}`, c.producers);
  conns.add(`{role="workers"}`, c.workers);
  if (g) conns.add(`{role="waiting"}`, g.waiting);
  fams.add("beanstalkd_connections_total", "counter", "Connections accepted since start.").add("", c.totalConnections);
  const tubesNow = fams.add("beanstalkd_tubes_current", "gauge", "Tubes that exist now.");
  if (g) tubesNow.add("", g.tubes);
  const cmds = fams.add("beanstalkd_commands_total", "counter", "Commands received, by command.");
  CMD_KEYS.forEach((k, i) => cmds.add(`{command="${k}"}`, c.cmd[i]!));
  // the extension commands: here, never in stock `stats`
  EXT_KEYS.forEach((k, i) => cmds.add(`{command="${k}"}`, c.ext[i]!));
  return fams;
}

/** Each per-tube family over these tubes, a slice of TUBES_PER_SLICE at a time, with `pause` between slices. */
async function* tubeChunks(e: Engine, names: string[], pause: () => Promise<void>): AsyncGenerator<string> {
  /** Each slice's snapshots, asked for when the first family reaches the slice. */
  const slices: { tubes: TubeSnapshot[]; labels: string[] }[] = [];
  for (const f of TUBE_FAMILIES) {
    let chunk = `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.kind}\n`;
    for (let from = 0, k = 0; from < names.length; from += TUBES_PER_SLICE, k++) {
      if (from > 0) {
        yield chunk;
        chunk = "";
        await pause();
      }
      if (slices[k] === undefined) {
        // the database went away meanwhile: this slice without samples
        const tubes: TubeSnapshot[] = await Promise.resolve()
          .then(() => e.tubes(names.slice(from, from + TUBES_PER_SLICE)))
          .catch(() => []);
        slices[k] = { tubes, labels: tubes.map((t) => `tube="${labelValue(t.name)}"`) };
      }
      const s = slices[k]!;
      for (let i = 0; i < s.tubes.length; i++) chunk += f.lines(s.tubes[i]!, s.labels[i]!);
    }
    yield chunk;
  }
}

/** The database under a --pg node, and the cluster's live nodes (read now). */
async function databaseFamilies(fams: Families, db: DatabaseHealth): Promise<void> {
  fams.add("tubeway_pg_available", "gauge", "1 while the database takes this node's transactions.")
    .add("", db.available ? 1 : 0);
  fams.add("tubeway_pg_node_id", "gauge", "This node's id (its row in the nodes table).").add("", db.node);
  fams.add("tubeway_pg_lease_remaining_seconds", "gauge", "Seconds until this node's lease ends (<= 0: lapsed).")
    .add("", db.leaseRemainingMs / 1000);
  const live = fams.add("tubeway_pg_cluster_nodes", "gauge", "Nodes of the cluster whose lease has not lapsed.");
  // no sample when the nodes table cannot be read now
  const nodes = await db.nodes().catch(() => undefined);
  if (nodes) live.add("", nodes.length);
  fams.add("tubeway_pg_pool_connections_in_use", "gauge", "Pool connections busy (transactions, reads).")
    .add("", db.poolInUse);
  fams.add("tubeway_pg_pool_size", "gauge", "Connections the pool may open (LISTEN's not counted).").add(
    "",
    db.poolSize,
  );
  histogram(
    fams.add("tubeway_pg_statements_seconds", "histogram", "A turn transaction's statements, sent to last answer."),
    db.statements,
  );
  histogram(fams.add("tubeway_pg_commit_seconds", "histogram", "A turn transaction's COMMIT round trip."), db.commits);
  histogram(
    fams.add("tubeway_pg_transaction_commands", "histogram", "Commands per committed turn transaction."),
    db.batchSizes,
    "",
    1,
  );
  fams.add("tubeway_pg_transactions_total", "counter", "Turn transactions committed.").add("", db.transactions);
  fams.add(
    "tubeway_pg_retries_total",
    "counter",
    "Turn transactions run again (deadlock, serialization failure, database away).",
  ).add("", db.retries);
  fams.add("tubeway_pg_errors_total", "counter", "Turn transactions that failed (their commands: INTERNAL_ERROR).")
    .add("", db.errors);
}

/** The log's health (-b). */
function logFamilies(fams: Families, health: LogHealth, g: EngineStats): void {
  const ws = g.binlog;
  fams.add("tubeway_binlog_enabled", "gauge", "1 when jobs are logged (-b).").add("", 1);
  fams.add("tubeway_binlog_written_bytes_total", "counter", "Bytes appended to the log.").add("", health.bytesWritten);
  fams.add("tubeway_binlog_records_written_total", "counter", "Records written to the log.").add("", ws.recordsWritten);
  fams.add("tubeway_binlog_records_migrated_total", "counter", "Records moved by compaction.").add(
    "",
    ws.recordsMigrated,
  );
  fams.add("tubeway_binlog_files", "gauge", "Log files on disk.").add("", health.files);
  fams.add("tubeway_binlog_writable", "gauge", "1 while the last write and fsync succeeded.")
    .add("", health.writable ? 1 : 0);
  fams.add("tubeway_binlog_disk_errors_total", "counter", "Failed log writes and fsyncs.").add("", health.diskErrors);
  histogram(fams.add("tubeway_binlog_fsync_seconds", "histogram", "Duration of each fsync round."), health.fsync);
}

/** The whole exposition as one string (tests, small servers). */
export async function renderMetrics(src: MetricsSource, pause: () => Promise<void> = yieldToLoop): Promise<string> {
  let out = "";
  for await (const chunk of metricChunks(src, pause)) out += chunk;
  return out;
}

/** The exposition as a byte stream, made chunk by chunk as the reader pulls. */
export function metricsStream(src: MetricsSource): ReadableStream<Uint8Array> {
  const chunks = metricChunks(src);
  const enc = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(enc.encode(next.value));
    },
    async cancel() {
      await chunks.return(undefined);
    },
  }, { highWaterMark: 0 });
}
