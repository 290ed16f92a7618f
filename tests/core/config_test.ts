// beanstalkd's command line, parsed by the pure parseConfig().
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Config, parseConfig } from "../../core/config.ts";

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

  it("answers -h and -v", () => {
    assert.equal(parseConfig(["-h"]).kind, "help");
    assert.equal(parseConfig(["-v"]).kind, "version");
  });
});
