// throwaway: a cluster + one node for the bench (not committed)
import { acquirePostgres, uniqueSchema } from "./harness/postgres.ts";
import { bunServer } from "./harness/targets.ts";
const { pg, release } = await acquirePostgres();
const n = await bunServer.start(["--pg", pg.url, "--pg-schema", uniqueSchema("bench")]);
console.log(`${n.addr.port} ${n.child!.pid}`);
process.on("SIGTERM", async () => { await n.stop(); release(); process.exit(0); });
setInterval(() => {}, 1 << 30);
