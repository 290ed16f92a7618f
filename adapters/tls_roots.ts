// The runtime's root certificate store, loaded now rather than at the first TLS connect.
//
// Deno (2.9.6) and Bun (1.4.5) read their root store, with the extra certificates that
// NODE_EXTRA_CA_CERTS (Deno: also DENO_CERT) names, lazily: at the first TLS client
// connect of the process (node:tls connect, Deno.connectTls), not at start; a TLS server's
// handshake does not read it. When that read fails, because the process has run out of
// file descriptors by then (a flood of connections), they print "Warning: Ignoring extra
// certs from ..., load failed: Too many open files" and keep the store without those
// certificates for the rest of the process: a database whose CA is among them is refused
// from then on ("unable to verify the first certificate"), even once descriptors are free
// again. So whatever will be a TLS client (the --pg connections with TLS) loads it first,
// at start, while descriptors are plentiful. Constructing a client TLSSocket makes both
// runtimes load the store (checked; tls.createSecureContext() does on Bun only, and
// tls.rootCertificates on neither: it is the bundled list).
import { Socket } from "node:net";
import { TLSSocket } from "node:tls";

/**
 * Load the root certificate store now. The runtime loads it once per process: a later
 * call costs one socket object and reads nothing.
 */
export function loadTlsRoots(): void {
  new TLSSocket(new Socket()).destroy();
}
