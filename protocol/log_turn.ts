// One append for every connection that logged in a turn of the event loop.
//
// A connection whose batch of commands changed something logged (-b) holds that
// batch's replies and joins the turn; once the event loop has polled every socket
// that was ready (afterIO), the log writes the records of all of them with one
// append, and each member then sends its replies (or, with durable acks, waits for
// the fsync that the same turn shares). With 50 clients sending one put at a time
// that is one write(2) per turn instead of one per client, which was most of what
// -b cost per put (the write syscall, and on Deno its node:fs wrapper).
//
// The guarantee is the log's: no reply before its record is written. When the
// shared append fails, none of its records is in the file, so every member is
// dropped without its replies (a client sees a disconnect, never a false ack).
import { afterIO } from "./yield.ts";
import type { Wal } from "../core/wal.ts";

/** A connection waiting for its records to be written. */
export interface LogTurnMember {
  /** The records are in the file (ok), or lost with the append (not ok). */
  logged(ok: boolean): void;
}

export class LogTurn {
  readonly #wal: Wal;
  #members: LogTurnMember[] = [];
  #spare: LogTurnMember[] = [];
  #queued = false;

  constructor(wal: Wal) {
    this.#wal = wal;
  }

  /**
   * A turn is under way: some replies wait for records not yet written. Replies of
   * other connections then wait for it too (they join), even if they logged nothing,
   * since they may show what those records describe (a reserve handing out a job
   * whose put is not yet in the file).
   */
  get pending(): boolean {
    return this.#queued;
  }

  /** Hold `m`'s replies until the records logged so far are written. */
  join(m: LogTurnMember): void {
    this.#members.push(m);
    if (!this.#queued) {
      this.#queued = true;
      this.#wal.hold?.();
      afterIO(this.#write);
    }
  }

  readonly #write = (): void => {
    this.#queued = false;
    const members = this.#members;
    this.#members = this.#spare;
    // Only members' records can be pending: every logged change comes from a
    // connection's batch (the dashboard's actions too), and the log's own writes
    // (compaction, rotation) flush theirs and report a loss to this flush.
    const ok = this.#wal.flush();
    for (let i = 0; i < members.length; i++) members[i]!.logged(ok);
    members.length = 0;
    this.#spare = members;
  };
}
