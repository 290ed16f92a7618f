// beanstalkd's command line, parsed by the pure parseConfig().
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Config, parseConfig } from "../../front/config.ts";

function config(...args: string[]): Config {
  const r = parseConfig(args);
  assert.equal(r.kind, "run", JSON.stringify(r));
  return (r as { config: Config }).config;
}

function error(...args: string[]): string {
  const r = parseConfig(args);
  assert.equal(r.kind, "error");
  assert.equal((r as { exitCode: number }).exitCode, 5);
  return (r as { message: string }).message;
}

describe("parseConfig", () => {
  it("has beanstalkd's defaults", () => {
    const c = config();
    assert.deepEqual(c.listen, { host: "0.0.0.0", port: 11300 });
    assert.equal(c.maxJobSize, 65535);
    assert.equal(c.binlogSize, 10485760);
    assert.equal(c.fsyncMs, 50);
    assert.equal(c.verbose, 0);
    assert.equal(c.binlogDir, undefined);
  });

  it("reads -l, -p, unix: paths and attached values", () => {
    assert.deepEqual(config("-l", "127.0.0.1", "-p11400").listen, { host: "127.0.0.1", port: 11400 });
    assert.deepEqual(config("-l", "unix:/tmp/x.sock", "-p", "5").listen, { path: "/tmp/x.sock" });
    assert.equal(config("-z10").maxJobSize, 10);
  });

  it("combines flags in order like -VFVukr and applies later flags last", () => {
    const c = config("-VFVukr");
    assert.equal(c.verbose, 2);
    assert.equal(c.fsyncMs, "never");
    assert.equal(c.user, "kr");
    assert.equal(config("-F", "-f", "10").fsyncMs, 10);
    assert.equal(config("-f0", "-F").fsyncMs, "never");
    assert.equal(config("-VVV").verbose, 3);
  });

  it("clamps -z above 1 GiB with beanstalkd's warning", () => {
    const c = config("-z", "2000000000");
    assert.equal(c.maxJobSize, 1073741824);
    assert.deepEqual(c.warnings, ["maximum job size was set to 1073741824"]);
  });

  it("warns that -c and -n were removed", () => {
    assert.equal(config("-c", "-n").warnings.length, 2);
  });

  it("refuses what beanstalkd refuses, with its messages and exit code 5", () => {
    assert.equal(error("-z", "12a"), "invalid size: 12a");
    assert.equal(error("-s", "1k"), "invalid size: 1k");
    assert.equal(error("-x"), "unknown flag: -x");
    assert.equal(error("-z"), "flag requires an argument: -z");
    assert.equal(error("foo"), "unknown argument: foo");
    assert.equal(error("-"), "unknown argument: -");
  });

  it("reads --http HOST:PORT and the token from --http-token or TUBEWAY_HTTP_TOKEN (the flag wins)", () => {
    assert.equal(config().http, undefined);
    assert.deepEqual(config("--http", "127.0.0.1:9100").http, { host: "127.0.0.1", port: 9100 });
    assert.deepEqual(config("--http=[::1]:0").http, { host: "::1", port: 0 });
    assert.equal(config("--http-token", "s3cret").httpToken, "s3cret");
    const fromEnv = parseConfig(["--http", "127.0.0.1:1"], { TUBEWAY_HTTP_TOKEN: "e" });
    assert.equal(fromEnv.kind === "run" && fromEnv.config.httpToken, "e");
    const both = parseConfig(["--http-token", "f"], { TUBEWAY_HTTP_TOKEN: "e" });
    assert.equal(both.kind === "run" && both.config.httpToken, "f");
    // the old flags keep beanstalkd's parsing next to the long ones
    const c = config("-VVp11400", "--http", "localhost:80", "-z10");
    assert.deepEqual([c.verbose, c.listen, c.maxJobSize], [2, { host: "0.0.0.0", port: 11400 }, 10]);
  });

  it("refuses a bad --http address or an empty token (exit 5)", () => {
    assert.equal(error("--http", "9100"), "--http wants HOST:PORT (e.g. 127.0.0.1:9100), not 9100");
    assert.match(error("--http", "host:99999"), /--http wants HOST:PORT/);
    assert.match(error("--http", "a:b:1"), /--http wants HOST:PORT/);
    assert.match(error("--http", ":9100"), /--http wants HOST:PORT/);
    assert.equal(error("--http"), "flag requires an argument: --http");
    assert.equal(error("--http-token="), "--http-token must not be empty");
    assert.equal(error("--nope"), "unknown flag: --nope");
  });

  it("reads --pg URL (or TUBEWAY_PG_URL; the flag wins) and --pg-schema", () => {
    assert.equal(config().pg, undefined);
    const url = "postgres://u@db:5432/jobs";
    assert.deepEqual(config("--pg", url).pg, { url, schema: "tubeway", leaseMs: 5000, waitMs: 5000 });
    assert.deepEqual(config("--pg", url, "--pg-schema", "q2").pg, { url, schema: "q2", leaseMs: 5000, waitMs: 5000 });
    const fromEnv = parseConfig([], { TUBEWAY_PG_URL: url });
    assert.deepEqual(fromEnv.kind === "run" && fromEnv.config.pg, {
      url,
      schema: "tubeway",
      leaseMs: 5000,
      waitMs: 5000,
    });
    const both = parseConfig(["--pg", "postgres://flag/x"], { TUBEWAY_PG_URL: url });
    assert.equal(both.kind === "run" && both.config.pg?.url, "postgres://flag/x");
    assert.equal(config("--pg", url, "--pg-lease", "1.5").pg?.leaseMs, 1500);
    assert.equal(config("--pg", url, "--pg-wait", "0.5").pg?.waitMs, 500);
    assert.equal(config("--pg", url, "--pg-wait", "0").pg?.waitMs, 0, "0: INTERNAL_ERROR at once");
    const empty = parseConfig([], { TUBEWAY_PG_URL: "" });
    assert.equal(empty.kind === "run" && empty.config.pg, undefined, "an empty variable is no URL");
  });

  it("refuses -b with --pg, --pg-schema alone, and a schema name that is not a plain SQL name (exit 5)", () => {
    assert.equal(
      error("-b", "/tmp/x", "--pg", "postgres://h/d"),
      "-b and --pg cannot be used together: the jobs live in one place",
    );
    const env = parseConfig(["-b", "/tmp/x"], { TUBEWAY_PG_URL: "postgres://h/d" });
    assert.equal(env.kind === "error" && env.exitCode, 5);
    assert.equal(error("--pg-schema", "q"), "--pg-schema needs --pg URL");
    assert.equal(error("--pg-wait", "3"), "--pg-wait needs --pg URL");
    assert.equal(error("--pg", "postgres://h/d", "--pg-wait", "-1"), "--pg-wait wants seconds from 0 to 3600, not -1");
    assert.match(error("--pg", "postgres://h/d", "--pg-schema", "Bad-Name"), /--pg-schema wants a lower-case SQL name/);
    assert.equal(error("--pg"), "flag requires an argument: --pg");
    assert.equal(error("--pg-lease", "3"), "--pg-lease needs --pg URL");
    assert.match(error("--pg", "postgres://h/d", "--pg-lease", "0"), /--pg-lease wants seconds from 1 to 3600/);
  });

  it("answers -h and -v", () => {
    assert.equal(parseConfig(["-h"]).kind, "help");
    assert.equal(parseConfig(["-v"]).kind, "version");
  });

  it("names a bad flag as 1.12 does (compared with /usr/bin/beanstalkd)", () => {
    // The name starts one character before the offending one: the whole word when it is
    // the first character, so long options and a bare -- are refused by name.
    assert.equal(error("--help"), "unknown flag: --help");
    assert.equal(error("--version"), "unknown flag: --version");
    assert.equal(error("-Vx"), "unknown flag: Vx");
    assert.equal(error("-V--"), "unknown flag: V--");
    assert.equal(error("--"), "unknown flag: --");
    assert.equal(error("--", "-V"), "unknown flag: --");
    assert.equal(error("--z=5"), "unknown flag: --z=5");
    assert.equal(error("-Vz"), "flag requires an argument: -z");
  });

  it("takes the next word as a flag's value whatever it looks like, as 1.12 does", () => {
    assert.equal(error("-z", "-l"), "invalid size: -l");
    assert.equal(error("-z=5"), "invalid size: =5");
    assert.deepEqual(config("-l", "-V").listen, { host: "-V", port: 11300 });
    assert.equal(config("-b", "-dir").binlogDir, "-dir");
    assert.deepEqual(config("-l", "").listen, { host: "", port: 11300 });
    // tubeway's long options read their values the same way.
    assert.equal(config("--tls-cert", "-x", "--tls-key", "k").tls?.certFile, "-x");
    assert.equal(config("--log-format=json").logFormat, "json");
  });

  it("answers -h and -v at once, before a later bad flag; an earlier problem wins", () => {
    assert.equal(parseConfig(["-Vh"]).kind, "help");
    assert.equal(parseConfig(["-hx"]).kind, "help");
    assert.equal(parseConfig(["-V", "-v", "--"]).kind, "version");
    assert.equal(error("foo", "-x"), "unknown argument: foo");
    assert.equal(error("-z", "1k", "-x"), "invalid size: 1k");
  });
});

describe("parseConfig with an inherited socket (systemd socket activation)", () => {
  const pid = 4242;
  const env = (LISTEN_FDS: string, LISTEN_PID = String(pid)) => ({ LISTEN_FDS, LISTEN_PID });

  it("serves fd 3 when LISTEN_FDS is set for this pid", () => {
    const r = parseConfig([], env("1"), pid);
    assert.equal(r.kind, "run");
    assert.deepEqual((r as { config: Config }).config.listen, { fd: 3 });
    assert.deepEqual((r as { config: Config }).config.warnings, []);
  });

  it("ignores -l and -p with 1.12's warnings, and more than one socket with its warning", () => {
    const r = parseConfig(["-l", "127.0.0.1", "-p", "1234", "-l", "unix:/x"], env("2"), pid);
    const c = (r as { config: Config }).config;
    assert.deepEqual(c.listen, { fd: 3 });
    assert.deepEqual(c.warnings, [
      "inherited more than one listen socket; ignoring all but the first",
      "inherited listen fd; ignoring option: -l 127.0.0.1",
      "inherited listen fd; ignoring option: -p 1234",
      "inherited listen fd; ignoring option: -l unix:/x",
    ]);
  });

  it("leaves sockets meant for another pid, or none, alone", () => {
    for (const e of [env("1", "1"), env("0"), env("x"), {}]) {
      const r = parseConfig(["-l", "127.0.0.1", "-p", "5"], e, pid);
      assert.deepEqual((r as { config: Config }).config.listen, { host: "127.0.0.1", port: 5 }, JSON.stringify(e));
    }
  });
});
