// tubeway's own long flags (TLS and log format), parsed beside beanstalkd's short ones.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Config, parseConfig, parseHostPort } from "../../front/config.ts";

function config(...args: string[]): Config {
  const r = parseConfig(args);
  assert.equal(r.kind, "run", JSON.stringify(r));
  return (r as { config: Config }).config;
}

function error(...args: string[]): { message: string; usage: boolean } {
  const r = parseConfig(args);
  assert.equal(r.kind, "error", JSON.stringify(r));
  const e = r as { message: string; exitCode: number; usage: boolean };
  assert.equal(e.exitCode, 5);
  return e;
}

describe("parseConfig: TLS flags", () => {
  it("no TLS unless asked", () => {
    assert.equal(config("-l", "127.0.0.1").tls, undefined);
  });

  it("--tls-cert and --tls-key make the -l/-p port speak TLS", () => {
    const c = config("-p", "11400", "--tls-cert", "c.pem", "--tls-key=k.pem");
    assert.deepEqual(c.tls, { certFile: "c.pem", keyFile: "k.pem", caFile: undefined, listen: undefined });
    assert.deepEqual(c.listen, { host: "0.0.0.0", port: 11400 });
  });

  it("--tls HOST:PORT puts TLS beside the plain port; --tls-ca asks for client certificates", () => {
    const c = config(
      "-l",
      "127.0.0.1",
      "--tls",
      "0.0.0.0:11301",
      "--tls-cert",
      "c",
      "--tls-key",
      "k",
      "--tls-ca",
      "ca",
    );
    assert.deepEqual(c.tls, { certFile: "c", keyFile: "k", caFile: "ca", listen: { host: "0.0.0.0", port: 11301 } });
    assert.deepEqual(c.listen, { host: "127.0.0.1", port: 11300 });
    assert.deepEqual(config("-l", "unix:/tmp/s", "--tls", "[::1]:0", "--tls-cert", "c", "--tls-key", "k").tls?.listen, {
      host: "::1",
      port: 0,
    });
  });

  it("mixes with beanstalkd's combined short flags", () => {
    const c = config("-VVz10", "--tls-cert", "c", "-p1", "--tls-key", "k");
    assert.equal(c.verbose, 2);
    assert.equal(c.maxJobSize, 10);
    assert.equal(c.tls?.keyFile, "k");
  });

  it("refuses incomplete or contradictory TLS flags with a message naming what is missing", () => {
    assert.match(error("--tls-cert", "c").message, /needs both --tls-cert FILE and --tls-key FILE/);
    assert.match(error("--tls-key", "k", "--tls-ca", "ca").message, /--tls-key, --tls-ca needs both/);
    assert.match(error("--tls", "0.0.0.0:1").message, /needs both/);
    assert.match(error("--tls", "11301", "--tls-cert", "c", "--tls-key", "k").message, /--tls wants HOST:PORT/);
    assert.match(error("-l", "unix:/tmp/s", "--tls-cert", "c", "--tls-key", "k").message, /TCP only/);
    assert.equal(error("--tls-cert", "c").usage, false);
  });

  it("a long flag without its value, or an unknown one, gets beanstalkd's wording with the flag named", () => {
    const missing = error("--tls-cert");
    assert.equal(missing.message, "flag requires an argument: --tls-cert");
    assert.equal(missing.usage, true);
    assert.equal(error("--foo").message, "unknown flag: --foo");
    assert.equal(error("-x").message, "unknown flag: -x");
  });
});

describe("parseConfig: --log-format", () => {
  it("defaults to text, takes json, refuses anything else", () => {
    assert.equal(config().logFormat, "text");
    assert.equal(config("--log-format", "json").logFormat, "json");
    assert.match(error("--log-format", "xml").message, /--log-format must be text or json, not xml/);
  });
});

describe("parseHostPort", () => {
  it("reads HOST:PORT and [v6]:PORT, and nothing else", () => {
    assert.deepEqual(parseHostPort("127.0.0.1:80"), { host: "127.0.0.1", port: 80 });
    assert.deepEqual(parseHostPort("localhost:0"), { host: "localhost", port: 0 });
    assert.deepEqual(parseHostPort("[::]:11301"), { host: "::", port: 11301 });
    for (const bad of ["80", ":80", "h:", "h:x", "h:65536", "::1:80", "h:80:1"]) {
      assert.equal(parseHostPort(bad), undefined, bad);
    }
  });
});
