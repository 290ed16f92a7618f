// Log files of earlier tubeway releases were named binlog.N, which beanstalkd reads
// (and deletes when it cannot): they are renamed to tubeway.N and replayed, while
// beanstalkd's own binlog.N files stay byte for byte as they were.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { body, DIR, Engine, memFiles, summary } from "../../../harness/binlog_fixture.ts";
import { encodeV7 } from "../../../../core/memory/beanstalkd_log/write.ts";

describe("log files of an earlier tubeway (binlog.N)", () => {
  it("are renamed to tubeway.N and replayed; beanstalkd's binlog.N is left alone", () => {
    const files = memFiles();
    const e = new Engine(files).open();
    const a = e.put("default", body("a"), { pri: 3 });
    const b = e.put("other", body("b"));
    e.bury(b, 9);
    e.wal.close();
    // what an earlier release left: the same files under beanstalkd's names
    for (const name of files.list(DIR)) {
      const m = /^tubeway\.(\d+)$/.exec(name);
      if (m) files.rename(`${DIR}/${name}`, `${DIR}/binlog.${m[1]}`);
    }
    const theirs = encodeV7([{ ...e.logged.get(a)!, id: 500 }]);
    files.put(`${DIR}/binlog.40`, theirs);
    const expected = summary([...e.logged.values()]);

    const again = new Engine(files).open();
    assert.deepEqual(summary(again.recovered.jobs), expected);
    assert.ok(again.recovered.maxId >= b);
    const names = files.list(DIR);
    assert.deepEqual(names.filter((n) => n.startsWith("binlog.")), ["binlog.40"], names.join(","));
    assert.deepEqual(files.read(`${DIR}/binlog.40`), theirs);
    assert.ok(again.logs.some((l) => /renamed \d+ log files of an earlier tubeway/.test(l)), again.logs.join("\n"));
    again.wal.close();
  });
});
