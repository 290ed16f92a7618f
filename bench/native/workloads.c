// The workloads' closed loops, with the same rules as bench/loadgen_drivers.ts (so
// the two generators measure the same thing): put with `depth` in flight;
// reserve+delete; producers with at most `window` undelivered jobs to consumers
// blocked in reserve (latency put -> delivery, stamped in the body); a worker-like mix.
#include "loadgen.h"

#include <stdio.h>
#include <string.h>

static int producer_step(Conn *p, double now);

void start_client(Run *r, Conn *c, double now) {
  int k;
  switch (r->kind) {
  case K_PUT:
    c->puts += (unsigned)take(r, r->depth, now);
    if (!c->puts) finish_if_idle(c);
    break;
  case K_RD:
    k = take(r, r->depth, now);
    for (int i = 0; i < k; i++) add(c, "reserve\r\n", 9);
    if (!k) finish_if_idle(c);
    break;
  case K_E2E:
    if (c->producer) producer_step(c, now);
    else c->rtt = 0, add(c, "reserve\r\n", 9); // a consumer's latency is the job's, put -> delivery
    break;
  case K_MIX:
    if (take(r, 1, now)) {
      add(c, r->put, r->putlen);
      add(c, "peek-ready\r\n", 12);
      add(c, "reserve-with-timeout 0\r\n", 24);
      c->step = 0;
    } else finish_if_idle(c);
    break;
  }
}

static void e2e_maybe_done(Run *r) {
  if (!r->producers_active && r->delivered >= r->produced) finish(r);
}

/** Producer p puts its next job if it may (body "<put time, 0.1 µs>:<producer>xxx…"); 1 when it queued one. */
static int producer_step(Conn *p, double now) {
  Run *r = p->run;
  if (p->done || p->inflight || p->ocmds) return 0;
  if (!r->stopped && now < r->deadline && p->undelivered >= r->window) return 0; // parked
  if (take(r, 1, now)) {
    char head[48], stamp[48];
    int hl = snprintf(head, sizeof head, "put 0 0 60 %d\r\n", r->body);
    int sl = snprintf(stamp, sizeof stamp, "%llu:%d", (unsigned long long)(now_ms() * 10000 + 0.5), p->idx);
    buf_add(&p->out, head, (size_t)hl);
    buf_add(&p->out, stamp, (size_t)sl);
    static const char xs[64] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
    for (int i = sl; i < r->body; i += 64) buf_add(&p->out, xs, (size_t)(r->body - i < 64 ? r->body - i : 64));
    add(p, "\r\n", 2);
    p->undelivered++;
    return 1;
  }
  finish_if_idle(p);
  if (p->done) {
    r->producers_active--;
    e2e_maybe_done(r);
  }
  return 0;
}

static void e2e_reply(Run *r, Conn *c, const Reply *rep, double now) {
  if (c->producer) {
    if (rep->kind != BS_INSERTED) return bad(c, "put expected INSERTED", rep);
    r->ops++;
    r->produced++;
    producer_step(c, now);
    return;
  }
  if (rep->kind == BS_DELETED) {
    r->ops++;
    return;
  }
  if (rep->kind != BS_RESERVED) return bad(c, "consumer reserve/delete", rep);
  if (rep->n != (size_t)r->body) return bad(c, "reserve expected the put's body size", rep);
  const char *b = rep->body, *end = b + rep->n, *q = b;
  unsigned long long v = 0;
  unsigned pi = 0;
  while (q < end && *q >= '0' && *q <= '9') v = v * 10 + (unsigned)(*q++ - '0');
  const char *colon = q++;
  const char *digits = q;
  while (q < end && *q >= '0' && *q <= '9' && pi < 1000000) pi = pi * 10 + (unsigned)(*q++ - '0');
  if (colon == b || colon >= end || *colon != ':' || q == digits || pi >= (unsigned)r->n || !r->c[pi]->producer)
    return bad(c, "job body carries no timestamp:producer", rep);
  Conn *p = r->c[pi];
  hist_add(&r->hist, (now - v / 10000.0) * 1000);
  r->ops++;
  r->jobs++;
  r->delivered++;
  add_delete(c, rep->a);
  add(c, "reserve\r\n", 9);
  p->undelivered--;
  if (producer_step(p, now)) load_flush(p);
  e2e_maybe_done(r);
}

static void mix_reply(Run *r, Conn *c, const Reply *rep, double now) {
  r->ops++;
  switch (c->step) {
  case 0:
    if (rep->kind != BS_INSERTED) return bad(c, "put expected INSERTED", rep);
    c->step = 1;
    return;
  case 1:
    if (rep->kind == BS_FOUND && rep->n != (size_t)r->body) return bad(c, "peek-ready body size", rep);
    if (rep->kind != BS_FOUND && rep->kind != BS_NOT_FOUND) return bad(c, "peek-ready expected FOUND/NOT_FOUND", rep);
    c->step = 2;
    return;
  case 2:
    if (rep->kind == BS_RESERVED) {
      if (rep->n != (size_t)r->body) return bad(c, "reserve body size", rep);
      add_delete(c, rep->a);
      c->step = 3;
    } else if (rep->kind == BS_TIMED_OUT) {
      c->step = 4;
    } else return bad(c, "reserve-with-timeout 0 expected RESERVED/TIMED_OUT", rep);
    add(c, r->stats, strlen(r->stats));
    return;
  case 3:
    if (rep->kind != BS_DELETED) return bad(c, "delete expected DELETED", rep);
    c->step = 4;
    return;
  default:
    if (rep->kind != BS_OK || rep->n < 3 || memcmp(rep->body, "---", 3))
      return bad(c, "stats-tube expected OK with YAML", rep);
    r->jobs++; // one full cycle
    start_client(r, c, now);
  }
}

int load_reply(Conn *c, const Reply *rep) {
  Run *r = c->run;
  double now = g_now;
  if (r->finished || c->done) return 1;
  if (!r->measuring && now >= r->warmend) start_measuring(r, now);
  if (!c->inflight) {
    bad(c, "a reply with no command in flight", rep);
    return 1;
  }
  c->inflight--;
  double sent = c->times[c->th];
  c->th = (c->th + 1) & (c->tcap - 1);
  if (c->rtt) hist_add(&r->hist, (now - sent) * 1000);
  r->tlast = now;
  switch (r->kind) {
  case K_PUT:
    if (rep->kind != BS_INSERTED) return bad(c, "put expected INSERTED", rep), 1;
    r->ops++;
    r->jobs++;
    if (take(r, 1, now)) c->puts++;
    else if (!c->inflight && !c->puts) finish_if_idle(c);
    break;
  case K_RD:
    r->ops++;
    if (rep->kind == BS_RESERVED) {
      if (rep->n != (size_t)r->body) return bad(c, "reserve expected the pre-filled body size", rep), 1;
      add_delete(c, rep->a);
    } else if (rep->kind == BS_DELETED) {
      r->jobs++;
      if (take(r, 1, now)) add(c, "reserve\r\n", 9);
      else if (!c->inflight && !c->ocmds) finish_if_idle(c);
    } else return bad(c, "reserve/delete", rep), 1;
    break;
  case K_E2E:
    e2e_reply(r, c, rep, now);
    break;
  case K_MIX:
    mix_reply(r, c, rep, now);
    break;
  }
  return c->done || r->finished;
}

void load_closed(Conn *c, const char *why) {
  if (c->done || c->run->finished) return conn_close(c);
  fail(c->run, c, why);
}

