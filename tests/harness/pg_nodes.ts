// Three tubeway nodes over PostgreSQL on one schema, behind a round-robin TCP front
// (the "TCP load balancer" a deployment puts before its nodes): every connection a
// test opens to the front goes to the next node, so connection 1 of a session talks to
// node A, connection 2 to node B, connection 3 to node C, connection 4 to A again.
// The suites written against one address (the wire suite, the differential sessions,
// the client libraries) then run unchanged across nodes.
import { connect, createServer, type Server, type Socket } from "node:net";
import { acquirePostgres, uniqueSchema } from "./postgres.ts";
import { BUN_SERVER, DENO_SERVER } from "./paths.ts";
import { bunPgServer, denoPgServer, freePort, type Running, startProcess, type Target } from "./targets.ts";

/** A round-robin TCP front: what it forwarded where, and how to close it. */
export interface Front {
  addr: { host: string; port: number };
  /** Node index (0, 1, 2, …) each accepted connection went to, in order of acceptance. */
  readonly routes: number[];
  /** Send every connection accepted from now on to backend `k` (undefined: round robin again). */
  pin(k: number | undefined): void;
  close(): Promise<void>;
}

/**
 * Listen on 127.0.0.1 and forward each accepted connection, bytes and half-closes both
 * ways, to the next of `backends` in turn. A backend that resets or closes closes the
 * client's side the same way (FIN for FIN, destroy for an error).
 */
export async function roundRobinFront(backends: Array<{ host: string; port: number }>): Promise<Front> {
  const routes: number[] = [];
  const open = new Set<Socket>();
  let next = 0;
  let pinned: number | undefined;
  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    const k = pinned ?? next++ % backends.length;
    routes.push(k);
    const b = backends[k]!;
    const upstream = connect({ host: b.host, port: b.port, allowHalfOpen: true });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    open.add(client).add(upstream);
    const pipeEnds = (from: Socket, to: Socket) => {
      from.on("data", (d: Buffer) => {
        if (!to.write(d)) {
          from.pause();
          to.once("drain", () => from.resume());
        }
      });
      from.on("end", () => to.end());
      from.on("error", () => to.destroy());
      from.on("close", () => {
        open.delete(from);
        // A full close with no FIN first (destroy) closes the other side too, once it has
        // written what it had.
        if (!to.destroyed) to.end();
      });
    };
    upstream.once("connect", () => {
      pipeEnds(client, upstream);
      pipeEnds(upstream, client);
      client.resume();
    });
    upstream.once("error", () => client.destroy());
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    addr: { host: "127.0.0.1", port },
    routes,
    pin: (k) => (pinned = k),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A three-node cluster started by pgNodesTarget: the front's Running plus the nodes themselves. */
export interface RunningNodes extends Running {
  nodes: Running[];
  front: Front;
  schema: string;
  url: string;
}

/**
 * `count` tubeway nodes (`argv` runs server.ts) with `--pg` on this test process's
 * throwaway cluster and one fresh schema, behind a round-robin front. `drain` (what a session's SIGUSR1 means)
 * signals every node; `child` is absent, as there is no one process to signal.
 */
export function pgNodesTarget(
  name: string,
  argv: readonly string[],
  unavailable: () => string | undefined,
  count = 3,
): Target {
  return {
    name,
    unavailable,
    async start(flags = []): Promise<RunningNodes> {
      const { pg, release } = await acquirePostgres();
      const schema = uniqueSchema("nodes");
      // One after the other: a node takes its first block of 1,000 ids as it starts, so
      // node A numbers jobs from 1, B from 1001, C from 2001, the same in every run.
      const nodes: Running[] = [];
      try {
        for (let i = 0; i < count; i++) {
          nodes.push(await startProcess([...argv], ["--pg", pg.url, "--pg-schema", schema, ...flags]));
        }
      } catch (e) {
        await Promise.all(nodes.map((n) => n.stop()));
        release();
        throw e;
      }
      const front = await roundRobinFront(nodes.map((n) => n.addr));
      return {
        addr: front.addr,
        nodes,
        front,
        schema,
        url: pg.url,
        drain: () => {
          for (const n of nodes) n.child!.kill("SIGUSR1");
        },
        output: () => nodes.map((n, i) => `--- node ${"ABC"[i] ?? i} ---\n${n.output()}`).join("\n"),
        stop: async () => {
          await front.close();
          await Promise.all(nodes.map((n) => n.stop()));
          release();
        },
      };
    },
  };
}

/** Three tubeway nodes on Deno over PostgreSQL, behind a round-robin front. */
export const denoPgNodes: Target = pgNodesTarget(
  "three deno nodes --pg, round robin",
  DENO_SERVER,
  () => denoPgServer.unavailable(),
);

/** Three tubeway nodes on Bun over PostgreSQL, behind a round-robin front. */
export const bunPgNodes: Target = pgNodesTarget(
  "three bun nodes --pg, round robin",
  BUN_SERVER,
  () => bunPgServer.unavailable(),
);
