// A database that asks for TLS and a password, as production ones do: a throwaway
// cluster whose pg_hba.conf takes only TLS connections with scram-sha-256. The node
// connects the ways psql users do (sslmode in the URL or PGSSLMODE, sslrootcert for
// verify-full, the password in the URL, PGPASSWORD or a password file) and refuses
// the rest at start with exit 69 and the reason.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { startProcess } from "../harness/targets.ts";
import { type Postgres, skipWithoutPostgres, startPostgres } from "../harness/postgres.ts";
import { type Certs, makeCerts, OPENSSL } from "../harness/tls.ts";
import { dial } from "../harness/wire.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];
const PASSWORD = "s3cret:with\\colon";
const skip = skipWithoutPostgres || (OPENSSL ? false : "openssl is not installed");

/** Run the server expecting it to exit at start; its code and output. */
function refused(url: string, env: Record<string, string> = {}) {
  const r = spawnSync(SERVER[0]!, [...SERVER.slice(1), "-l", "127.0.0.1", "-p", "0", "--pg", url], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, PGPASSWORD: "", PGPASSFILE: "/nonexistent", ...env },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("tubeway --pg against a database that takes only TLS and a password", { skip }, () => {
  let pg: Postgres;
  let certs: Certs;
  let dir: string;
  let port: number;

  before(async () => {
    pg = await startPostgres();
    port = pg.port;
    certs = makeCerts();
    dir = mkdtempSync(join(tmpdir(), "tubeway-pgauth-"));
    const su = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      const data = String((await su`show data_directory`)[0]?.data_directory);
      // the server's key must belong to the user PostgreSQL runs as, mode 0600
      const owner = statSync(data);
      for (const f of ["server.crt", "server.key"]) {
        const to = join(data, f);
        copyFileSync(join(certs.dir, f), to);
        chownSync(to, owner.uid, owner.gid);
        chmodSync(to, 0o600);
      }
      writeFileSync(
        join(data, "pg_hba.conf"),
        [
          "local all all trust",
          "hostssl all all 127.0.0.1/32 scram-sha-256",
          "host all all 127.0.0.1/32 reject",
          "",
        ].join("\n"),
      );
      await su.unsafe(`alter user postgres password '${PASSWORD.replaceAll("'", "''")}'`);
      await su`alter system set ssl = on`;
      await su`select pg_reload_conf()`;
    } finally {
      await su.end();
    }
    // the reload is asynchronous: wait until TLS connections are taken
    const deadline = Date.now() + 10_000;
    for (;;) {
      const c = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, {
        max: 1,
        ssl: "require",
        pass: PASSWORD,
        onnotice: () => {},
        connect_timeout: 5,
      });
      try {
        await c`select 1`;
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        await c.end();
      }
    }
  });

  after(() => {
    pg?.stop();
    rmSync(certs?.dir ?? "/nonexistent", { recursive: true, force: true });
    rmSync(dir ?? "/nonexistent", { recursive: true, force: true });
  });

  /** Start a node on this URL and environment, put and reserve a job through it, stop it. */
  async function serves(url: string, env: Record<string, string> = {}): Promise<void> {
    const r = await startProcess(SERVER, ["--pg", url, "--pg-schema", `auth_${Math.floor(Math.random() * 1e9)}`], {
      PGPASSWORD: "",
      PGPASSFILE: "/nonexistent",
      ...env,
    });
    try {
      const w = await dial(r.addr);
      const put = await w.put("hi");
      const id = /^INSERTED (\d+)\r\n$/.exec(put)?.[1];
      assert.ok(id, put);
      assert.equal(await w.cmd("reserve-with-timeout 0"), `RESERVED ${id} 2\r\nhi\r\n`);
      assert.equal(await w.cmd(`delete ${id}`), "DELETED\r\n");
      w.close();
    } catch (e) {
      throw new Error(`${e instanceof Error ? e.message : e}\n${r.output()}`);
    } finally {
      await r.stop();
    }
  }

  /** A password file with these lines, mode 0600 unless told. */
  function passfile(lines: string[], mode = 0o600): string {
    const f = join(dir, `pgpass-${Math.floor(Math.random() * 1e9)}`);
    writeFileSync(f, lines.join("\n") + "\n");
    chmodSync(f, mode);
    return f;
  }
  const esc = (s: string) => s.replaceAll("\\", "\\\\").replaceAll(":", "\\:");

  it("serves with sslmode=require and the password in the URL (pg_hba.conf takes nothing but TLS)", async () => {
    await serves(`postgres://postgres:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/postgres?sslmode=require`);
  });

  it("serves with PGSSLMODE and PGPASSWORD, the URL naming neither", async () => {
    await serves(`postgres://postgres@127.0.0.1:${port}/postgres`, { PGSSLMODE: "require", PGPASSWORD: PASSWORD });
  });

  it("verify-full with sslrootcert: the CA that signed the server's certificate is taken, another is refused", async () => {
    await serves(`postgres://postgres@localhost:${port}/postgres?sslmode=verify-full&sslrootcert=${certs.ca}`, {
      PGPASSWORD: PASSWORD,
    });
    const other = join(certs.dir, "stranger-ca.crt");
    const r = refused(`postgres://postgres@localhost:${port}/postgres?sslmode=verify-full&sslrootcert=${other}`, {
      PGPASSWORD: PASSWORD,
    });
    assert.equal(r.code, 69, r.out);
    assert.match(r.out, /cannot use PostgreSQL at localhost:\d+\/postgres: .*(certificate|verify)/i);
    assert.doesNotMatch(r.out, /^\s+at /m, "no stack trace");
  });

  it("takes the password from a password file (PGPASSFILE, or passfile= in the URL), as psql does", async () => {
    const file = passfile([
      "# a comment, then an entry for another database, then ours with escapes",
      `127.0.0.1:${port}:otherdb:postgres:wrong`,
      `127.0.0.1:*:postgres:postgres:${esc(PASSWORD)}`,
    ]);
    await serves(`postgres://postgres@127.0.0.1:${port}/postgres?sslmode=require`, { PGPASSFILE: file });
    await serves(`postgres://postgres@127.0.0.1:${port}/postgres?sslmode=require&passfile=${file}`);
  });

  it("ignores a password file others can read, says so, and exits 69", () => {
    const file = passfile([`*:*:*:*:${esc(PASSWORD)}`], 0o644);
    const r = refused(`postgres://postgres@127.0.0.1:${port}/postgres?sslmode=require`, { PGPASSFILE: file });
    assert.equal(r.code, 69, r.out);
    assert.match(r.out, /password file ".*" has group or world access/);
    assert.match(r.out, /cannot use PostgreSQL at 127\.0\.0\.1:\d+\/postgres: /);
  });

  it("exits 69 with the reason: no TLS, a wrong password, an unknown sslmode", () => {
    const plain = refused(`postgres://postgres:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/postgres`);
    assert.equal(plain.code, 69, plain.out);
    assert.match(plain.out, /cannot use PostgreSQL at .*(pg_hba\.conf|rejected|no encryption)/i);
    const wrong = refused(`postgres://postgres:nope@127.0.0.1:${port}/postgres?sslmode=require`);
    assert.equal(wrong.code, 69, wrong.out);
    assert.match(wrong.out, /password authentication failed/);
    assert.doesNotMatch(wrong.out, /nope/, "the password stays out of the log");
    const mode = refused(`postgres://postgres@127.0.0.1:${port}/postgres?sslmode=sometimes`);
    assert.equal(mode.code, 69, mode.out);
    assert.match(mode.out, /invalid sslmode "sometimes"/);
  });
});
