/**
 * tubeway: a beanstalkd-compatible work queue for Deno and Bun.
 *
 * Run the whole server in-process on this runtime's sockets:
 *
 * ```ts
 * import { hostInfo, listen, Service } from "./mod.ts";
 *
 * const svc = new Service({ host: hostInfo() });
 * const server = await listen(svc, { host: "127.0.0.1", port: 0 });
 * console.log("listening on", server.address);
 * server.close();
 * svc.close();
 * ```
 *
 * Or drive the queue directly, with a clock you move yourself:
 *
 * ```ts
 * import { ManualClock, Queue } from "./mod.ts";
 *
 * const clock = new ManualClock();
 * const q = new Queue({ clock });
 * const producer = q.connect(() => {});
 * const job = q.put(producer, 0, 5, 60, new TextEncoder().encode("hello\r\n"));
 * clock.advance(5000);
 * q.tick(); // the delayed job is ready now
 * const worker = q.connect(() => {});
 * const got = q.reserve(worker, 0);
 * if (typeof job === "object" && got === job) q.delete(worker, job.id);
 * ```
 *
 * @module
 */
export { DEADLINE_SOON_MS, Queue, type QueueOptions } from "./core/queue.ts";
export { type Clock, ManualClock, systemClock } from "./core/clock.ts";
export { Job, type JobState } from "./core/job.ts";
export type { Client, WaitEnd } from "./core/client.ts";
export type { Tube } from "./core/tube.ts";
export { type JobRecord, noWal, type Recovered, type Wal } from "./core/wal.ts";
export { type Config, parseConfig, type ParsedArgs, USAGE } from "./core/config.ts";
export { VERSION } from "./core/version.ts";
export { PROTOCOL_VERSION, Service, type ServiceOptions } from "./protocol/service.ts";
export { Connection, type Transport } from "./protocol/connection.ts";
export { serveStreams, type StreamPair } from "./protocol/streams.ts";
/** Serve one connection over a pair of web streams (an alias of serveStreams). */
export { serveStreams as serveConnection } from "./protocol/streams.ts";
export { listen, type ListenAddress, type Listening } from "./adapters/listen.ts";
export { hostInfo } from "./adapters/host_node.ts";
