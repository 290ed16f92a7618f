// Shared by the binlog tests: a tiny stand-in for the queue engine that logs each
// change the way the real one will (log first, apply only if that succeeded), and
// helpers to open a log over in-memory files. By default each change is its own
// batch, flushed at once (a connection sending one command at a time): a change
// whose flush fails is applied, as the engine does, but counts as failed and is not
// expected back after a restart. With autoFlush off, the test calls wal.flush().
import { setImmediate } from "node:timers";
import type { Binlog } from "../../core/memory/binlog/binlog.ts";
import type { BinlogOptions } from "../../core/memory/binlog/options.ts";
import { openBinlog } from "../../core/memory/binlog/open.ts";
import type { Files } from "../../core/files.ts";
import { MemoryFiles } from "./files_memory.ts";
import { jobRecord } from "./job_record.ts";
import type { JobRecord, JobState, Recovered } from "../../core/memory/wal.ts";

export const DIR = "/data/wal";
export const T0 = 1_700_000_000_000;

export function body(text: string): Uint8Array {
  return new TextEncoder().encode(text + "\r\n");
}

export class Engine {
  jobs = new Map<number, JobRecord>();
  /** Each job as of the last record logged for it (what recovery should give back). */
  logged = new Map<number, JobRecord>();
  nextId = 1;
  now = T0;
  logs: string[] = [];
  /** Flush after each change (see the top). */
  autoFlush = true;
  wal!: Binlog;
  recovered!: Recovered;

  constructor(readonly files: Files, readonly opts: Partial<BinlogOptions> = {}) {}

  /** Open (or reopen) the log and load what it recovered. */
  open(): this {
    const { wal, recovered } = openBinlog(
      {
        dir: DIR,
        fsyncMs: 0,
        durableAcks: false,
        maxFileSize: 10 * 1024 * 1024,
        maxJobSize: 65535,
        log: (m) => this.logs.push(m),
        ...this.opts,
      },
      this.files,
      { now: () => this.now },
      (id) => {
        const j = this.jobs.get(id);
        return j && { ...j };
      },
    );
    this.wal = wal;
    this.recovered = recovered;
    this.jobs = new Map(recovered.jobs.map((j) => [j.id, j]));
    this.logged = new Map(recovered.jobs.map((j) => [j.id, { ...j }]));
    this.nextId = recovered.maxId + 1;
    return this;
  }

  put(tube: string, data: Uint8Array, opt: { pri?: number; delayMs?: number; ttrMs?: number } = {}): number {
    const id = this.nextId++;
    const delayMs = opt.delayMs ?? 0;
    const rec = jobRecord(id, {
      tube,
      pri: opt.pri ?? 0,
      delayMs,
      ttrMs: opt.ttrMs ?? 60_000,
      createdAtMs: this.now,
      deadlineAtMs: delayMs > 0 ? this.now + delayMs : 0,
      state: delayMs > 0 ? "delayed" : "ready",
      body: data,
    });
    if (!this.wal.put(rec)) return 0;
    this.jobs.set(id, rec);
    if (!this.#flush()) return 0;
    this.logged.set(id, { ...rec });
    return id;
  }

  /** Not logged, like beanstalkd. */
  reserve(id: number): void {
    const j = this.#get(id);
    j.state = "reserved";
    j.reserves++;
    j.deadlineAtMs = this.now + j.ttrMs;
  }

  release(id: number, pri: number, delayMs: number): boolean {
    const j = this.#get(id);
    return true === this.#change(id, {
      pri,
      delayMs,
      state: delayMs > 0 ? "delayed" : "ready",
      deadlineAtMs: delayMs > 0 ? this.now + delayMs : 0,
      releases: j.releases + 1,
    });
  }

  bury(id: number, pri: number): boolean {
    const j = this.#get(id);
    return true === this.#change(id, { pri, state: "buried", deadlineAtMs: 0, buries: j.buries + 1 });
  }

  kick(id: number): boolean {
    const j = this.#get(id);
    return true === this.#change(id, { state: "ready", deadlineAtMs: 0, kicks: j.kicks + 1 });
  }

  delete(id: number): boolean {
    const r = this.#change(id, { state: "deleted" });
    if (r === "refused") return false;
    this.jobs.delete(id);
    if (r === "lost") return false;
    this.logged.delete(id);
    return true;
  }

  /** What a restart should recover: logged state, reserved as ready, buried last in `buriedOrder`. */
  expected(buriedOrder: number[] = []): JobRecord[] {
    const all = [...this.logged.values()].map((j) =>
      j.state === "reserved" ? { ...j, state: "ready" as const, deadlineAtMs: 0 } : j
    );
    const notBuried = all.filter((j) => j.state !== "buried").sort((a, b) => a.id - b.id);
    const buried = all.filter((j) => j.state === "buried");
    buried.sort((a, b) => buriedOrder.indexOf(a.id) - buriedOrder.indexOf(b.id));
    return [...notBuried, ...buried];
  }

  /** Let microtasks (compaction, sync start) and in-memory fsyncs run. */
  async settle(): Promise<void> {
    for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
  }

  #get(id: number): JobRecord {
    const j = this.jobs.get(id);
    if (!j) throw new Error(`no job ${id}`);
    return j;
  }

  /** With autoFlush: the flush of the change just made; true without. */
  #flush(): boolean {
    return !this.autoFlush || this.wal.flush();
  }

  #change(
    id: number,
    patch: Partial<JobRecord> & { state: JobState | "deleted" },
  ): true | "refused" | "lost" {
    const next = { ...this.#get(id), ...patch };
    const { body: _body, ...short } = next;
    if (!this.wal.update(short)) return "refused";
    this.jobs.set(id, next);
    if (!this.#flush()) return "lost";
    this.logged.set(id, { ...next });
    return true;
  }
}

/** true when a synced() promise resolves, false when it rejects. */
export function ok(p: Promise<void>): Promise<boolean> {
  return p.then(() => true, () => false);
}

export function memFiles(): MemoryFiles {
  return new MemoryFiles([DIR]);
}

/** Comparable view of a job list: everything but the body as text. */
export function summary(jobs: Iterable<JobRecord>): string[] {
  const out: string[] = [];
  for (const j of jobs) {
    const { body: b, ...rest } = j;
    out.push(JSON.stringify({ ...rest, body: b ? new TextDecoder().decode(b) : null }));
  }
  return out;
}

/** Names of the log files in DIR. */
export function logNames(files: MemoryFiles): string[] {
  return files.list(DIR).filter((n) => n.startsWith("tubeway."));
}

export function logBytes(files: MemoryFiles): number {
  return files.used((n) => n.startsWith("tubeway."));
}
