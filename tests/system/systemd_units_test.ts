// The shipped systemd units (packaging/systemd/): systemd-analyze accepts them, and the
// service's command line, with its /etc/default file, runs the compiled binary behind
// the socket unit's socket (systemd-socket-activate stands in for systemd, on a free
// 127.0.0.1 port and a temporary state directory), keeping jobs across a restart.
// Runs under bun test, which builds the binary anyway.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { which } from "../../scripts/machine.ts";
import { BEANSTALKD, buildBinary, freePort, startProcess, stopChild } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";
import { ACTIVATE, activate, dialActivated, NO_ACTIVATE } from "../harness/activation.ts";

const UNITS = join(ROOT, "packaging", "systemd");
const ANALYZE = which("systemd-analyze");

/** The value of `key=` in a unit file (the last one, as systemd takes it). */
function setting(text: string, key: string): string {
  const values = text.split("\n").filter((l) => l.startsWith(`${key}=`)).map((l) => l.slice(key.length + 1));
  assert.ok(values.length > 0, `no ${key}=`);
  return values.at(-1)!;
}

/** VAR=value lines of an EnvironmentFile (quotes removed). */
function environment(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!.replace(/^"(.*)"$/, "$1");
  }
  return env;
}

/** systemd's ExecStart expansion: ${VAR} is one word, $VAR splits at whitespace. */
function expand(command: string, env: Record<string, string>): string[] {
  return command.split(/\s+/).flatMap((word) => {
    const braced = /^\$\{(\w+)\}$/.exec(word);
    if (braced) return [env[braced[1]!] ?? ""];
    const bare = /^\$(\w+)$/.exec(word);
    if (bare) return (env[bare[1]!] ?? "").split(/\s+/).filter((w) => w !== "");
    return [word];
  });
}

if (RUNTIME === "bun") {
  describe("packaging/systemd units", () => {
    const dir = mkdtempSync(join(tmpdir(), "tubeway-units-"));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const service = readFileSync(join(UNITS, "tubeway.service"), "utf8");
    const socket = readFileSync(join(UNITS, "tubeway.socket"), "utf8");
    const defaults = environment(readFileSync(join(UNITS, "tubeway.default"), "utf8"));

    it("systemd-analyze verify accepts tubeway.service, tubeway.socket and the beanstalkd-data drop-in", {
      skip: skipUnless(ANALYZE !== undefined, "systemd-analyze is not installed (apt-get install systemd)"),
      timeout: 120_000,
    }, async () => {
      const bin = await buildBinary();
      // verify checks that ExecStart's program exists: point it at the built binary.
      writeFileSync(join(dir, "tubeway.service"), service.replaceAll("/usr/local/bin/tubeway", bin));
      copyFileSync(join(UNITS, "tubeway.socket"), join(dir, "tubeway.socket"));
      mkdirSync(join(dir, "tubeway.service.d"));
      copyFileSync(join(UNITS, "beanstalkd-data.conf"), join(dir, "tubeway.service.d", "beanstalkd-data.conf"));
      // The unit directory on the search path, so that verify reads the drop-in too; an
      // unknown or misspelt setting is only a warning to it, so stderr must be empty.
      const r = spawnSync(ANALYZE!, ["verify", join(dir, "tubeway.socket"), join(dir, "tubeway.service")], {
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` },
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.equal(r.stderr, "", r.stderr);
    });

    it('with TUBEWAY_EXTRA="-b /var/lib/beanstalkd" the service takes over beanstalkd 1.12\'s jobs', {
      skip: skipUnless(ACTIVATE !== undefined && BEANSTALKD !== undefined, `${NO_ACTIVATE}, and beanstalkd`),
      timeout: 120_000,
    }, async () => {
      const data = join(dir, "beanstalkd-data");
      mkdirSync(data);
      const b = await startProcess([BEANSTALKD!], ["-b", data]);
      const w = await dial(b.addr);
      assert.equal(await w.cmd("use mail"), "USING mail\r\n");
      assert.equal(await w.put("from beanstalkd"), "INSERTED 1\r\n");
      w.close();
      await b.stop();
      const argv = expand(setting(service, "ExecStart"), { ...defaults, TUBEWAY_EXTRA: `-b ${data}` });
      const port = await freePort();
      const s = activate(`127.0.0.1:${port}`, [await buildBinary(), ...argv.slice(1)]);
      try {
        const t = await dialActivated({ host: "127.0.0.1", port });
        assert.equal(await t.cmd("peek 1"), "FOUND 1 15\r\nfrom beanstalkd\r\n");
        assert.match(await t.cmd("stats-job 1"), /\ntube: mail\n/);
        t.close();
      } finally {
        await stopChild(s.child);
      }
    });

    it("the service's command line serves the socket unit's socket and keeps jobs across a restart", {
      skip: skipUnless(ACTIVATE !== undefined, NO_ACTIVATE),
      timeout: 120_000,
    }, async () => {
      assert.equal(setting(socket, "ListenStream"), "127.0.0.1:11300", "beanstalkd.socket's address");
      const state = join(dir, "state");
      const argv = expand(setting(service, "ExecStart"), defaults)
        .map((w) => w === "/usr/local/bin/tubeway" ? "BIN" : w === "/var/lib/tubeway" ? state : w);
      assert.deepEqual(argv, ["BIN", "-l", "127.0.0.1", "-p", "11300", "-b", state]);
      mkdirSync(state);
      const bin = await buildBinary();
      const port = await freePort();
      const run = () => activate(`127.0.0.1:${port}`, [bin, ...argv.slice(1)]);
      const connect = () => dialActivated({ host: "127.0.0.1", port });
      const first = run();
      try {
        const w = await connect();
        assert.equal(await w.put("kept"), "INSERTED 1\r\n");
        w.close();
        assert.match(first.output(), /inherited listen fd; ignoring option: -p 11300/);
      } finally {
        await stopChild(first.child);
      }
      const second = run();
      try {
        const w = await connect();
        assert.equal(await w.cmd("peek-ready"), "FOUND 1 4\r\nkept\r\n");
        w.close();
      } finally {
        await stopChild(second.child);
      }
    });
  });
}
