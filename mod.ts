/**
 * tubeway: a beanstalkd-compatible work queue for Deno and Bun.
 *
 * The public surface is the server as a library: build a {@linkcode Service} on an engine (from
 * flags with {@linkcode parseConfig} and {@linkcode openService}, or directly on
 * {@linkcode memoryEngine}), then
 * serve it on this runtime's sockets with {@linkcode listen} or over any pair of web
 * streams with {@linkcode serveStreams}. The queue engine itself (core/) stays internal
 * so it can change shape without breaking users.
 *
 * ```ts
 * import { hostInfo, listen, memoryEngine, runtimeTurns, Service } from "./mod.ts";
 *
 * const svc = new Service(memoryEngine(), { host: hostInfo(), turns: runtimeTurns() });
 * const server = await listen(svc, { host: "127.0.0.1", port: 0 });
 * console.log("listening on", server.address);
 * server.close();
 * svc.close();
 * ```
 *
 * @module
 */
export { PROTOCOL_VERSION, Service, type ServiceOptions } from "./protocol/service.ts";
export { memoryEngine } from "./core/memory/queue.ts";
export type {
  Answer,
  ClusterNode,
  DatabaseHealth,
  Engine,
  EngineClient,
  EngineMetrics,
  EngineStats,
  Exists,
  HistogramView,
  Inserted,
  JobList,
  JobOut,
  JobSnapshot,
  JobState,
  JobStats,
  ListState,
  LogHealth,
  LogStats,
  NewJob,
  NewJobAt,
  NewSchedule,
  PutResult,
  Refusal,
  RetryPolicy,
  ScheduleInfo,
  Settling,
  TubeLimits,
  TubeSnapshot,
  TubeState,
  TubeStats,
  UniqueJob,
  WaitEnd,
  Wake,
} from "./core/engine.ts";
export { runtimeTurns } from "./adapters/turns.ts";
export type { HostInfo } from "./protocol/host.ts";
export { serveStreams, type StreamPair } from "./protocol/streams.ts";
export { type Clock, immediateTurns, ManualClock, systemClock, type TimerHandle, type Turns } from "./core/clock.ts";
export {
  type Config,
  type LogFormat,
  parseConfig,
  type ParsedArgs,
  type PgConfig,
  type TlsConfig,
  USAGE,
} from "./front/config.ts";
export { VERSION } from "./core/version.ts";
export { listen, type ListenAddress, type Listening, type ListenOptions, type TlsMaterial } from "./adapters/listen.ts";
export { hostInfo } from "./adapters/host_node.ts";
export { type Opened, type OpenOptions, openService, WalOpenError } from "./front/open.ts";
