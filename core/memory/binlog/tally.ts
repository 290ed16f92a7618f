// What the log has written, as stats (binlog-records-*) and the metrics port show it,
// with the records still pending counted apart: a failed flush takes those back (they
// are not in the file), and when any of them came from put()/update(), the next
// flush() must report the loss (binlog.ts). Kept apart from binlog.ts, which decides
// what is written; this only counts it.
export class WriteTally {
  recordsWritten = 0;
  recordsMigrated = 0;
  /** Bytes written, pending ones included (taken back if lost). */
  bytesWritten = 0;
  diskErrors = 0;
  /** The last flush worked. */
  writable = true;
  /** Records from put()/update() were lost since the last flush() call: it must say so. */
  lost = false;
  /** Pending bytes and records, those from put()/update(), pending moved ones. */
  #pendingBytes = 0;
  #pendingRecords = 0;
  #pendingOwn = 0;
  #pendingMigrated = 0;

  /** A record of `size` bytes joined the pending ones; `own`: from put()/update(). */
  added(size: number, own: boolean): void {
    this.recordsWritten++;
    this.bytesWritten += size;
    this.#pendingBytes += size;
    this.#pendingRecords++;
    if (own) this.#pendingOwn++;
  }

  /** A policy restated at the start of a new file (written before anything can depend on it). */
  restated(size: number): void {
    this.bytesWritten += size;
    this.recordsWritten++;
  }

  /** A live job's record moved forward; `pending`: it waits for the next flush (else it is written). */
  migrated(pending: boolean): void {
    this.recordsMigrated++;
    if (pending) this.#pendingMigrated++;
  }

  /** A flush that had records ended: they stand, or (failed) they are taken back. */
  flushed(ok: boolean): void {
    this.writable = ok;
    if (!ok) {
      this.diskErrors++;
      if (this.#pendingOwn > 0) this.lost = true;
      this.bytesWritten -= this.#pendingBytes;
      this.recordsWritten -= this.#pendingRecords;
      this.recordsMigrated -= this.#pendingMigrated;
    }
    this.#pendingOwn =
      this.#pendingRecords =
      this.#pendingMigrated =
      this.#pendingBytes =
        0;
  }
}
