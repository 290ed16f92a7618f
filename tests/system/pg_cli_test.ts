// The executable with --pg, through the real process of this runtime: a database that
// cannot be used at start is one line with where and why, and exit 69; -b with --pg is
// a usage error; the startup line names the database without its password.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { BUN_SERVER, DENO_SERVER, RUNTIME } from "../harness/paths.ts";
import { bunPgServer, denoPgServer, startProcess } from "../harness/targets.ts";
import { acquirePostgres, skipWithoutPostgres, uniqueSchema } from "../harness/postgres.ts";
import { dial } from "../harness/wire.ts";
import { freePort } from "../../scripts/machine.ts";

const SERVER = RUNTIME === "bun" ? [...BUN_SERVER] : [...DENO_SERVER];

function run(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(SERVER[0]!, [...SERVER.slice(1), ...args], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, ...env },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("tubeway --pg on the command line", () => {
  it("exits 69 with the host and the error when the database cannot be reached, without a stack trace", async () => {
    const port = await freePort(); // nothing listens there
    const r = run(["-l", "127.0.0.1", "-p", "0", "--pg", `postgres://tubeway:s3cret@127.0.0.1:${port}/jobs`]);
    assert.equal(r.code, 69, r.out);
    assert.match(r.out, new RegExp(`cannot use PostgreSQL at 127\\.0\\.0\\.1:${port}/jobs: .*ECONNREFUSED`));
    assert.doesNotMatch(r.out, /s3cret/, "the password stays out of the log");
    assert.doesNotMatch(r.out, /^\s+at /m, "no stack trace");
  });

  it("names the database the PG* variables point it to, not the defaults, when it cannot be reached", async () => {
    const port = await freePort(); // nothing listens there
    const r = run(["-l", "127.0.0.1", "-p", "0", "--pg", "postgres:///jobs"], {
      PGHOST: "127.0.0.1",
      PGPORT: `${port}`,
    });
    assert.equal(r.code, 69, r.out);
    assert.match(r.out, new RegExp(`ERROR cannot use PostgreSQL at 127\\.0\\.0\\.1:${port}/jobs: .*ECONNREFUSED`));
  });

  it("takes TUBEWAY_PG_URL, and refuses -b with it (exit 5, beanstalkd-style)", () => {
    const r = run(["-b", "/tmp"], { TUBEWAY_PG_URL: "postgres://127.0.0.1:1/x" });
    assert.equal(r.code, 5, r.out);
    assert.match(r.out, /^tubeway: -b and --pg cannot be used together/m);
  });

  it(
    "names the database (no password) and the schema in its -V startup line",
    { skip: skipWithoutPostgres },
    async () => {
      const target = RUNTIME === "bun" ? bunPgServer : denoPgServer;
      const n = await target.start(["-V"]);
      try {
        await new Promise((r) => setTimeout(r, 200));
        assert.match(n.output(), /listening .* pg="127\.0\.0\.1:\d+\/postgres schema wire_\d+_\d+"/);
      } finally {
        await n.stop();
      }
    },
  );

  it(
    "says the server does not support TLS when sslmode=require meets one without it (exit 69)",
    { skip: skipWithoutPostgres },
    async () => {
      const { pg, release } = await acquirePostgres(); // the throwaway cluster has no TLS
      try {
        for (const [url, env] of [[`${pg.url}?sslmode=require`, {}], [pg.url, { PGSSLMODE: "verify-full" }]] as const) {
          const r = run(["-l", "127.0.0.1", "-p", "0", "--pg", url], env);
          assert.equal(r.code, 69, r.out);
          assert.match(
            r.out,
            new RegExp(
              `ERROR cannot use PostgreSQL at 127\\.0\\.0\\.1:${pg.port}/postgres: ` +
                `the server at 127\\.0\\.0\\.1:${pg.port} does not support TLS, and sslmode=(require|verify-full) asks for it exit=69`,
            ),
          );
        }
      } finally {
        release();
      }
    },
  );

  it(
    "names the database the PG* variables gave in its -V startup line",
    { skip: skipWithoutPostgres },
    async () => {
      const { pg, release } = await acquirePostgres();
      try {
        const schema = uniqueSchema("env");
        const env = { PGHOST: "127.0.0.1", PGPORT: `${pg.port}`, PGUSER: "postgres", PGDATABASE: "postgres" };
        const n = await startProcess(SERVER, ["-V", "--pg", "postgres://", "--pg-schema", schema], env);
        try {
          const w = await dial(n.addr);
          assert.match(await w.put("via PG*"), /^INSERTED \d+\r\n$/);
          w.close();
          assert.ok(n.output().includes(` pg="127.0.0.1:${pg.port}/postgres schema ${schema}" `), n.output());
        } finally {
          await n.stop();
        }
      } finally {
        release();
      }
    },
  );
});
