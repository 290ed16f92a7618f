// Protocol clients inside the test process: a connection on a Service, written to
// and read synchronously (without -b every reply is written before push() returns;
// with -b, replies wait for the log's append at the end of the turn: use exchange()).
import type { Service } from "../../protocol/service.ts";

export interface LocalClient {
  /** Send bytes (a string is latin1) and return whatever replies came out. */
  send(text: string): string;
  /** Send, and return the replies once the turn's log append has let them out (-b). */
  exchange(text: string): Promise<string>;
  /** Replies that arrived since the last send() or take() (e.g. a reserve woken by a timer). */
  take(): string;
  close(): void;
}

export function localClient(svc: Service): LocalClient {
  let out = "";
  const dec = new TextDecoder("latin1");
  const conn = svc.connect({
    write(piece) {
      out += dec.decode(piece);
    },
    close() {},
  });
  const take = () => {
    const r = out;
    out = "";
    return r;
  };
  return {
    send(text) {
      conn.push(Uint8Array.from(text, (c) => c.charCodeAt(0)));
      return take();
    },
    async exchange(text) {
      conn.push(Uint8Array.from(text, (c) => c.charCodeAt(0)));
      await svc.afterIO(); // after the LogTurn's own afterTurn (setImmediate), queued before it
      return take();
    },
    take,
    close: () => conn.abort(),
  };
}
