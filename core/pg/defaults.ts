// The PostgreSQL engine's settings when the flags do not give them (--pg-schema,
// --pg-lease, --pg-wait).

/** The schema of the tables. */
export const DEFAULT_SCHEMA = "tubeway";

/** How long a node's lease lasts unrenewed, ms: then any node releases its reservations. */
export const DEFAULT_LEASE_MS = 5000;

/** How long a command waits for a database that is away, ms, then answers INTERNAL_ERROR. */
export const DEFAULT_WAIT_MS = 5000;
