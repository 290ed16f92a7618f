// Servers with the HTTP side port on: the same process targets as targets.ts (deno run,
// bun run, the compiled binary), started with --http on a second free port.

import { existsSync } from "node:fs";
import { BUN, BUN_SERVER, DENO, DENO_SERVER } from "./paths.ts";
import { which } from "../../scripts/machine.ts";
import { buildBinary, freePort, type Running, startProcess } from "./targets.ts";

export interface HttpKind {
  name: string;
  unavailable(): string | undefined;
  argv(): Promise<string[]>;
}

const bunPresent = () => (existsSync(BUN) || which("bun") ? undefined : "bun is not installed (npm install)");

export const HTTP_KINDS: Record<"deno" | "bun" | "binary", HttpKind> = {
  deno: {
    name: "deno run server.ts",
    unavailable: () => (existsSync(DENO) || which("deno") ? undefined : "deno is not installed (npm install)"),
    argv: () => Promise.resolve([...DENO_SERVER]),
  },
  bun: {
    name: "bun run server.ts",
    unavailable: bunPresent,
    argv: () => Promise.resolve([...BUN_SERVER]),
  },
  binary: { name: "compiled binary", unavailable: bunPresent, argv: async () => [await buildBinary()] },
};

export interface HttpRunning extends Running {
  /** Base URL of the side port, e.g. http://127.0.0.1:40123 */
  http: string;
  httpPort: number;
}

/** Start a server of `kind` with `--http 127.0.0.1:<free port>` plus `flags`; resolves once both ports answer. */
export async function startWithHttp(
  kind: HttpKind,
  flags: string[] = [],
  env: Record<string, string> = {},
): Promise<HttpRunning> {
  const httpPort = await freePort();
  const running = await startProcess(await kind.argv(), ["--http", `127.0.0.1:${httpPort}`, ...flags], env);
  const http = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await fetch(`${http}/healthz`);
      await r.body?.cancel();
      if (r.ok) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline) {
      await running.stop();
      throw new Error(`side port did not answer:\n${running.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { ...running, http, httpPort };
}

/** GET a path and return status and text (the body is always consumed). */
export async function getText(url: string): Promise<{ status: number; text: string; type: string | null }> {
  const r = await fetch(url);
  return { status: r.status, text: await r.text(), type: r.headers.get("content-type") };
}
