// The file operations the binlog needs, and nothing more. core/ stays runtime-free:
// adapters/files_node.ts implements this with node:fs (present in Deno and Bun alike), and
// tests/harness/files_memory.ts keeps everything in memory for tests, with injectable faults.
//
// Failures are thrown as errors carrying a POSIX `code` ("ENOSPC", "EIO", ...), the
// way node:fs reports them; use errorCode() to read it.

/**
 * A file open for appending. Writes are synchronous; fsync has an async form. A file
 * opened with a Preallocation may hold zero bytes after size() while it is open (blocks
 * allocated ahead of the data); truncate() and close() cut them off.
 */
export interface AppendFile {
  readonly path: string;
  /** Bytes of data in the file (what this handle has appended plus what was there). */
  size(): number;
  /**
   * Append all of `bytes`. On failure it throws, and the file may hold any prefix
   * of `bytes` (a short write before ENOSPC): the caller truncates it back.
   */
  append(bytes: Uint8Array): void;
  /** Cut the file to `length` bytes. */
  truncate(length: number): void;
  /** fsync (of the data; the size too when it changed) without blocking the event loop. */
  sync(): Promise<void>;
  /** fsync, blocking (startup and close only). */
  syncNow(): void;
  close(): void;
}

/**
 * Keep disk blocks allocated (zero-filled) ahead of a file's data, `chunk` bytes at a
 * time and never past `limit` bytes of file, so that an fsync after an append inside
 * them has no file-size change to commit. A hint: a file system that cannot keep them
 * just gets plain appends. Recovery reads such a zero tail as unwritten (recover.ts).
 */
export interface Preallocation {
  chunk: number;
  limit: number;
}

/**
 * Preallocated zero blocks end on a multiple of this, so a zero tail up to such an end
 * is what preallocation leaves behind after a crash (recover.ts keeps quiet about it).
 */
export const PREALLOCATION_BLOCK = 4096;

/** The directory lock: held for the process lifetime, released by release(). */
export interface DirLock {
  release(): void;
  /** Things the lock could not check, for the log. */
  readonly notes?: readonly string[];
}

export interface Files {
  /** Entry names in `dir`; throws (ENOENT, ENOTDIR) when it is not a directory. */
  list(dir: string): string[];
  /** The whole file. */
  read(path: string): Uint8Array;
  /**
   * Open for appending. "new" fails with EEXIST when the file exists (O_EXCL);
   * "any" creates it or opens it as it is.
   */
  open(path: string, mode: "new" | "any", preallocate?: Preallocation): AppendFile;
  unlink(path: string): void;
  /** rename(2): replaces `to` if it exists. */
  rename(from: string, to: string): void;
  /** fsync the directory itself, so created and removed names survive a crash. */
  syncDir(dir: string): Promise<void>;
  /** The same, blocking (for the log's back-pressure under write pressure). */
  syncDirNow(dir: string): void;
  /**
   * Take the exclusive lock on `dir` or throw an Error whose message says why and
   * who holds it. See adapters/files_node.ts for how stale locks are recognised.
   */
  lock(dir: string): DirLock;
}

/** The POSIX code of a thrown file error ("ENOSPC"), or "" when it has none. */
export function errorCode(e: unknown): string {
  if (typeof e === "object" && e !== null && "code" in e) {
    const code = (e as { code: unknown }).code;
    if (typeof code === "string") return code;
  }
  return "";
}

/** A short description of a thrown file error for log lines. */
export function errorText(e: unknown): string {
  const code = errorCode(e);
  const msg = e instanceof Error ? e.message : String(e);
  return code && !msg.includes(code) ? `${code}: ${msg}` : msg;
}

/** Path join for the binlog's flat directory (no normalisation needed). */
export function joinPath(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

/** Close a handle whose errors no longer matter (it is being dropped or replaced). */
export function closeQuietly(h: AppendFile | undefined): void {
  try {
    h?.close();
  } catch {
    // closing is best effort
  }
}
