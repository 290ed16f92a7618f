// Stopping the server started through npm: SIGTERM or SIGINT to the npm process must
// reach the server (npm -> deno task -> deno run, or npm -> bun), so that the port is
// free and no process is left behind. `deno task` forwards signals to its child; a
// plain `sh -c` between npm and it did not, and the server kept the port.
// --ignore-scripts skips only prestart (its `npm install`), not the start script.
// Neither prints a --pg password: npm masks one in a URL on its own `> ...` line, and
// `deno task` would echo the whole command line on its `Task serve ...` line (the start
// script runs it with --quiet).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { which } from "../../scripts/machine.ts";
import { freePort } from "../harness/targets.ts";
import { accepts } from "../harness/wire.ts";

const NPM = which("npm");

/** Pids of every live descendant of `pid` (from /proc). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command name (field 2) is in parentheses and may hold spaces: split after it.
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z") parent.set(Number(name), Number(fields[1]));
    } catch { /* gone meanwhile */ }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent) {
      if (pp === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Under deno test: `npm start` (Deno); under bun test: `npm run start:bun`.
const script = RUNTIME === "bun" ? ["run", "start:bun"] : ["start"];

describe(
  `npm ${script.join(" ")} (${RUNTIME})`,
  { skip: skipUnless(NPM !== undefined, "npm is not installed") },
  () => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      it(`${signal} to npm stops the server: port free, no process left`, { timeout: 120_000 }, async () => {
        const port = await freePort();
        const npm = spawn(NPM!, [...script, "--ignore-scripts", "--", "-l", "127.0.0.1", "-p", String(port)], {
          cwd: ROOT,
          stdio: ["ignore", "pipe", "pipe"],
        });
        let log = "";
        npm.stdout!.on("data", (d: Buffer) => (log += d));
        npm.stderr!.on("data", (d: Buffer) => (log += d));
        let tree: number[] = [];
        try {
          await until("the server accepts", () => accepts(port), 60_000);
          tree = descendants(npm.pid!);
          assert.ok(tree.length > 0, "npm runs the server as its child");
          process.kill(npm.pid!, signal);
          await until("the port is free", async () => !(await accepts(port)), 15_000);
          await until("no process is left", () => !alive(npm.pid!) && tree.every((p) => !alive(p)), 15_000);
        } catch (e) {
          throw new Error(`${(e as Error).message}\nnpm output:\n${log}`);
        } finally {
          // Never leave a server behind, even when the test failed.
          for (const p of [npm.pid!, ...tree]) if (alive(p)) process.kill(p, "SIGKILL");
        }
      });
    }

    it("prints no password, given on the command line or in TUBEWAY_PG_URL", { timeout: 120_000 }, async () => {
      const port = await freePort(); // nothing listens there: the server exits 69
      const url = `postgres://tw:secret@127.0.0.1:${port}/x`;
      for (const [args, env] of [[["--pg", url], {}], [[], { TUBEWAY_PG_URL: url }]] as const) {
        const r = spawnSync(NPM!, [...script, "--ignore-scripts", "--", "-l", "127.0.0.1", "-p", "0", ...args], {
          cwd: ROOT,
          encoding: "utf8",
          timeout: 60_000,
          env: { ...process.env, ...env },
        });
        const out = `${r.stdout}${r.stderr}`;
        assert.equal(r.status, 69, out);
        assert.match(out, new RegExp(`cannot use PostgreSQL at 127\\.0\\.0\\.1:${port}/x`));
        assert.doesNotMatch(out, /secret/, `${args.join(" ")} ${JSON.stringify(env)}: the password is printed`);
      }
    });
  },
);
