// The dashboard's write actions, carried out as a beanstalkd client would: each one
// opens an in-process connection, sends protocol commands, and reads the replies.
// So an action takes exactly the protocol's path (drain mode, the log and its durable
// acks, counters, waking waiting workers) and answers with the protocol's words; the
// cost is that it shows in stats like any short-lived client (total-connections, cmd-*).
import type { Service } from "../service.ts";

/** A write action the dashboard can ask for. */
export type Action =
  | { kind: "kick"; tube: string; bound: number }
  | { kind: "kick-job"; id: number }
  | { kind: "delete"; id: number }
  | { kind: "pause"; tube: string; seconds: number }
  | { kind: "put"; tube: string; pri: number; delaySec: number; ttrSec: number; body: Uint8Array }
  // extensions (docs/extensions.md): empty a tube, its retry policy
  | { kind: "delete-tube"; tube: string }
  | { kind: "set-dlq"; tube: string; maxAttempts: number; deadTube: string }
  | { kind: "set-backoff"; tube: string; baseSec: number; capSec: number }
  // flow control and recurring jobs: a tube's limits, a schedule added or removed
  | { kind: "limits"; tube: string; concurrency: number; rateCount: number; rateWindowSec: number }
  | {
    kind: "schedule";
    name: string;
    tube: string;
    spec: string;
    pri: number;
    ttrSec: number;
    body: Uint8Array;
  }
  | { kind: "unschedule"; name: string };

/** Protocol replies, one per command sent (the last line of each answer). */
export type Replies = string[];

const enc = new TextEncoder();

/** The command bytes for an action (validated by the caller: names and numbers are well-formed). */
export function commandsFor(a: Action): Uint8Array {
  switch (a.kind) {
    case "kick":
      return enc.encode(`use ${a.tube}\r\nkick ${a.bound}\r\n`);
    case "kick-job":
      return enc.encode(`kick-job ${a.id}\r\n`);
    case "delete":
      return enc.encode(`delete ${a.id}\r\n`);
    case "pause":
      return enc.encode(`pause-tube ${a.tube} ${a.seconds}\r\n`);
    case "delete-tube":
      return enc.encode(`delete-tube ${a.tube}\r\n`);
    case "set-dlq":
      return enc.encode(`set-dlq ${a.tube} ${a.maxAttempts} ${a.deadTube}\r\n`);
    case "set-backoff":
      return enc.encode(`set-backoff ${a.tube} ${a.baseSec} ${a.capSec}\r\n`);
    case "limits":
      return enc.encode(
        `set-concurrency ${a.tube} ${a.concurrency}\r\nset-rate ${a.tube} ${a.rateCount} ${a.rateWindowSec}\r\n`,
      );
    case "unschedule":
      return enc.encode(`unschedule ${a.name}\r\n`);
    case "schedule":
      return withBody(`schedule ${a.name} ${a.tube} ${a.spec} ${a.pri} ${a.ttrSec} ${a.body.length}\r\n`, a.body);
    case "put":
      return withBody(`use ${a.tube}\r\nput ${a.pri} ${a.delaySec} ${a.ttrSec} ${a.body.length}\r\n`, a.body);
  }
}

/** Command lines, then a body and its CRLF. */
function withBody(lines: string, body: Uint8Array): Uint8Array {
  const head = enc.encode(lines);
  const out = new Uint8Array(head.length + body.length + 2);
  out.set(head);
  out.set(body, head.length);
  out.set([13, 10], head.length + body.length);
  return out;
}

/** Send `bytes` then quit over an in-process connection; resolves to the reply lines. */
export async function converse(svc: Service, bytes: Uint8Array): Promise<Replies> {
  const chunks: Uint8Array[] = [];
  const conn = svc.connect({
    write(piece) {
      chunks.push(piece.slice());
    },
    close() {},
  });
  conn.push(bytes);
  conn.push(enc.encode("quit\r\n"));
  await conn.done;
  const text = new TextDecoder().decode(concat(chunks));
  return text.split("\r\n").filter((l) => l !== "");
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * Run an action; the answer is the reply to its last command (e.g. "KICKED 3", "INSERTED
 * 7"), or the first that is not what a command of its kind answers when all is well.
 */
export async function runAction(svc: Service, a: Action): Promise<string> {
  const replies = await converse(svc, commandsFor(a));
  if (a.kind === "limits") return replies.find((r) => r !== "CONCURRENCY_SET" && r !== "RATE_SET") ?? "RATE_SET";
  return replies[replies.length - 1] ?? "INTERNAL_ERROR";
}
