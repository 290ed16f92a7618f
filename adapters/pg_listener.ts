// The LISTEN side of adapters/pg_client.ts: NOTIFYs of one channel on a connection of
// its own (a pooled connection cannot hold a LISTEN), established again whenever it is lost.
import type postgres from "postgres";
import { DatabaseAway, type ListenEvents } from "../core/pg/sql.ts";

type Driver = postgres.Sql<Record<string, never>>;

/** LISTEN lost: tried again this often (ms) until it holds. */
const RELISTEN_MS = 250;

/**
 * LISTEN on a connection of its own, established again whenever that connection is lost
 * (postgres.js's own listen() tries again once and, if the database is still away, gives
 * up silently).
 */
export class Listener {
  readonly #open: (more: Record<string, unknown>) => Driver;
  #sql: Driver | undefined;
  #channel = "";
  #onNotify: (payload: string) => void = () => {};
  #events: ListenEvents = {};
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(open: (more: Record<string, unknown>) => Driver) {
    this.#open = open;
  }

  async listen(channel: string, onNotify: (payload: string) => void, events: ListenEvents = {}): Promise<void> {
    this.#channel = channel;
    this.#onNotify = onNotify;
    this.#events = events;
    await this.#establish();
  }

  async #establish(): Promise<void> {
    const sql = this.#open({
      max: 1,
      idle_timeout: null,
      max_lifetime: null,
      fetch_types: false,
      onnotify: (c: string, payload: string) => {
        if (c === this.#channel) this.#onNotify(payload);
      },
      onclose: () => {
        if (this.#sql !== sql || this.#closed) return;
        this.#sql = undefined;
        sql.end({ timeout: 0 }).catch(() => {});
        this.#events.lost?.(new DatabaseAway("the LISTEN connection was closed"));
        this.#again();
      },
    });
    this.#sql = sql;
    try {
      await sql.unsafe(`listen "${this.#channel.replace(/"/g, '""')}"`);
    } catch (e) {
      if (this.#sql === sql) this.#sql = undefined;
      sql.end({ timeout: 0 }).catch(() => {});
      throw e;
    }
  }

  #again(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      this.#establish().then(() => this.#events.again?.(), () => this.#again());
    }, RELISTEN_MS);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const sql = this.#sql;
    this.#sql = undefined;
    await sql?.end({ timeout: 5 });
  }
}
