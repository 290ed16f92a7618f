// One server under test: a child process pinned to CPU 0 on a free loopback port,
// with a fresh log directory when its flags ask for one ({dir}).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HOST, procCpuMs, procMem, ROOT, sleep, type Tools, wrap } from "./host.ts";
import type { Target } from "./targets.ts";
import { PG_URL_ENV, psql } from "./psql.ts";
import process from "node:process";

/** +pg schemas made by this run. */
let schemas = 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, HOST, () => {
      const a = srv.address();
      const port = typeof a === "object" && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: HOST, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

export class Server {
  child!: ChildProcess;
  port = 0;
  log = "";
  exited: string | null = null;
  dir?: string;
  /** Several nodes over one database (`NAME+pg3`): the others, on the same schema. */
  others: Server[] = [];
  /** The schema of a +pg server (its nodes share it). */
  schema?: string | undefined;
  /** Keep the schema when stopped (pgbench's runs on it). */
  kept = false;
  /** This server made the schema (the first node). */
  ownsSchema = false;
  constructor(public target: Target, private tools: Tools) {}

  /** Every node's port, this one's first. */
  get ports(): number[] {
    return [this.port, ...this.others.map((o) => o.port)];
  }

  get pid(): number {
    return this.target.attach?.pid ?? this.child.pid!;
  }

  get started(): boolean {
    return !!this.child || this.port !== 0;
  }

  async start(): Promise<void> {
    if (this.target.attach) {
      this.port = this.target.attach.port;
      return;
    }
    this.port = await freePort();
    // placeholders in the flags or a NAME=CMD target's command: {dir}, {pg}, {schema}
    let cmd = [...this.target.argv!, "-l", HOST, "-p", String(this.port), ...this.target.flags];
    if (cmd.includes("{dir}")) {
      this.dir = mkdtempSync(join(tmpdir(), "tubeway-bench-"));
      cmd = cmd.map((f) => (f === "{dir}" ? this.dir! : f));
    }
    if (cmd.includes("{pg}")) {
      // a schema of its own per server (its nodes share it), so no row starts with another's backlog
      if (!this.schema) {
        this.schema = `bench_${process.pid}_${++schemas}`;
        this.ownsSchema = true;
      }
      const schema = this.schema;
      cmd = cmd.map((f) => (f === "{pg}" ? process.env[PG_URL_ENV]! : f === "{schema}" ? schema : f));
    }
    const argv = wrap(this.tools, cmd, "0");
    this.child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (d: Uint8Array) => {
      if (this.log.length < 20000) this.log += new TextDecoder().decode(d);
    };
    this.child.stdout!.on("data", keep);
    this.child.stderr!.on("data", keep);
    this.child.once("exit", (code, sig) => (this.exited = sig ? `killed by ${sig}` : `exited with ${code}`));
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      if (this.exited) {
        throw new Error(`${this.target.name} ${this.exited} before listening: ${this.log.trim().slice(0, 500)}`);
      }
      if (await canConnect(this.port)) return await this.startOthers();
      await sleep(20);
    }
    await this.stop();
    throw new Error(`${this.target.name} did not listen within 20 s`);
  }

  /** The other nodes of a several-node target, once the first has made the schema. */
  async startOthers(): Promise<void> {
    for (let i = 1; i < (this.target.nodes ?? 1); i++) {
      const o = new Server({ ...this.target, nodes: 1 }, this.tools);
      o.schema = this.schema;
      this.others.push(o);
      await o.start();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.others.map((o) => o.stop()));
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => this.child.kill("SIGKILL"), 3000);
        this.child.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
        this.child.kill("SIGTERM");
      });
    }
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    // the first node made the schema: its jobs go with it (a sustained row leaves millions)
    if (this.schema && this.ownsSchema && !this.kept) {
      psql(`drop schema if exists ${this.schema} cascade`);
    }
  }

  /** All nodes together. */
  cpuMs(): number {
    return this.others.reduce((a, o) => a + o.cpuMs(), procCpuMs(this.pid));
  }
  /** All nodes together. */
  mem() {
    const m = procMem(this.pid);
    for (const o of this.others) {
      const n = o.mem();
      m.rss += n.rss;
      m.hwm += n.hwm;
    }
    return m;
  }
}
