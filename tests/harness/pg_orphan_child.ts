// Run by tests/scripts/postgres_test.ts in a process of its own: makes a throwaway
// cluster, prints its port on stdout, and waits to be killed, which leaves the cluster
// without its maker.
import { startPostgres } from "../../scripts/postgres.ts";

const pg = await startPostgres();
console.log(String(pg.port));
setInterval(() => {}, 60_000);
