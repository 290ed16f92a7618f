// The in-memory engine over a write-ahead log in MemoryFiles, opened as a server opens
// it (replay, then restore), for tests that crash it (files.crash(true): kill -9) and
// open it again.
import type { ManualClock } from "../../core/clock.ts";
import { Queue } from "../../core/memory/queue.ts";
import { openBinlog } from "../../core/memory/binlog/open.ts";
import { Service } from "../../protocol/service.ts";
import { localClient } from "./in_process.ts";
import type { MemoryFiles } from "./files_memory.ts";
import { DIR } from "./binlog_fixture.ts";

export function openLogged(files: MemoryFiles, clock: ManualClock, maxFileSize = 1 << 20) {
  let q: Queue | undefined = undefined; // assigned once the log has been read
  const { wal, recovered } = openBinlog(
    { dir: DIR, fsyncMs: 50, durableAcks: false, maxFileSize, maxJobSize: 65535, log: () => {} },
    files,
    clock,
    (id) => q?.liveRecord(id),
  );
  q = new Queue({ clock, wal });
  q.restore(recovered.jobs, recovered.maxId, recovered);
  const svc = new Service(q);
  return { q, svc, wal, c: () => localClient(svc) };
}
