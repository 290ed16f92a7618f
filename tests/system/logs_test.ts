// The server's log lines through the real executable, in both formats: every line has
// a timestamp and a level, -V prints one line saying where it listens, on which
// runtime, with which binlog and log format; errors name their cause.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const VERSION = RUNTIME === "bun" ? (globalThis as { Bun?: { version: string } }).Bun!.version : Deno.version.deno;
const STAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) \S/;

describe(`log lines (${RUNTIME})`, () => {
  const dir = mkdtempSync(join(tmpdir(), "tubeway-logs-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("text: -V says where it listens, on which runtime, with which binlog; every line is stamped", async () => {
    const s = await startProcess(SERVER, ["-V", "-b", dir, "-f", "0"]);
    const w = await dial(s.addr);
    assert.equal(await w.put("x"), "INSERTED 1\r\n");
    w.close();
    await w.closed();
    await s.stop();
    const lines = s.output().trimEnd().split("\n");
    assert.ok(lines.every((l) => STAMP.test(l)), s.output());
    const listening = lines.filter((l) => l.includes(" listening "));
    assert.equal(listening.length, 1, s.output());
    assert.match(
      listening[0]!,
      new RegExp(
        `INFO  listening plain=127\\.0\\.0\\.1:${s.addr.port} tls=off runtime=${RUNTIME}-${
          VERSION.replaceAll(".", "\\.")
        } ` +
          `binlog=${dir} fsync=always log-format=text pid=${s.child!.pid}$`,
      ),
    );
    assert.ok(lines.some((l) => l.endsWith(" INFO  SIGTERM: shutting down")), s.output());
  });

  it("json: every line is one JSON object with time, level and msg; the listening line has the facts", async () => {
    const s = await startProcess(SERVER, ["-V", "--log-format", "json"]);
    const startedMs = Date.now();
    const w = await dial(s.addr);
    assert.equal(await w.cmd("use jobs"), "USING jobs\r\n");
    w.close();
    await w.closed();
    await s.stop();
    const records = s.output().trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const r of records) {
      assert.equal(typeof r.msg, "string");
      assert.ok(["debug", "info", "warn", "error"].includes(r.level as string), JSON.stringify(r));
      assert.ok(Math.abs(Date.parse(r.time as string) - startedMs) < 120_000, JSON.stringify(r));
    }
    const { time: _t, ...listening } = records.find((r) => r.msg === "listening")!;
    assert.deepEqual(listening, {
      level: "info",
      msg: "listening",
      plain: `127.0.0.1:${s.addr.port}`,
      tls: "off",
      runtime: `${RUNTIME}-${VERSION}`,
      binlog: "off",
      "log-format": "json",
      pid: s.child!.pid,
    });
    assert.ok(records.some((r) => r.msg === "accept 2"), "the readiness probe was 1, our client 2");
  });

  it("a startup error is an ERROR line naming the cause and the exit code", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    const r = spawnSync(
      SERVER[0]!,
      [...SERVER.slice(1), "-l", "127.0.0.1", "-p", String(port), "--log-format", "json"],
      {
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    blocker.close();
    assert.equal(r.status, 111, r.stderr);
    const rec = JSON.parse(r.stderr.trim());
    assert.equal(rec.level, "error");
    assert.equal(rec.exit, 111);
    assert.match(rec.msg, new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port}: .*(in use|EADDRINUSE)`, "i"));
  });

  it("usage errors keep beanstalkd's exact wording, without a timestamp", () => {
    const child = spawnSync(SERVER[0]!, [...SERVER.slice(1), "-Q", "--log-format", "json"], { encoding: "utf8" });
    assert.equal(child.status, 5);
    assert.ok(child.stderr.startsWith("tubeway: unknown flag: -Q\nUse: tubeway [OPTIONS]\n"), child.stderr);
  });
});
