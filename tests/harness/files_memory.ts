// Files kept in memory, for tests. It counts fsyncs, can fail chosen writes and
// fsyncs with ENOSPC/EIO (optionally after a short write), can cap the "disk" size,
// and can simulate a power cut that loses every byte not yet fsynced.
import type { AppendFile, DirLock, Files } from "../../core/files.ts";
import { joinPath } from "../../core/files.ts";

interface Node {
  data: Uint8Array;
  length: number;
  /** Bytes known to be on disk (length at the last fsync that covered them). */
  synced: number;
}

/** A fault to inject on a future append or fsync. */
export interface Fault {
  code: string;
  /** For appends: how many bytes land before the error (a short write). */
  partial?: number;
}

function fsError(code: string, path: string): Error {
  return Object.assign(new Error(`${code}: simulated failure, ${path}`), { code });
}

export class MemoryFiles implements Files {
  readonly nodes = new Map<string, Node>();
  readonly dirs = new Set<string>();
  readonly locked = new Set<string>();
  /** Total bytes the disk holds; appends beyond it fail with ENOSPC. */
  capacity = Infinity;
  /** Counters for tests. */
  appends = 0;
  fsyncs = 0;
  dirSyncs = 0;
  /** Faults by the 1-based number of the append/fsync they hit (counted from now on). */
  #writeFaults = new Map<number, Fault>();
  #syncFaults = new Map<number, Fault>();
  #gate: Promise<void> | undefined;

  constructor(dirs: string[] = []) {
    for (const d of dirs) this.dirs.add(d);
  }

  /** Fail the n-th append from now (1 = the next one). */
  failAppend(n: number, fault: Fault): void {
    this.#writeFaults.set(this.appends + n, fault);
  }

  /** Fail the n-th fsync from now (1 = the next one). */
  failSync(n: number, fault: Fault): void {
    this.#syncFaults.set(this.fsyncs + n, fault);
  }

  /** Hold every fsync until the returned function is called. */
  holdSyncs(): () => void {
    let release!: () => void;
    this.#gate = new Promise<void>((r) => (release = r));
    return () => {
      this.#gate = undefined;
      release();
    };
  }

  /** Bytes used by all files (or those whose name passes `filter`). */
  used(filter: (name: string) => boolean = () => true): number {
    let n = 0;
    for (const [path, node] of this.nodes) {
      if (filter(path.slice(path.lastIndexOf("/") + 1))) n += node.length;
    }
    return n;
  }

  /**
   * A power cut: a new MemoryFiles holding what survived. By default each file keeps
   * only its fsynced bytes; `keepAll` keeps everything (a process crash, not a
   * machine crash). Locks do not survive.
   */
  crash(keepAll = false): MemoryFiles {
    const m = new MemoryFiles([...this.dirs]);
    for (const [path, node] of this.nodes) {
      const length = keepAll ? node.length : node.synced;
      m.nodes.set(path, { data: node.data.slice(0, length), length, synced: length });
    }
    return m;
  }

  /** Raw access for tests that corrupt files. */
  bytes(path: string): Uint8Array {
    const node = this.nodes.get(path);
    if (!node) throw fsError("ENOENT", path);
    return node.data.subarray(0, node.length);
  }

  /** Replace a file's content (it counts as synced). */
  put(path: string, data: Uint8Array): void {
    this.nodes.set(path, { data: data.slice(), length: data.length, synced: data.length });
  }

  list(dir: string): string[] {
    if (!this.dirs.has(dir)) throw fsError("ENOENT", dir);
    const prefix = joinPath(dir, "");
    const names: string[] = [];
    for (const path of this.nodes.keys()) {
      if (path.startsWith(prefix) && !path.slice(prefix.length).includes("/")) names.push(path.slice(prefix.length));
    }
    return names.sort();
  }

  read(path: string): Uint8Array {
    return this.bytes(path).slice();
  }

  open(path: string, mode: "new" | "any"): AppendFile {
    let node = this.nodes.get(path);
    if (node && mode === "new") throw fsError("EEXIST", path);
    if (!node) {
      if (!this.dirs.has(path.slice(0, path.lastIndexOf("/")))) throw fsError("ENOENT", path);
      node = { data: new Uint8Array(256), length: 0, synced: 0 };
      this.nodes.set(path, node);
    }
    return new MemoryAppendFile(this, path, node);
  }

  unlink(path: string): void {
    if (!this.nodes.delete(path)) throw fsError("ENOENT", path);
  }

  rename(from: string, to: string): void {
    const node = this.nodes.get(from);
    if (!node) throw fsError("ENOENT", from);
    this.nodes.delete(from);
    this.nodes.set(to, node);
  }

  syncDir(_dir: string): Promise<void> {
    this.dirSyncs++;
    return Promise.resolve();
  }

  syncDirNow(_dir: string): void {
    this.dirSyncs++;
  }

  lock(dir: string): DirLock {
    if (!this.dirs.has(dir)) throw new Error(`failed to lock wal dir ${dir}: no such directory`);
    if (this.locked.has(dir)) throw new Error(`failed to lock wal dir ${dir}: locked by this process`);
    this.locked.add(dir);
    return { release: () => this.locked.delete(dir) };
  }

  /** @internal the fault for the append being made now, if any. */
  nextAppendFault(): Fault | undefined {
    this.appends++;
    const f = this.#writeFaults.get(this.appends);
    this.#writeFaults.delete(this.appends);
    return f;
  }

  /** @internal runs one fsync: waits for the gate, then applies any fault. */
  async runSync(node: Node, path: string): Promise<void> {
    this.fsyncs++;
    const fault = this.#syncFaults.get(this.fsyncs);
    this.#syncFaults.delete(this.fsyncs);
    const length = node.length;
    await Promise.resolve();
    if (this.#gate) await this.#gate;
    if (fault) throw fsError(fault.code, path);
    node.synced = Math.max(node.synced, Math.min(length, node.length));
  }
}

class MemoryAppendFile implements AppendFile {
  readonly path: string;
  #fs: MemoryFiles;
  #node: Node;
  #closed = false;

  constructor(fs: MemoryFiles, path: string, node: Node) {
    this.#fs = fs;
    this.path = path;
    this.#node = node;
  }

  size(): number {
    return this.#node.length;
  }

  append(bytes: Uint8Array): void {
    if (this.#closed) throw fsError("EBADF", this.path);
    const fault = this.#fs.nextAppendFault();
    let n = bytes.length;
    let code = "";
    if (fault) {
      n = Math.min(fault.partial ?? 0, bytes.length);
      code = fault.code;
    }
    const room = this.#fs.capacity - this.#fs.used();
    if (n > room) {
      n = Math.max(0, room);
      code = "ENOSPC";
    }
    this.#write(bytes.subarray(0, n));
    if (code) throw fsError(code, this.path);
  }

  truncate(length: number): void {
    const node = this.#node;
    if (length < node.length) node.data.fill(0, length, node.length);
    else this.#write(new Uint8Array(length - node.length));
    node.length = length;
    node.synced = Math.min(node.synced, length);
  }

  sync(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return this.#fs.runSync(this.#node, this.path);
  }

  syncNow(): void {
    this.#fs.fsyncs++;
    this.#node.synced = this.#node.length;
  }

  close(): void {
    this.#closed = true;
  }

  #write(bytes: Uint8Array): void {
    const node = this.#node;
    const need = node.length + bytes.length;
    if (need > node.data.length) {
      const grown = new Uint8Array(Math.max(need, node.data.length * 2));
      grown.set(node.data.subarray(0, node.length));
      node.data = grown;
    }
    node.data.set(bytes, node.length);
    node.length = need;
  }
}
