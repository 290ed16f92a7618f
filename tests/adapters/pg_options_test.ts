// adapters/pg_options.ts: the parts of a libpq connection string the npm driver does
// not read (sslmode's verifying modes, certificate files, the password file), taken
// out of the URL so the driver does not send them to the server as settings.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { driverOptions, passwordFrom, passwordFromFile, urlHasPassword } from "../../adapters/pg_options.ts";

describe("driverOptions", () => {
  it("takes libpq's own parameters out of the URL and keeps the others, several hosts untouched", () => {
    const d = driverOptions(
      "postgres://u@h1:5432,h2:5433/db?sslmode=require&application_name=w&passfile=/p&target_session_attrs=read-write",
      {},
    );
    assert.equal(d.url, "postgres://u@h1:5432,h2:5433/db?application_name=w&target_session_attrs=read-write");
    assert.equal(d.ssl, "require");
    assert.equal(d.passfile, "/p");
    assert.equal(driverOptions("postgres://u@h/db?sslmode=disable", {}).url, "postgres://u@h/db");
  });

  it("sslmode: disable is no TLS, the URL wins over PGSSLMODE, none leaves the driver's default", () => {
    assert.equal(driverOptions("postgres://h/db?sslmode=disable", { PGSSLMODE: "require" }).ssl, false);
    assert.equal(driverOptions("postgres://h/db", { PGSSLMODE: "prefer" }).ssl, "prefer");
    assert.equal(driverOptions("postgres://h/db", {}).ssl, undefined);
    assert.equal(driverOptions(undefined, { PGSSLMODE: "require" }).ssl, "require");
    assert.throws(() => driverOptions("postgres://h/db?sslmode=on", {}), /invalid sslmode "on"/);
  });

  it("verify-ca checks the chain only, verify-full the host too, require with a root certificate acts as verify-ca", () => {
    const dir = mkdtempSync(join(tmpdir(), "tubeway-pgopt-"));
    try {
      const ca = join(dir, "ca.crt");
      writeFileSync(ca, "CA PEM");
      const ssl = (q: string) => driverOptions(`postgres://h/db?${q}`, {}).ssl;
      const vca = ssl(`sslmode=verify-ca&sslrootcert=${ca}`);
      assert.ok(typeof vca === "object" && vca);
      assert.equal(vca.rejectUnauthorized, true);
      assert.equal(vca.ca, "CA PEM");
      assert.equal(vca.checkServerIdentity?.(), undefined);
      const vfull = ssl(`sslmode=verify-full&sslrootcert=${ca}`);
      assert.ok(typeof vfull === "object" && vfull);
      assert.equal(vfull.checkServerIdentity, undefined);
      const req = ssl(`sslmode=require&sslrootcert=${ca}`);
      assert.ok(typeof req === "object" && req && req.rejectUnauthorized);
      assert.throws(() => ssl("sslmode=verify-ca&sslrootcert=/nonexistent/ca.crt"), /cannot read sslrootcert/);
      writeFileSync(join(dir, "c.crt"), "CERT");
      writeFileSync(join(dir, "c.key"), "KEY");
      const client = driverOptions("postgres://h/db?sslmode=require", {
        PGSSLCERT: join(dir, "c.crt"),
        PGSSLKEY: join(dir, "c.key"),
      }).ssl;
      assert.deepEqual(client, { rejectUnauthorized: false, cert: "CERT", key: "KEY" });
      assert.throws(() => ssl(`sslcert=${join(dir, "c.crt")}`), /sslcert and sslkey go together/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the password file: passfile=, else PGPASSFILE, else ~/.pgpass", () => {
    assert.equal(driverOptions("postgres://h/db", { PGPASSFILE: "/x" }).passfile, "/x");
    assert.equal(driverOptions("postgres://h/db?passfile=/y", { PGPASSFILE: "/x" }).passfile, "/y");
    assert.equal(driverOptions("postgres://h/db", { HOME: "/home/q" }).passfile, "/home/q/.pgpass");
  });

  it("urlHasPassword", () => {
    assert.equal(urlHasPassword("postgres://u:p@h/db"), true);
    assert.equal(urlHasPassword("postgres://u@h/db"), false);
    assert.equal(urlHasPassword("postgres://h:5432/db"), false);
    assert.equal(urlHasPassword("postgres://h1:1,h2:2/db"), false);
  });
});

describe("the password file", () => {
  const text = [
    "# comment",
    "db.example:5432:jobs:tubeway:first",
    "db.example:5432:jobs:tubeway:second (never reached)",
    "*:*:other:*:any\\:colon\\\\slash",
    "localhost:5432:*:*:socket",
    "short:line",
  ].join("\n");

  it("first matching line wins; * matches anything; \\: and \\\\ are escapes; localhost matches a socket", () => {
    const at = (host: string, port: number, database: string, user = "tubeway") =>
      passwordFrom(text, { host, port, database, user });
    assert.equal(at("db.example", 5432, "jobs"), "first");
    assert.equal(at("db.example", 5433, "jobs"), undefined);
    assert.equal(at("anything", 1, "other"), "any:colon\\slash");
    assert.equal(at("/var/run/postgresql", 5432, "x"), "socket");
  });

  it("a file others can read is ignored with a warning; a missing one is no password", () => {
    const dir = mkdtempSync(join(tmpdir(), "tubeway-pgpass-"));
    try {
      const f = join(dir, "pgpass");
      writeFileSync(f, text);
      const warned: string[] = [];
      const look = () =>
        passwordFromFile(
          f,
          [{ host: "nope", port: 1 }, { host: "db.example", port: 5432 }],
          "jobs",
          "tubeway",
          (l) => warned.push(l),
        );
      chmodSync(f, 0o640);
      assert.equal(look(), undefined);
      assert.match(warned[0] ?? "", /group or world access/);
      chmodSync(f, 0o600);
      assert.equal(look(), "first", "the second host of the list matched");
      assert.equal(passwordFromFile(join(dir, "none"), [{ host: "h", port: 1 }], "d", "u", () => {}), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
