// The executable's command line, sockets, signals and exit codes, through the real
// process of this runtime (deno run server.ts under Deno, bun run server.ts under Bun).
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_SERVER, DENO_SERVER, RUNTIME, skipUnless } from "../harness/paths.ts";
import { readFileSync } from "node:fs";
import { BEANSTALKD, startProcess } from "../harness/targets.ts";
import { dial } from "../harness/wire.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];

function run(...args: string[]) {
  const r = spawnSync(SERVER[0]!, [...SERVER.slice(1), ...args], { encoding: "utf8", timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Start the server on a UNIX socket and resolve once it accepts. */
async function startUnix(path: string, extra: string[] = []) {
  const child = spawn(SERVER[0]!, [...SERVER.slice(1), "-l", `unix:${path}`, ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const w = await dial({ path }, 500);
      return { child, w, log: () => log };
    } catch {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no listener at ${path}: ${log}`);
      await new Promise((r) => setTimeout(r, 30));
    }
  }
}

function exited(child: ReturnType<typeof spawn>): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once("exit", (code) => resolve(code));
  });
}

describe(`the executable (${RUNTIME})`, () => {
  const dir = mkdtempSync(join(tmpdir(), "tubeway-cli-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("-v prints the version and exits 0; -h prints usage on stderr and exits 0", () => {
    const v = run("-v");
    assert.equal(v.code, 0);
    assert.match(v.out, /^tubeway \d+\.\d+\.\d+ \(beanstalkd 1\.12 protocol\)\n$/);
    const h = run("-h");
    assert.equal(h.code, 0);
    assert.match(h.err, /^Use: tubeway \[OPTIONS\]/);
    assert.match(h.err, /-z BYTES/);
  });

  it("usage errors give beanstalkd's messages and exit 5", () => {
    for (
      const [args, msg] of [[["-x"], "unknown flag: -x"], [["-z"], "flag requires an argument: -z"], [
        ["-z", "12a"],
        "invalid size: 12a",
      ], [["foo"], "unknown argument: foo"]] as const
    ) {
      const r = run(...args);
      assert.equal(r.code, 5, `${args.join(" ")}: ${r.err}`);
      assert.ok(r.err.includes(msg), r.err);
    }
  });

  it("-s shows in stats as binlog-max-size even without -b, as in 1.12", async () => {
    const s = await startProcess(SERVER, ["-s", "4096"]);
    try {
      const w = await dial(s.addr);
      assert.match(await w.cmd("stats"), /\nbinlog-max-size: 4096\n/);
      w.close();
    } finally {
      await s.stop();
    }
  });

  it("bad flags get 1.12's message and exit code (each compared with /usr/bin/beanstalkd)", {
    skip: skipUnless(BEANSTALKD !== undefined, "beanstalkd is not installed"),
  }, () => {
    const cases = [["--help"], ["--version"], ["-Vx"], ["-V--"], ["--"], ["--", "-V"], ["-z", "-l"], ["-Vz"]];
    // `bun run server.ts -- ...` drops that first "--" before the script sees it (the
    // compiled binary and Deno pass it on).
    for (const args of cases.filter((a) => RUNTIME !== "bun" || a[0] !== "--")) {
      const ours = run(...args);
      const theirs = spawnSync(BEANSTALKD!, args, { encoding: "utf8", timeout: 5_000 });
      assert.equal(ours.code, theirs.status, `${args.join(" ")}: ${ours.err}`);
      assert.equal(ours.code, 5);
      const first = (out: string) => out.split("\n")[0]!.replace(/^[^:]*: /, "");
      assert.equal(first(ours.err), first(theirs.stderr), args.join(" "));
    }
  });

  it("a port in use exits 111 with the address and the reason", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    const r = run("-l", "127.0.0.1", "-p", String(port));
    blocker.close();
    assert.equal(r.code, 111, r.err);
    assert.match(
      r.err,
      new RegExp(`ERROR cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use exit=111\n$`),
    );
  });

  it("a socket path in a missing directory, or an unknown host, exits 111 with the reason", () => {
    const path = join(dir, "no-such-dir", "t.sock");
    const r = run("-l", `unix:${path}`);
    assert.equal(r.code, 111, r.err);
    assert.ok(r.err.endsWith(`ERROR cannot listen on ${path}: No such file or directory exit=111\n`), r.err);
    const h = run("-l", "no-such-host.invalid", "-p", "0");
    assert.equal(h.code, 111, h.err);
    assert.match(h.err, /ERROR cannot listen on no-such-host\.invalid:0: host name not found exit=111\n$/);
  });

  it("listens on a UNIX socket, replaces a stale one, and refuses to clobber another file", async () => {
    const path = join(dir, "t.sock");
    const a = await startUnix(path);
    assert.equal(await a.w.put("over unix"), "INSERTED 1\r\n");
    a.w.close();
    a.child.kill("SIGKILL");
    await exited(a.child);
    assert.ok(existsSync(path), "a killed server leaves its socket file behind");
    const b = await startUnix(path);
    assert.match(b.log(), /removing existing local socket to replace it/);
    assert.equal(await b.w.cmd("list-tube-used"), "USING default\r\n");
    b.w.close();
    b.child.kill("SIGTERM");
    await exited(b.child);

    const plain = join(dir, "not-a-socket");
    writeFileSync(plain, "keep me");
    const r = run("-l", `unix:${plain}`);
    assert.equal(r.code, 111);
    // 1.12's words, after the path (as every other address that cannot be listened on)
    assert.ok(
      r.err.endsWith(`ERROR cannot listen on ${plain}: another file already exists in the given path exit=111\n`),
      r.err,
    );
    assert.equal(readFileSync(plain, "utf8"), "keep me");
  });

  const root = process.getuid?.() === 0;
  it("-u USER switches to the user's uid and primary gid after binding", {
    skip: skipUnless(root, "switching user needs root"),
  }, async () => {
    const s = await startProcess(SERVER, ["-u", "nobody"]);
    try {
      const nobody = readFileSync("/etc/passwd", "utf8").split("\n").map((l) => l.split(":")).find((f) =>
        f[0] === "nobody"
      )!;
      // The kernel accepts connections as soon as the socket listens, before the switch;
      // the server serves none before it (as 1.12: bind, setuid, then serve). So once a
      // command is answered the switch has happened: no waiting, no race.
      const w = await dial(s.addr);
      assert.equal(await w.put("as nobody"), "INSERTED 1\r\n");
      const status = readFileSync(`/proc/${s.child!.pid}/status`, "utf8");
      assert.match(status, new RegExp(`^Uid:\\s+${nobody[2]}\\s`, "m"));
      assert.match(status, new RegExp(`^Gid:\\s+${nobody[3]}\\s`, "m"));
      w.close();
    } finally {
      await s.stop();
    }
  });

  it("-u fails as beanstalkd 1.12 does: 33 for an unknown user, 34 when setgid is refused (same words)", {
    skip: skipUnless(root && BEANSTALKD !== undefined, "needs root and beanstalkd"),
  }, () => {
    // an unprivileged user to be refused a switch to root; Deno wants a cache it may write
    const cache = mkdtempSync(join(tmpdir(), "tubeway-cli-nobody-"));
    const nobody = readFileSync("/etc/passwd", "utf8").split("\n").map((l) => l.split(":")).find((f) =>
      f[0] === "nobody"
    )!;
    chownSync(cache, Number(nobody[2]), Number(nobody[3]));
    try {
      const asNobody = ["runuser", "-u", "nobody", "--", "env", `HOME=${cache}`, `DENO_DIR=${cache}`];
      const cases: [what: string, as: string[], user: string, code: number][] = [
        ["an unknown user", [], "no-such-user-here", 33],
        ["setgid refused (not root)", asNobody, "root", 34],
      ];
      for (const [what, as, user, code] of cases) {
        const flags = ["-l", "127.0.0.1", "-p", "0", "-u", user];
        const argv = [...as, ...SERVER, ...flags];
        const ours = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 30_000 });
        const bArgv = [...as, BEANSTALKD!, ...flags];
        const theirs = spawnSync(bArgv[0]!, bArgv.slice(1), { encoding: "utf8", timeout: 5_000 });
        assert.equal(theirs.status, code, `beanstalkd, ${what}: ${theirs.stderr}`);
        assert.equal(ours.status, code, `${what}: ${ours.stderr}`);
        // "beanstalkd: main.c:22 in su: getpwnam("x"): no such user" -> its words after "in su: "
        const words = /in su: (.*)$/m.exec(theirs.stderr)?.[1];
        assert.ok(words, theirs.stderr);
        assert.ok(ours.stderr.includes(` ERROR ${words} exit=${code}\n`), `${what}: ${ours.stderr}`);
      }
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it("SIGTERM closes connections and exits 0; SIGUSR1 drains", async () => {
    const s = await startProcess(SERVER, ["-V"]);
    const w = await dial(s.addr);
    assert.equal(await w.put("x"), "INSERTED 1\r\n");
    process.kill(s.child!.pid!, "SIGUSR1"); // not child.kill: under deno test that makes the exit status read as the signal
    const deadline = Date.now() + 5000;
    let reply = "";
    while (Date.now() < deadline && (reply = await w.put("y")) !== "DRAINING\r\n") {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(reply, "DRAINING\r\n");
    assert.equal(await w.cmd("delete 1"), "DELETED\r\n", "other commands still work while draining");
    const at = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z INFO  ";
    assert.match(
      s.output(),
      new RegExp(`^${at}listening plain=127\\.0\\.0\\.1:\\d+ .*pid=${s.child!.pid}$`, "m"),
      "-V: where",
    );
    assert.match(s.output(), new RegExp(`^${at}accept \\d+$`, "m"), "-V logs connections");
    assert.doesNotMatch(s.output(), /server error/, "a DRAINING reply is not a server error");
    process.kill(s.child!.pid!, "SIGTERM");
    assert.equal(await exited(s.child!), 0);
    await w.closed();
  });
});
