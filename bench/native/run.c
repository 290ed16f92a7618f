// The measured runs: their life (set up, ready, go, warm-up, window, watchdogs,
// report), the budget and deadline every client draws from, the histogram, and the
// output of one closed-loop client (workloads.c says what it sends). Latency of a
// command = the time the read that carried its reply was made minus the time the
// write that carried it was issued.
#include "loadgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ histogram

void hist_add(Hist *h, double us) {
  double x = us * 10 + 0.5;
  unsigned v = !(x >= 0) ? 0 : x > 2147483647.0 ? 2147483647u : (unsigned)x;
  int i = (int)v;
  if (v >= LINEAR) {
    int m = 31 - __builtin_clz(v);
    i = LINEAR + (m - 7) * SUB + (int)((v >> (m - 6)) - SUB);
  }
  h->counts[i] += 1;
  h->n += 1;
  if (us > h->max) h->max = us;
}

// ------------------------------------------------------------------ run state

static Run *g_runs;

/** A run with commands in flight and no reply for this long has failed. */
#define STALL_MS 15000.0
#define NEVER 1e300

int runs_active(void) { return g_runs != NULL; }

void note(Buf *list, int *count, const char *s) {
  if ((*count)++ >= 5) return;
  if (list->len) buf_add(list, ",", 1);
  buf_json(list, s, strlen(s));
}

void finish(Run *r) { r->finished = 1; } // reported and freed by run_reap

void client_done(Run *r) {
  if (r->ready && --r->active <= 0) finish(r); // before the start, run_ready counts who is left
}

void fail(Run *r, Conn *c, const char *msg) {
  r->errors++;
  note(&r->samples, &r->nsamples, msg);
  if (c && !c->done) {
    c->done = 1;
    conn_close(c);
    client_done(r);
  }
}

void bad(Conn *c, const char *what, const Reply *rep) {
  char msg[300];
  snprintf(msg, sizeof msg, "%s: got \"%.*s\"", what, (int)(rep->linelen < 120 ? rep->linelen : 120), rep->line);
  fail(c->run, c, msg);
}

/** How many new jobs may start now (deadline and budget). */
int take(Run *r, int k, double now) {
  if (r->stopped) return 0;
  if (now >= r->deadline) {
    r->stopped = 1;
    return 0;
  }
  if (k > r->budget) k = (int)r->budget;
  r->budget -= k;
  if (r->budget <= 0 && k == 0) r->stopped = 1;
  return k;
}

void finish_if_idle(Conn *c) {
  if (!c->done && !c->inflight && !c->puts && !c->ocmds) {
    c->done = 1;
    client_done(c->run);
  }
}

void start_measuring(Run *r, double now) {
  r->measuring = 1;
  r->ops = r->jobs = 0;
  memset(&r->hist, 0, sizeof r->hist);
  r->t0 = r->tlast = now;
  r->cpu0 = cpu_ms();
  emit_simple(r->id, "measuring");
}

// ------------------------------------------------------------------ output

void add(Conn *c, const char *s, size_t n) {
  buf_add(&c->out, s, n);
  c->ocmds++;
}

void add_delete(Conn *c, unsigned long long id) {
  char t[40];
  add(c, t, (size_t)snprintf(t, sizeof t, "delete %llu\r\n", id));
}

static void push_times(Conn *c, unsigned k, double t) {
  if (c->inflight + k > c->tcap) {
    unsigned cap = c->tcap ? c->tcap : 64;
    while (cap < c->inflight + k) cap *= 2;
    double *nt = malloc(cap * sizeof *nt);
    if (!nt) abort();
    for (unsigned i = 0; i < c->inflight; i++) nt[i] = c->times[(c->th + i) & (c->tcap - 1)];
    free(c->times);
    c->times = nt, c->tcap = cap, c->th = 0, c->tt = c->inflight;
  }
  for (unsigned i = 0; i < k; i++) {
    c->times[c->tt] = t;
    c->tt = (c->tt + 1) & (c->tcap - 1);
  }
  c->inflight += k;
}

/** Send what the replies of one read queued, in one write. */
void load_flush(Conn *c) {
  Run *r = c->run;
  if (c->fd < 0 || r->finished || (!c->ocmds && !c->puts)) return;
  push_times(c, c->ocmds + c->puts, now_ms());
  unsigned puts = c->puts;
  c->ocmds = c->puts = 0;
  if (puts && c->out.len == c->outoff) {
    // only puts: write them from the cached batch, no copy
    while (puts && c->fd >= 0) {
      unsigned b = puts < (unsigned)r->depth ? puts : (unsigned)r->depth;
      conn_send(c, r->batch, b * r->putlen);
      puts -= b;
    }
    return;
  }
  for (; puts; puts--) buf_add(&c->out, r->put, r->putlen);
  conn_flush_out(c);
}

// ------------------------------------------------------------------ lifecycle

static void run_start(Run *r) {
  double now = now_ms(), warm = r->warmup * 1000;
  r->started = 1;
  r->cpu0 = cpu_ms();
  r->t0 = r->tlast = now;
  r->measuring = warm <= 0;
  r->warmend = now + warm;
  r->deadline = r->duration > 0 ? now + warm + r->duration * 1000 : NEVER;
  r->hardstop = now + warm + (r->duration > 0 ? r->duration * 1000 + 15000 : 600000);
  for (int i = 0; i < r->n; i++) {
    Conn *c = r->c[i];
    if (c->done) continue;
    start_client(r, c, now);
    if (!c->done) load_flush(c);
  }
  if (r->active <= 0) finish(r);
}

void run_ready(Run *r, Group *g) {
  r->c = g->conns;
  g->conns = NULL; // the run owns the connections now
  r->n = g->n;
  for (int i = 0; i < r->n; i++) {
    Conn *c = r->c[i];
    c->run = r, c->mode = M_LOAD, c->idx = i, c->rtt = 1;
    c->producer = r->kind == K_E2E && i < r->producers;
    r->producers_active += c->producer && !c->done;
    r->active += !c->done; // one the server closed before the start failed already
  }
  r->ready = 1;
  emit_simple(r->id, "ready");
  if (!r->sync || r->go) run_start(r);
}

static void unlink_run(Run *r) {
  for (Run **p = &g_runs; *p; p = &(*p)->next)
    if (*p == r) {
      *p = r->next;
      break;
    }
}

static void run_free(Run *r) {
  buf_free(&r->samples);
  buf_free(&r->notes);
  free(r->put);
  free(r->batch);
  free(r->c);
  free(r);
}

void run_setup_failed(Run *r) {
  unlink_run(r);
  run_free(r);
}

void op_run(const Msg *m) {
  Run *r = calloc(1, sizeof *r);
  if (!r) abort();
  const char *kind = msg_get(m, "kind"), *tube = msg_get(m, "tube"), *sync = msg_get(m, "sync");
  r->id = (int)msg_num(m, "id", 0);
  r->kind = !kind ? -1 : !strcmp(kind, "put") ? K_PUT : !strcmp(kind, "rd") ? K_RD : !strcmp(kind, "e2e") ? K_E2E
            : !strcmp(kind, "mix") ? K_MIX : -1;
  int clients = (int)msg_num(m, "clients", 1);
  r->depth = (int)msg_num(m, "depth", 1);
  if (r->depth < 1) r->depth = 1;
  r->body = (int)msg_num(m, "body", 100);
  r->producers = (int)msg_num(m, "producers", clients / 2);
  r->window = (int)msg_num(m, "window", 4);
  r->duration = msg_num(m, "duration", 0);
  r->warmup = msg_num(m, "warmup", 0);
  r->budget = (long long)msg_num(m, "budget", -1);
  if (r->budget < 0) r->budget = 0x7fffffffffffffffLL;
  r->sync = sync && (!strcmp(sync, "1") || !strcmp(sync, "true"));
  if (!tube || !*tube) tube = "default";
  if (r->kind < 0 || clients < 0 || r->body < 0 || (r->kind == K_E2E && r->body < 32) || strlen(tube) > 120) {
    emit_error(r->id, "bad run spec (kind, clients, body >= 32 for e2e, tube)");
    return free(r);
  }
  char head[48];
  int hl = snprintf(head, sizeof head, "put 0 0 60 %d\r\n", r->body);
  r->putlen = (size_t)hl + (size_t)r->body + 2;
  r->put = malloc(r->putlen);
  r->batch = malloc(r->putlen * (size_t)r->depth);
  if (!r->put || !r->batch) abort();
  memcpy(r->put, head, (size_t)hl);
  for (int i = 0; i < r->body; i++) r->put[hl + i] = (char)('a' + i % 26);
  memcpy(r->put + hl + r->body, "\r\n", 2);
  for (int i = 0; i < r->depth; i++) memcpy(r->batch + (size_t)i * r->putlen, r->put, r->putlen);
  snprintf(r->stats, sizeof r->stats, "stats-tube %s\r\n", tube);
  r->next = g_runs;
  g_runs = r;
  Group *g = group_new(G_RUN, r->id, msg_get(m, "host"), (int)msg_num(m, "port", 0), clients, 64);
  g->run = r;
  const char *ports = msg_get(m, "ports"); // "p0,p1,...": connection i to ports[i % n]
  for (const char *p = ports; p && *p;) {
    g->ports = realloc(g->ports, (size_t)(g->nports + 1) * sizeof *g->ports);
    if (!g->ports) abort();
    g->ports[g->nports++] = atoi(p);
    p = strchr(p, ',');
    if (p) p++;
  }
  if (strcmp(tube, "default")) {
    char cmd[160], want[160];
    snprintf(cmd, sizeof cmd, "use %s", tube);
    snprintf(want, sizeof want, "USING %s", tube);
    group_add_cmd(g, cmd, want);
    snprintf(cmd, sizeof cmd, "watch %s", tube);
    group_add_cmd(g, cmd, "WATCHING 2");
    group_add_cmd(g, "ignore default", "WATCHING 1");
  }
  const char *also = msg_get(m, "alsoWatch"); // a second watched tube (beside-limit)
  if (also && *also && strlen(also) <= 120) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "watch %s", also);
    group_add_cmd(g, cmd, "WATCHING 2");
  }
  group_start(g);
}

void op_go(const Msg *m) {
  int id = (int)msg_num(m, "id", 0);
  for (Run *r = g_runs; r; r = r->next) {
    if (r->id != id) continue;
    if (r->ready && !r->started) run_start(r);
    else r->go = 1;
  }
}

void run_tick(double now) {
  for (Run *r = g_runs; r; r = r->next) {
    if (!r->started || r->finished) continue;
    if (!r->measuring && now >= r->warmend) start_measuring(r, now);
    if (now >= r->deadline) r->stopped = 1;
    if (r->kind == K_E2E && !r->producers_active && now > r->deadline + 5000) {
      char msg[120];
      snprintf(msg, sizeof msg, "%lld jobs still undelivered 5 s after the producers stopped",
               r->produced - r->delivered);
      note(&r->notes, &r->nnotes, msg);
      finish(r);
    } else if (now > r->hardstop || now - r->tlast > STALL_MS) {
      unsigned out = 0;
      for (int i = 0; i < r->n; i++) out += r->c[i]->inflight;
      char msg[120];
      if (now > r->hardstop) snprintf(msg, sizeof msg, "timed out with %u commands unanswered", out);
      else snprintf(msg, sizeof msg, "no reply for %.0f s with %u commands unanswered", STALL_MS / 1000, out);
      fail(r, NULL, msg);
      finish(r);
    }
  }
}

static void emit_done(Run *r, double cpu1) {
  Buf b = {0};
  char t[160];
  buf_str(&b, "{\"id\":");
  buf_num(&b, (unsigned long long)r->id);
  snprintf(t, sizeof t, ",\"ev\":\"done\",\"result\":{\"ops\":%lld,\"jobs\":%lld,\"elapsedMs\":%.4f,", r->ops, r->jobs,
           r->tlast - r->t0 > 0.001 ? r->tlast - r->t0 : 0.001);
  buf_str(&b, t);
  snprintf(t, sizeof t, "\"hist\":{\"n\":%.0f,\"max\":%.3f,\"b\":[", r->hist.n, r->hist.max);
  buf_str(&b, t);
  for (int i = 0, first = 1; i < HSIZE; i++) {
    if (!r->hist.counts[i]) continue;
    snprintf(t, sizeof t, "%s[%d,%.0f]", first ? "" : ",", i, r->hist.counts[i]);
    buf_str(&b, t);
    first = 0;
  }
  snprintf(t, sizeof t, "]},\"errors\":%d,\"genCpuMs\":%.3f,\"errorSamples\":[", r->errors, cpu1 - r->cpu0);
  buf_str(&b, t);
  buf_add(&b, r->samples.p, r->samples.len);
  buf_str(&b, "],\"notes\":[");
  buf_add(&b, r->notes.p, r->notes.len);
  buf_str(&b, "]}}");
  emit(&b);
}

void run_reap(void) {
  for (Run *r = g_runs, *next; r; r = next) {
    next = r->next;
    if (!r->finished) continue;
    if (!r->measuring) start_measuring(r, now_ms()); // finished during warm-up
    emit_done(r, cpu_ms());
    for (int i = 0; i < r->n; i++) conn_free_later(r->c[i]);
    unlink_run(r);
    run_free(r);
  }
}
