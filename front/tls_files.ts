// Read and check the TLS files named by --tls-cert/--tls-key/--tls-ca before anything
// listens, so that a wrong path, a file that is not PEM, or a key that belongs to
// another certificate stops the server with a message naming the flag, the file and the
// cause: the same message on Deno and Bun, whose TLS stacks word these failures
// differently (or, for a bad CA file, not at all until a client connects).
import { readFileSync } from "node:fs";
import { createPrivateKey, X509Certificate } from "node:crypto";
import type { TlsConfig } from "./config.ts";
import type { TlsMaterial } from "../adapters/types.ts";

export type TlsLoad =
  | { ok: true; material: TlsMaterial; warnings: string[] }
  | { ok: false; error: string };

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

function causeOf(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES") return "permission denied";
  if (code === "EISDIR") return "is a directory";
  return e instanceof Error ? e.message : String(e);
}

type Read = (path: string) => string;

const readText: Read = (path) => readFileSync(path, "utf8");

/** A PEM file's text and every certificate in it, parsed; a string is the error. */
function certificates(flag: string, file: string, read: Read): { text: string; certs: X509Certificate[] } | string {
  let text: string;
  try {
    text = read(file);
  } catch (e) {
    return `${flag} ${file}: cannot read it: ${causeOf(e)}`;
  }
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) return `${flag} ${file}: no PEM certificate in it (want -----BEGIN CERTIFICATE-----)`;
  const certs: X509Certificate[] = [];
  for (const [i, b] of blocks.entries()) {
    try {
      certs.push(new X509Certificate(b));
    } catch (e) {
      return `${flag} ${file}: certificate ${i + 1} is not valid: ${causeOf(e)}`;
    }
  }
  return { text, certs };
}

/** Load the files of a TLS config, checked; `now` decides which certificates have expired. */
export function loadTls(cfg: TlsConfig, now: Date = new Date(), read: Read = readText): TlsLoad {
  const chain = certificates("--tls-cert", cfg.certFile, read);
  if (typeof chain === "string") return { ok: false, error: chain };
  let key: string;
  try {
    key = read(cfg.keyFile);
  } catch (e) {
    return { ok: false, error: `--tls-key ${cfg.keyFile}: cannot read it: ${causeOf(e)}` };
  }
  let keyObject;
  try {
    keyObject = createPrivateKey(key);
  } catch (e) {
    return { ok: false, error: `--tls-key ${cfg.keyFile}: not a usable PEM private key: ${causeOf(e)}` };
  }
  const leaf = chain.certs[0]!;
  if (!leaf.checkPrivateKey(keyObject)) {
    return {
      ok: false,
      error:
        `--tls-key ${cfg.keyFile} is not the key of the certificate in --tls-cert ${cfg.certFile} (${leaf.subject})`,
    };
  }
  const warnings: string[] = [];
  const dated = (flag: string, file: string, c: X509Certificate) => {
    if (now > new Date(c.validTo)) warnings.push(`${flag} ${file}: ${c.subject} expired on ${c.validTo}`);
    else if (now < new Date(c.validFrom)) {
      warnings.push(`${flag} ${file}: ${c.subject} is not valid before ${c.validFrom}`);
    }
  };
  dated("--tls-cert", cfg.certFile, leaf);
  let ca: string | undefined;
  if (cfg.caFile !== undefined) {
    const cas = certificates("--tls-ca", cfg.caFile, read);
    if (typeof cas === "string") return { ok: false, error: cas };
    for (const c of cas.certs) dated("--tls-ca", cfg.caFile, c);
    ca = cas.text;
  }
  return { ok: true, material: { cert: chain.text, key, ca }, warnings };
}
