// Checking the --tls-cert/--tls-key/--tls-ca files before listening: each problem is
// named with its flag, file and cause, the same on Deno and Bun.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadTls } from "../../front/tls_files.ts";
import { RUNTIME, skipUnless } from "../harness/paths.ts";
import { type Certs, makeCerts, OPENSSL } from "../harness/tls.ts";

describe(`loadTls (${RUNTIME})`, { skip: skipUnless(!!OPENSSL, "openssl is not installed") }, () => {
  let c: Certs;
  before(() => (c = makeCerts()));
  after(() => rmSync(c.dir, { recursive: true, force: true }));
  const cfg = (over: Partial<{ certFile: string; keyFile: string; caFile: string }> = {}) => ({
    certFile: c.serverCert,
    keyFile: c.serverKey,
    caFile: undefined as string | undefined,
    listen: undefined,
    ...over,
  });
  const error = (over: Parameters<typeof cfg>[0]) => {
    const r = loadTls(cfg(over));
    assert.equal(r.ok, false, JSON.stringify(r));
    return (r as { error: string }).error;
  };

  it("returns the PEM text of good files, with no warnings", () => {
    const r = loadTls(cfg({ caFile: c.ca }));
    assert.ok(r.ok);
    assert.equal(r.material.cert, readFileSync(c.serverCert, "utf8"));
    assert.equal(r.material.key, readFileSync(c.serverKey, "utf8"));
    assert.equal(r.material.ca, readFileSync(c.ca, "utf8"));
    assert.deepEqual(r.warnings, []);
    assert.equal((loadTls(cfg()) as { material: { ca?: string } }).material.ca, undefined);
  });

  it("names the flag, the file and the cause of each problem", () => {
    const missing = join(c.dir, "nope.pem");
    assert.equal(error({ certFile: missing }), `--tls-cert ${missing}: cannot read it: no such file`);
    assert.equal(error({ keyFile: missing }), `--tls-key ${missing}: cannot read it: no such file`);
    assert.equal(error({ caFile: missing }), `--tls-ca ${missing}: cannot read it: no such file`);
    const dir = join(c.dir, "adir");
    mkdirSync(dir);
    assert.match(error({ certFile: dir }), /^--tls-cert .*adir: cannot read it: /);

    const junk = join(c.dir, "junk.pem");
    writeFileSync(junk, "hello\n");
    assert.match(error({ certFile: junk }), /^--tls-cert .*junk\.pem: no PEM certificate in it/);
    assert.match(error({ caFile: junk }), /^--tls-ca .*junk\.pem: no PEM certificate in it/);
    assert.match(error({ keyFile: junk }), /^--tls-key .*junk\.pem: not a usable PEM private key: /);
    assert.match(error({ keyFile: c.serverCert }), /^--tls-key .*server\.crt: not a usable PEM private key: /);

    const broken = join(c.dir, "broken.pem");
    writeFileSync(broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert.match(error({ certFile: broken }), /^--tls-cert .*broken\.pem: certificate 1 is not valid: /);

    assert.equal(
      error({ keyFile: c.clientKey }),
      `--tls-key ${c.clientKey} is not the key of the certificate in --tls-cert ${c.serverCert} (CN=localhost)`,
    );
  });

  it("warns about a certificate that has expired or is not valid yet", () => {
    const later = loadTls(cfg({ caFile: c.ca }), new Date(Date.now() + 5 * 86_400_000));
    assert.ok(later.ok);
    assert.equal(later.warnings.length, 2, later.warnings.join("\n"));
    assert.match(later.warnings[0]!, /^--tls-cert .*server\.crt: CN=localhost expired on /);
    assert.match(later.warnings[1]!, /^--tls-ca .*ca\.crt: CN=tubeway test CA expired on /);
    const earlier = loadTls(cfg(), new Date(Date.now() - 86_400_000));
    assert.ok(earlier.ok);
    assert.match(earlier.warnings[0]!, /CN=localhost is not valid before /);
  });
});
