// A fixed-answer server: the ceiling of a runtime (`bench/main.ts --targets
// fixed-deno,fixed-bun`). It frames `put` commands and answers each with
// "INSERTED 1", answers use/watch/ignore so setup works, and does nothing else: no
// queue, so what it reaches is what the runtime's socket path allows, and tubeway on
// the same runtime is printed as a fraction of it.
// Usage: bun run bench/fixed_server.ts -l 127.0.0.1 -p PORT   (or deno run -A)
import { createServer, type Socket } from "node:net";

// deno-lint-ignore no-explicit-any
const BunNS: any = (globalThis as any).Bun;
// deno-lint-ignore no-explicit-any
const proc: any = (globalThis as any).process;

const argv: string[] = proc.argv.slice(2);
const host = argv[argv.indexOf("-l") + 1] ?? "127.0.0.1";
const port = Number(argv[argv.indexOf("-p") + 1] ?? 11300);

const enc = new TextEncoder();
const INSERTED = enc.encode("INSERTED 1\r\n");
const batches: Uint8Array[] = [];
for (let k = 0; k <= 64; k++) {
  const b = new Uint8Array(INSERTED.length * k);
  for (let i = 0; i < k; i++) b.set(INSERTED, i * INSERTED.length);
  batches.push(b);
}

class State {
  skip = 0; // body bytes (with CRLF) still to skip
  rest: Uint8Array | null = null;
}

/** Consume buf; return the reply bytes. */
function feed(st: State, chunk: Uint8Array): Uint8Array | null {
  let buf = chunk;
  let pos = 0;
  if (st.skip) {
    const k = Math.min(st.skip, buf.length);
    st.skip -= k;
    pos = k;
  }
  if (st.rest) {
    const r = st.rest;
    const nb = new Uint8Array(r.length + buf.length - pos);
    nb.set(r, 0);
    nb.set(buf.subarray(pos), r.length);
    buf = nb;
    pos = 0;
    st.rest = null;
  }
  let inserted = 0;
  let other = "";
  while (pos < buf.length) {
    const cr = buf.indexOf(13, pos);
    if (cr < 0 || cr + 1 >= buf.length) {
      st.rest = buf.slice(pos);
      break;
    }
    if (buf[pos] === 112 /* p */ && buf[pos + 1] === 117 && buf[pos + 2] === 116) {
      // put pri delay ttr bytes: read the last number
      let i = cr - 1;
      let n = 0;
      let mul = 1;
      while (i > pos && buf[i] !== 32) {
        n += (buf[i]! - 48) * mul;
        mul *= 10;
        i--;
      }
      inserted++;
      const end = cr + 2 + n + 2;
      if (end > buf.length) {
        st.skip = end - buf.length;
        pos = buf.length;
        break;
      }
      pos = end;
      continue;
    }
    const line = new TextDecoder().decode(buf.subarray(pos, cr));
    const [cmd, arg] = line.split(" ");
    if (inserted) {
      other += "INSERTED 1\r\n".repeat(inserted);
      inserted = 0;
    }
    if (cmd === "use") other += `USING ${arg}\r\n`;
    else if (cmd === "watch") other += "WATCHING 2\r\n";
    else if (cmd === "ignore") other += "WATCHING 1\r\n";
    else other += "UNKNOWN_COMMAND\r\n";
    pos = cr + 2;
  }
  if (!other) {
    return inserted === 0
      ? null
      : inserted < batches.length
      ? batches[inserted]!
      : enc.encode("INSERTED 1\r\n".repeat(inserted));
  }
  return enc.encode(other + "INSERTED 1\r\n".repeat(inserted));
}

// deno-lint-ignore no-explicit-any
const DenoNS: any = (globalThis as any).Deno;

// Each runtime's own socket API, the one tubeway's adapter for it uses: the
// ceiling is what that I/O path costs with no queue behind it.
if (BunNS?.listen) {
  BunNS.listen({
    hostname: host,
    port,
    socket: {
      // deno-lint-ignore no-explicit-any
      open(s: any) {
        s.data = new State();
        s.setNoDelay?.(true);
      },
      // deno-lint-ignore no-explicit-any
      data(s: any, d: Uint8Array) {
        const out = feed(s.data, d);
        if (out) s.write(out); // replies are tiny; a short write would only happen under a stuck client
      },
    },
  });
} else if (DenoNS?.listen) {
  const listener = DenoNS.listen({ transport: "tcp", hostname: host, port });
  // deno-lint-ignore no-explicit-any
  const serve = async (conn: any) => {
    conn.setNoDelay?.(true);
    const st = new State();
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n: number | null = await conn.read(buf);
        if (n === null) break;
        // feed() keeps no reference to its input past a partial command (it copies that)
        const out = feed(st, buf.subarray(0, n));
        for (let off = 0; out && off < out.length;) off += await conn.write(off ? out.subarray(off) : out);
      }
    } catch { /* reset by the client */ }
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  for await (const conn of listener) serve(conn);
} else {
  createServer((s: Socket) => {
    s.setNoDelay(true);
    const st = new State();
    s.on("data", (d: Uint8Array) => {
      const out = feed(st, d);
      if (out) s.write(out);
    });
    s.on("error", () => {});
  }).listen(port, host);
}
