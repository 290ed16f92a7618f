// Facts about this process and machine for `stats`. Reading them is OS I/O, so it lives
// in adapters/host_node.ts and comes in through ServiceOptions.host; this file holds
// only the shape and what needs no OS.

/** Facts about this process and machine, as `stats` shows them. */
export interface HostInfo {
  /** Process id. */
  pid: number;
  /** The machine's name (uname nodename). */
  hostname: string;
  /** uname version string, as 1.12's `os` key shows. */
  os: string;
  /** uname machine, e.g. x86_64. */
  platform: string;
  /** User and system CPU time of this process, in microseconds. */
  cpu(): { user: number; system: number };
}

/** Placeholder facts for a Service given none (e.g. over web streams, where there is no OS to ask). */
export const UNKNOWN_HOST: HostInfo = {
  pid: 0,
  hostname: "localhost",
  os: "unknown",
  platform: "unknown",
  cpu: () => ({ user: 0, system: 0 }),
};

/** 16 lowercase hex characters, random per process start (1.12 reads /dev/urandom). */
export function randomId(): string {
  const b = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
