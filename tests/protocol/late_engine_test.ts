// The engine seam without sockets: a connection on an engine whose answers come later
// keeps replies in command order, survives a wake that beats the reserve's own answer,
// turns a failed answer into INTERNAL_ERROR and goes on; and the in-memory engine's
// answers make no promise at all.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../core/clock.ts";
import { memoryEngine, Queue } from "../../core/memory/queue.ts";
import type { Engine, EngineClient } from "../../core/engine.ts";
import { Service } from "../../protocol/service.ts";
import { dispatch, Session } from "../../protocol/dispatch.ts";
import { LateEngine } from "../harness/async_engine.ts";
import { localClient } from "../harness/in_process.ts";

const quiet = { log: () => {}, error: () => {} };
const settle = () => new Promise((r) => setTimeout(r, 20));

/** `inner` with some calls replaced (the others still run on `inner` itself). */
function overriding(inner: Engine, calls: Partial<Record<keyof Engine, unknown>>): Engine {
  return new Proxy(inner, {
    get(target, key) {
      if (key in calls) return calls[key as keyof Engine];
      const v = Reflect.get(target, key, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** Collects what a connection wrote, and says when it has `n` bytes. */
function client(svc: Service) {
  let out = "";
  const conn = svc.connect({ write: (p) => void (out += new TextDecoder("latin1").decode(p)), close() {} });
  return {
    send: (s: string) => conn.push(Uint8Array.from(s, (c) => c.charCodeAt(0))),
    get out() {
      return out;
    },
    async until(pred: (s: string) => boolean, ms = 2000) {
      const end = Date.now() + ms;
      while (!pred(out) && Date.now() < end) await new Promise((r) => setTimeout(r, 2));
      return out;
    },
  };
}

describe("an engine that answers later", () => {
  it("pipelined commands get their replies in command order (answers 0-2 ms late, at random)", async () => {
    const engine = new LateEngine(memoryEngine({ clock: new ManualClock() }), "jitter");
    const svc = new Service(engine, quiet);
    try {
      const c = client(svc);
      let input = "use t\r\nwatch t\r\nignore default\r\n";
      let want = "USING t\r\nWATCHING 2\r\nWATCHING 1\r\n";
      for (let i = 1; i <= 30; i++) {
        input += `put ${i} 0 60 2\r\nj${i % 10}\r\npeek ${i}\r\nstats-job ${i + 1000}\r\n`;
        want += `INSERTED ${i}\r\nFOUND ${i} 2\r\nj${i % 10}\r\nNOT_FOUND\r\n`;
      }
      for (let i = 1; i <= 30; i++) {
        input += `reserve-with-timeout 0\r\ndelete ${i}\r\n`;
        want += `RESERVED ${i} 2\r\nj${i % 10}\r\nDELETED\r\n`;
      }
      input += "reserve-with-timeout 0\r\n";
      want += "TIMED_OUT\r\n";
      // split at odd places, so lines and bodies arrive while answers are pending
      for (let at = 0; at < input.length; at += 37) c.send(input.slice(at, at + 37));
      assert.equal(await c.until((s) => s.length >= want.length), want);
      assert.ok(engine.promised >= 151, `${engine.promised} answers came as promises`);
    } finally {
      svc.close();
    }
  });

  it("a job that reaches a waiting reserve before the reserve's own answer (a wait) is delivered once, and the connection goes on", async () => {
    let release!: () => void;
    const inner = memoryEngine({ clock: new ManualClock() });
    // reserve answers "wait" only when the test says so; the put meanwhile wakes the client
    const engine = overriding(inner, {
      reserve(c: EngineClient, timeoutMs: number) {
        const r = inner.reserve(c, timeoutMs);
        return new Promise((resolve) => (release = () => resolve(r)));
      },
    });
    const svc = new Service(engine, quiet);
    try {
      const worker = client(svc);
      const producer = localClient(svc);
      worker.send("reserve\r\nlist-tube-used\r\n");
      assert.equal(worker.out, "");
      assert.equal(producer.send("put 0 0 60 2\r\nhi\r\n"), "INSERTED 1\r\n"); // wakes the worker
      release(); // the reserve's answer arrives: null, "the client waits"
      assert.equal(await worker.until((s) => s.includes("USING")), "RESERVED 1 2\r\nhi\r\nUSING default\r\n");
      await settle();
      assert.equal(producer.send("stats-job 1\r\n").match(/state: (\w+)/)?.[1], "reserved");
    } finally {
      svc.close();
    }
  });

  it("an answer that fails is INTERNAL_ERROR and a log line; the connection keeps serving", async () => {
    const errors: string[] = [];
    const inner = memoryEngine({ clock: new ManualClock() });
    const engine = overriding(inner, { peek: () => Promise.reject(new Error("the database went away")) });
    const svc = new Service(engine, { log: () => {}, error: (l) => errors.push(l) });
    try {
      const c = client(svc);
      c.send("peek 1\r\nlist-tube-used\r\n");
      assert.equal(await c.until((s) => s.includes("USING")), "INTERNAL_ERROR\r\nUSING default\r\n");
      assert.match(errors.join("\n"), /internal error: .*the database went away/);
    } finally {
      svc.close();
    }
  });
});

describe("stats-conn and list-connections on an engine that tells reservations later", () => {
  /** What `send` gets on a's connection after a put two jobs and w reserved them, on `engine`. */
  async function held(engine: Engine, send: string): Promise<string> {
    const svc = new Service(engine, quiet);
    try {
      const [a, w] = [client(svc), client(svc)];
      a.send("put 1 0 60 1\r\nx\r\nput 1 0 60 1\r\ny\r\n");
      await a.until((s) => s.includes("INSERTED 2"));
      w.send("reserve-job 2\r\nreserve-job 1\r\n");
      await w.until((s) => s.includes("RESERVED 1"));
      const before = a.out.length;
      a.send(send + "ping\r\n");
      return (await a.until((s) => s.endsWith("PONG\r\n"))).slice(before);
    } finally {
      svc.close();
    }
  }

  it("gives the in-memory engine's bytes", async () => {
    for (const send of ["stats-conn 2\r\n", "list-connections\r\n", "stats-conn\r\n"]) {
      const now = await held(memoryEngine({ clock: new ManualClock() }), send);
      const later = await held(new LateEngine(memoryEngine({ clock: new ManualClock() }), "jitter"), send);
      assert.equal(later, now, send);
    }
    assert.match(await held(memoryEngine({ clock: new ManualClock() }), "stats-conn 2\r\n"), /reserved-jobs: \[1, 2\]/);
  });

  it("an engine that cannot tell does not serve them (nor list them in capabilities)", async () => {
    const engine = () => overriding(memoryEngine({ clock: new ManualClock() }), { reservedIds: undefined });
    assert.equal(
      await held(engine(), "stats-conn\r\nlist-connections\r\n"),
      "UNKNOWN_COMMAND\r\n".repeat(2) + "PONG\r\n",
    );
    assert.doesNotMatch(await held(engine(), "capabilities\r\n"), /stats-conn|list-connections/);
  });
});

describe("the in-memory engine", () => {
  it("answers every command at once: dispatch returns a step, never a promise", () => {
    const svc = new Service(new Queue({ clock: new ManualClock() }), quiet);
    try {
      const s = new Session(svc, svc.engine.connect(() => {}), 1);
      const lines = [
        "use t",
        "watch t",
        "peek 1",
        "peek-ready",
        "peek-delayed",
        "peek-buried",
        "reserve-with-timeout 0",
        "reserve-job 1",
        "delete 1",
        "release 1 0 0",
        "bury 1 0",
        "touch 1",
        "kick 1",
        "kick-job 1",
        "stats-job 1",
        "stats-tube t",
        "stats",
        "list-tubes",
        "list-tube-used",
        "list-tubes-watched",
        "pause-tube t 0",
        "ignore t",
        "put 0 0 60 1",
      ];
      for (const l of lines) {
        const b = Uint8Array.from(l, (c) => c.charCodeAt(0));
        assert.equal(typeof dispatch(s, b, 0, b.length), "number", l);
      }
    } finally {
      svc.close();
    }
  });
});
