// A raw beanstalkd-protocol client for tests: send exact bytes, read exact replies.
// Built on node:net, which Deno and Bun both provide, so one suite runs on both.
import { connect, type Socket } from "node:net";

const CRLF = "\r\n";
const DEFAULT_TIMEOUT_MS = 5000;

/** Where a server listens: TCP host/port or a UNIX socket path. */
export type Address = { host: string; port: number } | { path: string };

/** A connection that reads replies as bytes and as latin1 strings. */
export class Wire {
  #sock: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #ended = false;
  #error: Error | undefined;
  #waiters: Array<() => void> = [];

  constructor(sock: Socket) {
    this.#sock = sock;
    sock.on("data", (d: Buffer) => {
      this.#buf = this.#buf.length ? Buffer.concat([this.#buf, d]) : d;
      this.#wake();
    });
    sock.on("end", () => {
      this.#ended = true;
      this.#wake();
    });
    sock.on("close", () => {
      this.#ended = true;
      this.#wake();
    });
    sock.on("error", (e: Error) => {
      this.#error = e;
      this.#ended = true;
      this.#wake();
    });
  }

  #wake() {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  async #until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (this.#ended) {
        throw new Error(
          `connection closed while waiting for ${what}; buffered ${JSON.stringify(this.#buf.toString("latin1"))}` +
            (this.#error ? ` (${this.#error.message})` : ""),
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; buffered ${JSON.stringify(this.#buf.toString("latin1"))}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Send a string (latin1, so every char is one byte) or raw bytes. */
  send(data: string | Uint8Array): void {
    this.#sock.write(typeof data === "string" ? Buffer.from(data, "latin1") : data);
  }

  /** Read one CRLF-terminated line, without the CRLF. */
  async line(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<string> {
    let i = -1;
    await this.#until(() => (i = this.#buf.indexOf(CRLF)) >= 0, timeoutMs, "a line");
    const s = this.#buf.subarray(0, i).toString("latin1");
    this.#buf = this.#buf.subarray(i + 2);
    return s;
  }

  /** Read exactly n bytes. */
  async bytes(n: number, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Buffer> {
    await this.#until(() => this.#buf.length >= n, timeoutMs, `${n} bytes`);
    const b = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    return Buffer.from(b);
  }

  /**
   * Read one whole reply: the line, plus "\r\n"-terminated data for
   * FOUND/RESERVED/OK replies. Returns the exact bytes as a latin1 string.
   */
  async reply(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<string> {
    const head = await this.line(timeoutMs);
    const m = /^(?:FOUND|RESERVED) \d+ (\d+)$/.exec(head) ?? /^OK (\d+)$/.exec(head);
    if (!m) return head + CRLF;
    const data = await this.bytes(Number(m[1]) + 2, timeoutMs);
    return head + CRLF + data.toString("latin1");
  }

  /** Send a command line (CRLF appended) and return its whole reply. */
  async cmd(line: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<string> {
    this.send(line + CRLF);
    return await this.reply(timeoutMs);
  }

  /** Put a job into the used tube; returns the reply line. */
  async put(body: string, pri = 0, delay = 0, ttr = 60): Promise<string> {
    this.send(`put ${pri} ${delay} ${ttr} ${Buffer.byteLength(body, "latin1")}\r\n${body}\r\n`);
    return await this.reply();
  }

  /** Resolve true if nothing arrives within ms (used to show "no reply yet"). */
  async silentFor(ms: number): Promise<boolean> {
    await new Promise((r) => setTimeout(r, ms));
    return this.#buf.length === 0;
  }

  /** What has arrived but not been read. */
  get pending(): string {
    return this.#buf.toString("latin1");
  }

  /** Wait until the server closes the connection. */
  async closed(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#ended) {
      if (Date.now() > deadline) throw new Error("connection still open");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 20);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  get isClosed(): boolean {
    return this.#ended;
  }

  /** Half-close: send FIN but keep reading. */
  end(): void {
    this.#sock.end();
  }

  /** Close both directions now. */
  close(): void {
    this.#sock.destroy();
  }
}

/** sock once it emits `ready` ("connect", or "secureConnect" for TLS), or its error or a timeout. */
export function socketWhen(sock: Socket, ready: string, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      sock.destroy();
      reject(new Error(`${ready} timed out`));
    }, timeoutMs);
    sock.once("error", (e) => {
      clearTimeout(t);
      reject(e);
    });
    sock.once(ready, () => {
      clearTimeout(t);
      sock.removeAllListeners("error");
      resolve(sock);
    });
  });
}

/** A Wire once sock emits `ready` (see socketWhen). */
export async function wireWhen(sock: Socket, ready: string, timeoutMs: number): Promise<Wire> {
  return new Wire(await socketWhen(sock, ready, timeoutMs));
}

/** Open a connection to a server. */
export function dial(addr: Address, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Wire> {
  const sock = "path" in addr
    ? connect({ path: addr.path, allowHalfOpen: true })
    : connect({ host: addr.host, port: addr.port, allowHalfOpen: true });
  sock.setNoDelay(true);
  return wireWhen(sock, "connect", timeoutMs);
}

/** A plain node:net socket, connected (for tests that need raw control: pause, reset). */
export function openSocket(addr: { host: string; port: number }, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Socket> {
  return socketWhen(connect({ host: addr.host, port: addr.port }), "connect", timeoutMs);
}

/** Whether a server accepts connections on 127.0.0.1:port now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
