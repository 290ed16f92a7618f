// A Service built from a Config the way the executable builds it: the engine it chooses
// (the in-memory queue, with -b its log), and with -b the log in
// config.binlogDir is locked and replayed into the queue before anything is served, the
// jobs of a beanstalkd that wrote that directory are imported (once), and every change is
// logged from then on. Here rather than in server.ts so that a library
// user gets durability with the same two lines the executable uses.
import type { Config } from "./config.ts";
import { Queue } from "../core/memory/queue.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import type { Binlog } from "../core/memory/binlog/binlog.ts";
import { openBinlog, WalOpenError } from "../core/memory/binlog/open.ts";
import { noWal } from "../core/memory/wal.ts";
import { importBeanstalkd } from "../core/memory/beanstalkd_log/takeover.ts";
import { type HostInfo } from "../protocol/host.ts";
import { Service } from "../protocol/service.ts";
import { nodeFiles } from "../adapters/files_node.ts";
import { hostInfo } from "../adapters/host_node.ts";
import { runtimeTurns } from "../adapters/turns.ts";
import type { Turns } from "../core/clock.ts";

export { WalOpenError };

/** How {@linkcode openService} reports and what it runs on. */
export interface OpenOptions {
  /** Where the log's messages go (damaged records skipped, files it cannot remove). Default: console.error. */
  logWal?: (message: string) => void;
  /** Facts for `stats`; default: this process ({@linkcode hostInfo}). */
  host?: HostInfo;
  /** Default: the system clock. */
  clock?: Clock;
  /** Where the service's log lines go (-V accept/close, -VV commands, the summary of an import); default: console.log. */
  log?: (line: string) => void;
  /** Where the service's error lines go (internal errors, failed log writes); default: console.error. */
  error?: (line: string) => void;
  /** How busy connections take turns; default: this runtime's ({@linkcode runtimeTurns}). */
  turns?: Turns;
}

/** What {@linkcode openService} built. */
export interface Opened {
  /** The service, ready for {@linkcode listen} or {@linkcode serveStreams}. */
  service: Service;
  /** Jobs read back from the log (0 without -b). */
  recoveredJobs: number;
  /**
   * The import of beanstalkd's binlog files in the -b directory (core/memory/beanstalkd_log/):
   * its jobs are in the queue and the log already; this settles once they are fsynced
   * and the import is marked done: with undefined, or with why it could not be (the
   * next start then tries again; the executable exits 10).
   */
  imported: Promise<string | undefined>;
  /** Close every connection, then write what is pending, fsync and release the log. */
  close(): void;
  /** After close(): settles when the engine has let go of what it holds (--pg: its database connections). */
  closed?: () => Promise<void>;
}

/**
 * Build the Service that `config` describes (from {@linkcode parseConfig}): its -z limit,
 * -V verbosity and, with -b, the write-ahead log, replayed now. The result's `close()`
 * ends the connections and closes the log.
 *
 * @throws {WalOpenError} when the log directory is missing, unreadable or locked by
 * another process (the executable exits 10).
 *
 * @example Serve a durable queue in this process
 * ```ts
 * import { listen, openService, parseConfig } from "../mod.ts";
 *
 * const dir = Deno.makeTempDirSync();
 * const parsed = parseConfig(["-b", dir]);
 * if (parsed.kind === "run") {
 *   const opened = openService(parsed.config);
 *   const server = await listen(opened.service, { host: "127.0.0.1", port: 0 });
 *   server.close();
 *   opened.close();
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function openService(config: Config, opts: OpenOptions = {}): Opened {
  const clock = opts.clock ?? systemClock;
  const logWal = opts.logWal ?? ((m: string) => console.error(m));
  let queue: Queue | undefined = undefined; // assigned once the log has been read
  let wal: Binlog | undefined;
  let recovered;
  const files = nodeFiles();
  if (config.binlogDir !== undefined) {
    ({ wal, recovered } = openBinlog(
      {
        dir: config.binlogDir,
        // -f 0: every reply of a logged command waits for its fsync (group commit).
        fsyncMs: config.fsyncMs,
        durableAcks: config.fsyncMs === 0,
        maxFileSize: config.binlogSize,
        maxJobSize: config.maxJobSize,
        log: logWal,
      },
      files,
      clock,
      (id) => queue?.liveRecord(id),
    ));
  }
  const turns = opts.turns ?? runtimeTurns();
  // Without -b nothing is logged, but stats still shows -s as binlog-max-size, as 1.12 does.
  queue = new Queue({ clock, maxJobSize: config.maxJobSize, wal: wal ?? noWal(config.binlogSize), turns });
  if (recovered) queue.restore(recovered.jobs, recovered.maxId, recovered);
  const imported = wal && config.binlogDir !== undefined
    ? importBeanstalkd(config.binlogDir, files, queue, wal, logWal, opts.log ?? logWal).then((o) =>
      o.kind === "failed" ? o.message : undefined
    )
    : Promise.resolve(undefined);
  const service = new Service(queue, {
    turns,
    verbose: config.verbose,
    host: opts.host ?? hostInfo(),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.error ? { error: opts.error } : {}),
  });
  return {
    service,
    recoveredJobs: recovered?.jobs.length ?? 0,
    imported,
    close: () => service.close(),
  };
}
