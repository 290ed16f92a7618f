// One server under test: a child process pinned to CPU 0 on a free loopback port,
// with a fresh log directory when its flags ask for one ({dir}).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HOST, procCpuMs, procMem, ROOT, sleep, type Tools, wrap } from "./host.ts";
import { PG_URL_ENV, type Target } from "./targets.ts";
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
  constructor(public target: Target, private tools: Tools) {}

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
    let flags = this.target.flags;
    if (flags.includes("{dir}")) {
      this.dir = mkdtempSync(join(tmpdir(), "tubeway-bench-"));
      flags = flags.map((f) => (f === "{dir}" ? this.dir! : f));
    }
    if (flags.includes("{pg}")) {
      // a schema of its own per server, so no row starts with another's backlog
      const schema = `bench_${process.pid}_${++schemas}`;
      flags = flags.map((f) => (f === "{pg}" ? process.env[PG_URL_ENV]! : f === "{schema}" ? schema : f));
    }
    const argv = wrap(this.tools, [...this.target.argv!, "-l", HOST, "-p", String(this.port), ...flags], "0");
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
      if (await canConnect(this.port)) return;
      await sleep(20);
    }
    await this.stop();
    throw new Error(`${this.target.name} did not listen within 20 s`);
  }

  async stop(): Promise<void> {
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
  }

  cpuMs(): number {
    return procCpuMs(this.pid);
  }
  mem() {
    return procMem(this.pid);
  }
}
