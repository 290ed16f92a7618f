// One file of the binlog over node:fs (adapters/files_node.ts opens it): synchronous
// writes (a record is small and the page cache absorbs it in microseconds), fsync in
// the callback form so the event loop keeps serving while the disk works.
//
// Preallocation (when open() is given one: the log files under -f 0). Each durable ack
// waits for an fsync, and an fsync after an append that grew the file must also commit
// the new size through the file system's journal: on ext4 that made an fsync about half
// again as slow as one over blocks the file already had. So, as beanstalkd does, zero
// blocks are written ahead of the data (a chunk at a time, up to the limit, ending on a
// PREALLOCATION_BLOCK boundary) and records go into them with positional writes; the file
// is not opened O_APPEND, since Linux ignores the offset of a write to such a file. Real
// zeros, not fallocate(2): fallocated blocks are "unwritten" extents, and writing into
// them is again a metadata change each fsync must commit. size() stays the size of the
// data; truncate() and close() cut the zero tail off; fdatasync, since the size (the one
// piece of metadata that matters) is covered by it when it changes.
//
// A full disk must refuse nothing that plain appends would have taken: zero-filling that
// fails is undone and the file goes on with plain appends; and a write that hits ENOSPC
// first takes back the zero tails of the other open files (room nobody writes yet) and
// is tried once more, so the ballast (core/memory/binlog/ballast.ts) still grows as it would.
import * as fs from "node:fs";
import type { AppendFile, Preallocation } from "../core/files.ts";
import { errorCode, PREALLOCATION_BLOCK } from "../core/files.ts";

/** What zero blocks are written from (never written to). */
const ZEROS = new Uint8Array(64 * 1024);

function blockEnd(n: number): number {
  return Math.ceil(n / PREALLOCATION_BLOCK) * PREALLOCATION_BLOCK;
}

/** The open files holding zero blocks ahead of their data (one set per Files). */
export class Spares {
  #files = new Set<NodeAppendFile>();

  add(f: NodeAppendFile): void {
    this.#files.add(f);
  }

  delete(f: NodeAppendFile): void {
    this.#files.delete(f);
  }

  /** Cut every zero tail but `except`'s; whether any room came back. */
  giveBack(except: NodeAppendFile): boolean {
    let any = false;
    for (const f of [...this.#files]) if (f !== except && f.dropSpare()) any = true;
    return any;
  }
}

export class NodeAppendFile implements AppendFile {
  readonly path: string;
  #fd: number;
  /** Bytes of data; the next record is written here. */
  #size: number;
  /** Bytes in the file: the data and the zero blocks allocated after it. */
  #end: number;
  #pre: Preallocation | undefined;
  #spares: Spares;
  #closed = false;

  constructor(path: string, fd: number, spares: Spares, pre: Preallocation | undefined) {
    this.path = path;
    this.#fd = fd;
    this.#size = this.#end = fs.fstatSync(fd).size;
    this.#spares = spares;
    this.#pre = pre;
  }

  size(): number {
    return this.#size;
  }

  append(bytes: Uint8Array): void {
    if (this.#pre && this.#size + bytes.length > this.#end) this.#preallocate(this.#size + bytes.length);
    let off = 0;
    let retried = false;
    for (;;) {
      try {
        while (off < bytes.length) off += fs.writeSync(this.#fd, bytes, off, bytes.length - off, this.#size + off);
        break;
      } catch (e) {
        if (!retried && errorCode(e) === "ENOSPC" && this.#spares.giveBack(this)) {
          retried = true;
          continue;
        }
        this.#wrote(off);
        throw e;
      }
    }
    this.#wrote(off);
  }

  truncate(length: number): void {
    try {
      fs.ftruncateSync(this.#fd, length);
      this.#size = this.#end = length;
      this.#spares.delete(this);
    } catch (e) {
      this.#refreshSize();
      throw e;
    }
  }

  sync(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      fs.fdatasync(this.#fd, (err) => err ? reject(err) : resolve());
    });
  }

  syncNow(): void {
    if (!this.#closed) fs.fdatasyncSync(this.#fd);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.dropSpare();
    fs.closeSync(this.#fd);
  }

  /** Cut the zero tail off and preallocate no more (the disk is full, or the file is done). */
  dropSpare(): boolean {
    this.#pre = undefined;
    this.#spares.delete(this);
    if (this.#end <= this.#size) return false;
    try {
      fs.ftruncateSync(this.#fd, this.#size);
      this.#end = this.#size;
      return true;
    } catch {
      return false; // the tail stays; recovery reads it as unwritten
    }
  }

  #wrote(n: number): void {
    this.#size += n;
    this.#end = Math.max(this.#end, this.#size);
  }

  /** Zero blocks from the end of the file to cover `need` bytes of data, a chunk or more at a time. */
  #preallocate(need: number): void {
    const pre = this.#pre!;
    const to = Math.min(blockEnd(Math.max(need, this.#end + pre.chunk)), blockEnd(pre.limit));
    if (to < need) return; // a record that runs past the limit: a plain append
    let at = this.#end;
    try {
      while (at < to) at += fs.writeSync(this.#fd, ZEROS, 0, Math.min(ZEROS.length, to - at), at);
      this.#end = to;
      this.#spares.add(this);
    } catch {
      // no room for them (or any failure): what was zeroed goes back, plain appends from now on
      this.#pre = undefined;
      try {
        fs.ftruncateSync(this.#fd, this.#end);
      } catch {
        this.#end = at;
      }
    }
  }

  #refreshSize(): void {
    try {
      this.#end = fs.fstatSync(this.#fd).size;
      this.#size = Math.min(this.#size, this.#end);
    } catch {
      // keep the old value; the caller truncates to a length it knows anyway
    }
  }
}
