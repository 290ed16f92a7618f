// What the runtime adapters share: the listeners' types and the HTTP side port's.

/**
 * Where to listen: TCP host and port, a UNIX socket path, or an already listening
 * socket inherited as this file descriptor (systemd socket activation passes fd 3).
 */
export type ListenAddress = { host: string; port: number } | { path: string } | { fd: number };

/** A listening server. */
export interface Listening {
  /** The bound address (the real port when 0 was asked for). */
  address: ListenAddress;
  /**
   * Settles only if the listener stops accepting by itself (never after close()): the
   * server cannot take new clients any more and must exit non-zero.
   */
  failed: Promise<Error>;
  /** Stop accepting; open connections are closed by Service.close(). */
  close(): void;
}

/** PEM text of a TLS listener's identity, and of the CAs its clients must be signed by. */
export interface TlsMaterial {
  /** The server's certificate chain, leaf first. */
  cert: string;
  /** The private key of cert's leaf. */
  key: string;
  /** When set, every client must present a certificate signed by one of these (mTLS). */
  ca?: string | undefined;
}

/** A client certificate's subject as `client=CN=worker-1,O=acme` (undefined without one). */
export function peerName(subject: Record<string, unknown> | undefined): string | undefined {
  if (!subject) return undefined;
  const parts = Object.entries(subject).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join("+") : String(v)}`);
  return parts.length ? `client=${parts.join(",")}` : undefined;
}

/** A request handler over web-standard Request/Response (the HTTP side port's). */
export type Handler = (req: Request) => Promise<Response>;

/** A running HTTP server (serveHttp() in http.ts). */
export interface HttpListening {
  /** The bound address (the real port when 0 was asked for). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** How listen() serves a listener: plain (the default) or TLS. */
export interface ListenOptions {
  /** Speak TLS on this listener (TCP only). */
  tls?: TlsMaterial | undefined;
  /** How long a client may take to finish its TLS handshake before it is dropped. */
  handshakeTimeoutMs?: number | undefined;
}

/**
 * A TLS client that connects and then stalls mid-handshake holds a socket but is not a
 * beanstalkd client yet (it is not counted in stats until the handshake succeeds), so it
 * gets this long and is then dropped. Generous for slow links, short enough that a
 * stalled scan cannot pile up sockets.
 */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * A peer's address as stats-conn shows it (beanstalkd-pi writes Go's host:port): host:port,
 * [v6]:port, or unix:PATH of the listening socket for a UNIX client (which has no name of
 * its own); "" when nothing is known.
 */
export function peerAddress(host: string | undefined, port: number | undefined, listen?: ListenAddress): string {
  if (host) return `${host.includes(":") ? `[${host}]` : host}:${port ?? 0}`;
  return listen && "path" in listen ? `unix:${listen.path}` : "";
}
