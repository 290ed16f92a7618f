// The workloads' closed loops: what each client sends first and how it answers each
// reply (put; reserve+delete; producers to blocking consumers; a worker-like mix).
import { bytes, K, latin1 } from "./proto.ts";
import {
  C_PEEK_READY,
  C_RESERVE,
  C_RWT0,
  type Client,
  CRLF,
  type Driver,
  type Run,
  type RunSpec,
} from "./loadgen_run.ts";

// ------------------------------------------------------------------ drivers

function bad(c: Client, what: string, buf: Uint8Array, lineAt: number, lineEnd: number) {
  c.run.fail(c, `${what}: got ${JSON.stringify(latin1(buf, lineAt, lineEnd))}`);
}

/** put, closed loop with `depth` in flight. */
const putDriver: Driver = {
  start(c, now) {
    c.puts += c.run.take(c.run.spec.depth, now);
    if (c.puts === 0) c.finishIfIdle();
  },
  reply(c, kind, _a, _n, buf, _b, lineAt, lineEnd, now) {
    if (kind !== K.INSERTED) return bad(c, "put expected INSERTED", buf, lineAt, lineEnd);
    const r = c.run;
    r.ops++;
    r.jobs++;
    if (r.take(1, now) === 1) c.puts++;
    else if (c.inflight === 0 && c.puts === 0) c.finishIfIdle();
  },
};

/** reserve + delete with `depth` commands in flight. */
const rdDriver: Driver = {
  start(c, now) {
    const k = c.run.take(c.run.spec.depth, now);
    for (let i = 0; i < k; i++) c.add(C_RESERVE);
    if (k === 0) c.finishIfIdle();
  },
  reply(c, kind, a, n, buf, _b, lineAt, lineEnd, now) {
    const r = c.run;
    r.ops++;
    if (kind === K.RESERVED) {
      if (n !== r.spec.body) return bad(c, `reserve expected a ${r.spec.body}-byte body`, buf, lineAt, lineEnd);
      c.addDelete(a);
    } else if (kind === K.DELETED) {
      r.jobs++;
      if (r.take(1, now) === 1) c.add(C_RESERVE);
      else if (c.inflight === 0 && c.olen === 0) c.finishIfIdle();
    } else return bad(c, "reserve/delete", buf, lineAt, lineEnd);
  },
};

/**
 * Producers put timestamped jobs one at a time, each keeping at most `window` of its
 * jobs undelivered (so no backlog builds up and the latency is the server's, not a
 * queue's); consumers block in reserve, then send delete+reserve in one write.
 * Body: "<put time in 0.1 µs>:<producer index>xxxx…".
 */
function stampedPut(c: Client, bodyLen: number) {
  const stamp = `${Math.round(performance.now() * 10000)}:${c.idx}`;
  c.add(bytes(`put 0 0 60 ${bodyLen}\r\n`), 1);
  c.ensure(bodyLen + 2);
  for (let i = 0; i < stamp.length; i++) c.ob[c.olen++] = stamp.charCodeAt(i);
  for (let i = stamp.length; i < bodyLen; i++) c.ob[c.olen++] = 120; // 'x'
  c.add(CRLF, 0);
  c.undelivered++;
}

/** Let producer p put its next job if it may; returns true when it queued one. */
function producerStep(p: Client, now: number): boolean {
  const r = p.run;
  if (p.done || p.inflight > 0 || p.olen > 0) return false;
  if (!r.stopped && now < r.deadline && p.undelivered >= (r.spec.window ?? 4)) return false; // parked
  if (r.take(1, now) === 1) {
    stampedPut(p, r.spec.body);
    return true;
  }
  p.finishIfIdle();
  if (p.done) {
    r.producersActive--;
    e2eMaybeDone(r);
  }
  return false;
}

const e2eDriver: Driver = {
  start(c, now) {
    if (c.producer) producerStep(c, now);
    else {
      c.rtt = false;
      c.add(C_RESERVE);
    }
  },
  reply(c, kind, a, n, buf, bodyAt, lineAt, lineEnd, now) {
    const r = c.run;
    if (c.producer) {
      if (kind !== K.INSERTED) return bad(c, "put expected INSERTED", buf, lineAt, lineEnd);
      r.ops++;
      r.produced++;
      producerStep(c, now);
      return;
    }
    if (kind === K.RESERVED) {
      if (n !== r.spec.body) return bad(c, `reserve expected a ${r.spec.body}-byte body`, buf, lineAt, lineEnd);
      let v = 0;
      let i = bodyAt;
      const end = bodyAt + n;
      for (; i < end; i++) {
        const d = buf[i]! - 48;
        if (d < 0 || d > 9) break;
        v = v * 10 + d;
      }
      let pi = 0;
      let j = i + 1;
      for (; j < end; j++) {
        const d = buf[j]! - 48;
        if (d < 0 || d > 9) break;
        pi = pi * 10 + d;
      }
      const p = r.clients[pi];
      if (i === bodyAt || buf[i] !== 58 || j === i + 1 || !p?.producer) {
        return bad(c, "job body carries no timestamp:producer", buf, lineAt, lineEnd);
      }
      r.hist.add((now - v / 10000) * 1000);
      r.ops++;
      r.jobs++;
      r.delivered++;
      c.addDelete(a);
      c.add(C_RESERVE);
      p.undelivered--;
      if (producerStep(p, now)) p.flush();
      e2eMaybeDone(r);
    } else if (kind === K.DELETED) {
      r.ops++;
    } else return bad(c, "consumer reserve/delete", buf, lineAt, lineEnd);
  },
};

function e2eMaybeDone(r: Run) {
  if (r.producersActive === 0 && r.delivered >= r.produced) r.finish();
}

/**
 * A worker-like cycle in two round trips: put + peek-ready + reserve-with-timeout 0
 * in one write (none depends on another's reply), then delete (when a job was
 * reserved) + stats-tube in the next.
 */
function mixFirst(c: Client) {
  c.add(c.run.putOne);
  c.add(C_PEEK_READY);
  c.add(C_RWT0);
  c.step = 0;
}

const mixDriver: Driver = {
  start(c, now) {
    if (c.run.take(1, now) === 1) mixFirst(c);
    else c.finishIfIdle();
  },
  reply(c, kind, a, n, buf, bodyAt, lineAt, lineEnd, now) {
    const r = c.run;
    r.ops++;
    switch (c.step) {
      case 0:
        if (kind !== K.INSERTED) return bad(c, "put expected INSERTED", buf, lineAt, lineEnd);
        c.step = 1;
        return;
      case 1:
        if (kind === K.FOUND) {
          if (n !== r.spec.body) return bad(c, "peek-ready body size", buf, lineAt, lineEnd);
        } else if (kind !== K.NOT_FOUND) return bad(c, "peek-ready expected FOUND/NOT_FOUND", buf, lineAt, lineEnd);
        c.step = 2;
        return;
      case 2:
        if (kind === K.RESERVED) {
          if (n !== r.spec.body) return bad(c, "reserve body size", buf, lineAt, lineEnd);
          c.addDelete(a);
          c.add(statsTubeCmd(r));
          c.step = 3;
        } else if (kind === K.TIMED_OUT) {
          c.add(statsTubeCmd(r));
          c.step = 4;
        } else return bad(c, "reserve-with-timeout 0 expected RESERVED/TIMED_OUT", buf, lineAt, lineEnd);
        return;
      case 3:
        if (kind !== K.DELETED) return bad(c, "delete expected DELETED", buf, lineAt, lineEnd);
        c.step = 4;
        return;
      case 4:
        if (kind !== K.OK || buf[bodyAt] !== 45 || buf[bodyAt + 1] !== 45 || buf[bodyAt + 2] !== 45) {
          return bad(c, "stats-tube expected OK with YAML", buf, lineAt, lineEnd);
        }
        r.jobs++; // one full cycle
        if (r.take(1, now) === 1) mixFirst(c);
        else c.finishIfIdle();
        return;
    }
  },
};
const statsTubeCache = new Map<string, Uint8Array>();
function statsTubeCmd(r: Run): Uint8Array {
  let b = statsTubeCache.get(r.spec.tube);
  if (!b) statsTubeCache.set(r.spec.tube, b = bytes(`stats-tube ${r.spec.tube}\r\n`));
  return b;
}

export const DRIVERS: Record<RunSpec["kind"], Driver> = {
  put: putDriver,
  rd: rdDriver,
  e2e: e2eDriver,
  mix: mixDriver,
};
