// What the runtime adapters share.

/** Where to listen: TCP host and port, or a UNIX socket path. */
export type ListenAddress = { host: string; port: number } | { path: string };

/** A listening server. */
export interface Listening {
  /** The bound address (the real port when 0 was asked for). */
  address: ListenAddress;
  /** Stop accepting; open connections are closed by Service.close(). */
  close(): void;
}
