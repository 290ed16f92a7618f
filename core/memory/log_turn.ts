// One append for every connection that logged in a turn of the event loop: the
// in-memory engine's answer to Engine.settle() when it has a log (-b).
//
// A connection whose batch of commands changed something logged holds that batch's
// replies and joins the turn; the log then writes the records of every member with
// one append, and each member sends its replies (or, with durable acks, waits for the
// fsync that the same turn shares). With 50 clients sending one put at
// a time that is one write(2) per turn instead of one per client, which was most of
// what -b cost per put (the write syscall, and on Deno its node:fs wrapper).
//
// When the append runs. At the end of the current microtask queue, the batches of
// every socket whose read completed in the same tick share it on Deno (it resolves
// them together); Bun runs a socket's data callback and drains the microtasks
// before the next socket's, so there each connection would append alone. Waiting
// for the end of the event loop's turn (afterTurn) shares on both, but costs a lone
// client an extra turn of the loop per batch. So the turn adapts: it
// starts at the end of the microtasks, and moves to the end of the loop's turn once
// two appends happen in one turn of the loop (the clients are many); it moves back
// after LONELY turns in a row with one member (the load is gone).
//
// The guarantee is the log's: no reply before its record is written. When the
// shared append fails, none of its records is in the file, so every member is
// dropped without its replies (a client sees a disconnect, never a false ack).
import type { Wal } from "./wal.ts";
import type { Turns } from "../clock.ts";
import type { Settling } from "../engine.ts";

/** Turns in a row with a single member after which appends go back to the end of the microtasks. */
const LONELY = 64;

export class LogTurn {
  readonly #wal: Wal;
  readonly #afterTurn: (f: () => void) => void;
  #members: Settling[] = [];
  #spare: Settling[] = [];
  /** Whether each member's batch logged something (else it waits only for the append). */
  #changed: boolean[] = [];
  #queued = false;
  /** Appends wait for the end of the event loop's turn (many clients), not of the microtasks. */
  #late = false;
  /** Late turns in a row that had one member. */
  #lonely = 0;
  /** Early appends since the event loop last turned. */
  #early = 0;

  constructor(wal: Wal, turns: Turns) {
    this.#wal = wal;
    this.#afterTurn = turns.afterTurn;
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

  /** Appends wait for the end of the event loop's turn (see the header). */
  get late(): boolean {
    return this.#late;
  }

  /**
   * Hold `m`'s replies until the records logged so far are written, and with durable
   * acks, when its batch `changed` something, until they are on disk.
   */
  join(m: Settling, changed: boolean): void {
    this.#changed[this.#members.length] = changed;
    this.#members.push(m);
    if (this.#queued) return;
    this.#queued = true;
    this.#wal.hold?.();
    if (this.#late) this.#afterTurn(this.#write);
    else queueMicrotask(this.#write);
  }

  readonly #write = (): void => {
    this.#queued = false;
    const members = this.#members;
    this.#members = this.#spare;
    this.#adapt(members.length);
    // Only members' records can be pending: every logged change comes from a
    // connection's batch (the dashboard's actions too), and the log's own writes
    // (compaction, rotation) flush theirs and report a loss to this flush.
    const ok = this.#wal.flush();
    const durable = this.#wal.durableAcks;
    for (let i = 0; i < members.length; i++) {
      const m = members[i]!;
      if (!ok) m.settled(false, "binlog write failed");
      else if (durable && this.#changed[i]) this.#sync(m);
      else m.settled(true);
    }
    members.length = 0;
    this.#spare = members;
  };

  /**
   * Durable acks: nothing goes out until the log is on disk; one fsync serves every
   * member that logged something in this turn (group commit).
   */
  #sync(m: Settling): void {
    this.#wal.synced().then(
      () => m.settled(true),
      (e) => m.settled(false, `binlog sync failed: ${e}`),
    );
  }

  #adapt(members: number): void {
    if (this.#late) {
      this.#lonely = members > 1 ? 0 : this.#lonely + 1;
      if (this.#lonely >= LONELY) this.#late = false;
    } else if (this.#early++ === 0) {
      this.#afterTurn(this.#loopTurned);
    } else {
      this.#late = true;
      this.#lonely = 0;
    }
  }

  readonly #loopTurned = (): void => {
    this.#early = 0;
  };
}
