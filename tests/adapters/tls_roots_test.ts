// The root certificate store is read when a --pg client is made, not at its first TLS
// connect (issue 21 §6): Deno and Bun read NODE_EXTRA_CA_CERTS lazily, at the first TLS
// client connect, and when that read fails (say with EMFILE, fds having run out by then)
// they warn ("Ignoring extra certs from ..., load failed: Too many open files") and trust
// the store without those certificates for the rest of the process. The child takes the
// file away just before its first TLS connect, which fails that read deterministically
// (running a process out of fds at exactly that point is not: Deno 2.9.6 panics in
// ext/signals when it cannot get its descriptors first).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { BUN, DENO, ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";
import { makeCerts, OPENSSL } from "../harness/tls.ts";

const CHILD = join(ROOT, "tests", "harness", "pg_tls_child.ts");

describe(`the root certificate store, read when a --pg TLS client is made (${RUNTIME})`, {
  skip: skipUnless(!!OPENSSL, "openssl is not installed"),
}, () => {
  it("a --pg TLS connect after NODE_EXTRA_CA_CERTS became unreadable prints no extra-certs warning", () => {
    const certs = makeCerts();
    const argv = RUNTIME === "deno" ? [DENO, "run", "-A", CHILD] : [BUN, "run", CHILD];
    let r;
    try {
      r = spawnSync(argv[0]!, argv.slice(1), {
        cwd: ROOT,
        env: { ...process.env, NODE_EXTRA_CA_CERTS: certs.ca, NO_COLOR: "1" },
        encoding: "utf8",
        timeout: 30_000,
      });
    } finally {
      rmSync(certs.dir, { recursive: true, force: true });
    }
    assert.match(r.stdout, /connect attempted/, `the child did not get to its TLS connect: ${r.stdout}${r.stderr}`);
    assert.doesNotMatch(r.stderr, /Ignoring extra certs/i);
  });
});
