// Groups of connections opened together, at most `par` connecting at a time, each
// sent the same setup commands at once (with {i} replaced by its index) and each
// reply checked: the clients of a run (use/watch/ignore), the idle connections of
// `hold` (conns-10k, tubes-10k) and the one-connection `query`.
#include "loadgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Group *g_groups; // live groups: being set up, or held
static Group *g_dead;   // removed this turn; freed at the next setup_tick

/** A setup that makes no progress for this long has failed. */
#define SETUP_MS 10000.0

Group *group_new(int kind, int id, const char *host, int port, int n, int par) {
  Group *g = calloc(1, sizeof *g);
  if (!g) abort();
  g->kind = kind, g->id = id, g->port = port, g->n = n, g->par = par;
  snprintf(g->host, sizeof g->host, "%s", host ? host : "127.0.0.1");
  g->conns = calloc((size_t)(n > 0 ? n : 1), sizeof *g->conns);
  if (!g->conns) abort();
  g->next = g_groups;
  g_groups = g;
  return g;
}

void group_add_cmd(Group *g, const char *cmd, const char *want) {
  g->cmds = realloc(g->cmds, (size_t)(g->ncmds + 1) * sizeof *g->cmds);
  g->wants = realloc(g->wants, (size_t)(g->ncmds + 1) * sizeof *g->wants);
  if (!g->cmds || !g->wants) abort();
  g->cmds[g->ncmds] = strdup(cmd);
  g->wants[g->ncmds++] = strdup(want ? want : "");
}

/** The cmd=/want= fields of a control message, in order (a cmd without a want accepts any reply). */
static void add_msg_cmds(Group *g, const Msg *m) {
  for (int i = 0; i < m->n; i++) {
    if (!strcmp(m->k[i], "cmd")) group_add_cmd(g, m->v[i], "");
    else if (!strcmp(m->k[i], "want") && g->ncmds) {
      free(g->wants[g->ncmds - 1]);
      g->wants[g->ncmds - 1] = strdup(m->v[i]);
    }
  }
}

static void group_remove(Group *g) {
  for (Group **p = &g_groups; *p; p = &(*p)->next) {
    if (*p == g) {
      *p = g->next;
      break;
    }
  }
  g->next = g_dead;
  g_dead = g;
}

static void group_free(Group *g) {
  for (int i = 0; i < g->ncmds; i++) free(g->cmds[i]), free(g->wants[i]);
  free(g->cmds);
  free(g->wants);
  free(g->tail);
  free(g->conns);
  free(g->ports);
  buf_free(&g->errors);
  free(g);
}

static void open_more(Group *g) {
  while (!g->failed && g->opened < g->n && g->opened - g->ready < g->par) {
    char err[200];
    int port = g->nports ? g->ports[g->opened % g->nports] : g->port;
    Conn *c = conn_open(g->host, port, err, sizeof err);
    if (!c) return group_fail(g, err);
    c->group = g;
    c->idx = g->opened;
    g->conns[g->opened++] = c;
  }
}

void group_start(Group *g) {
  g->t0 = now_ms();
  g->deadline = g->t0 + SETUP_MS;
  if (g->n == 0 && g->kind == G_RUN) {
    run_ready(g->run, g);
    return group_remove(g);
  }
  if (g->n == 0 && g->kind == G_HOLD) {
    Buf b = {0};
    buf_str(&b, "{\"id\":");
    buf_num(&b, (unsigned long long)g->id);
    buf_str(&b, ",\"ev\":\"held\",\"ms\":0,\"count\":0}");
    emit(&b);
  }
  open_more(g);
}

void group_fail(Group *g, const char *msg) {
  if (g->failed) return;
  g->failed = 1;
  emit_error(g->id, msg);
  for (int i = 0; i < g->opened; i++)
    if (g->conns[i]) conn_free_later(g->conns[i]);
  if (g->kind == G_RUN) run_setup_failed(g->run);
  group_remove(g);
}

int groups_active(void) {
  for (Group *g = g_groups; g; g = g->next)
    if (g->ready < g->n) return 1;
  return 0;
}

/** `s` with every {i} replaced by i. */
static void subst(Buf *b, const char *s, int i) {
  for (const char *p; (p = strstr(s, "{i}")); s = p + 3) {
    buf_add(b, s, (size_t)(p - s));
    buf_num(b, (unsigned long long)i);
  }
  buf_str(b, s);
}

static void script_done(Conn *c);

void script_begin(Conn *c) {
  Group *g = c->group;
  Buf b = {0};
  for (int i = 0; i < g->ncmds; i++) {
    subst(&b, g->cmds[i], c->idx);
    buf_add(&b, "\r\n", 2);
  }
  if (b.len) conn_send(c, b.p, b.len);
  buf_free(&b);
  if (!g->ncmds && c->fd >= 0) script_done(c);
}

void script_reply(Conn *c, const Reply *r) {
  Buf s = {0};
  buf_add(&s, r->line, r->linelen);
  if (r->body) buf_add(&s, "\r\n", 2), buf_add(&s, r->body, r->n);
  buf_add(&s, "", 1);
  c->replies = realloc(c->replies, (size_t)(c->nreplies + 1) * sizeof *c->replies);
  if (!c->replies) abort();
  c->replies[c->nreplies++] = s.p;
  if (c->nreplies == c->group->ncmds) script_done(c);
}

static void emit_replies(Group *g, Conn *c) {
  Buf b = {0};
  buf_str(&b, "{\"id\":");
  buf_num(&b, (unsigned long long)g->id);
  buf_str(&b, ",\"ev\":\"replies\",\"replies\":[");
  for (int i = 0; i < c->nreplies; i++) {
    if (i) buf_add(&b, ",", 1);
    buf_json(&b, c->replies[i], strlen(c->replies[i]));
  }
  buf_str(&b, "]}");
  emit(&b);
}

static void script_done(Conn *c) {
  Group *g = c->group;
  for (int i = 0; i < g->ncmds; i++) {
    if (!*g->wants[i]) continue;
    Buf want = {0};
    subst(&want, g->wants[i], c->idx);
    buf_add(&want, "", 1);
    int ok = !strcmp(want.p, c->replies[i]);
    if (!ok) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s: expected \"%s\", got \"%.200s\"", g->cmds[i], want.p, c->replies[i]);
      buf_free(&want);
      return group_fail(g, msg);
    }
    buf_free(&want);
  }
  g->ready++;
  g->deadline = now_ms() + SETUP_MS;
  if (g->kind == G_QUERY) {
    emit_replies(g, c);
    conn_free_later(c);
    group_remove(g);
    return;
  }
  for (int i = 0; i < c->nreplies; i++) free(c->replies[i]);
  c->nreplies = 0;
  if (g->kind == G_RUN) {
    c->mode = M_LOAD;
    c->run = g->run;
    if (g->ready == g->n) {
      run_ready(g->run, g);
      group_remove(g);
      return;
    }
  } else {
    c->mode = M_IDLE;
    if (g->tail) {
      conn_send(c, g->tail, strlen(g->tail));
      conn_send(c, "\r\n", 2);
    }
    if (g->ready == g->n) {
      Buf b = {0};
      char t[64];
      buf_str(&b, "{\"id\":");
      buf_num(&b, (unsigned long long)g->id);
      snprintf(t, sizeof t, ",\"ev\":\"held\",\"ms\":%.3f,\"count\":", now_ms() - g->t0);
      buf_str(&b, t);
      buf_num(&b, (unsigned long long)g->n);
      buf_str(&b, "}");
      emit(&b);
    }
  }
  open_more(g);
}

void idle_event(Conn *c, const char *what) {
  Group *g = c->group;
  if (g->nerrors++ < 5) {
    if (g->errors.len) buf_add(&g->errors, ",", 1);
    buf_json(&g->errors, what, strlen(what));
  }
}

void setup_tick(double now) {
  while (g_dead) {
    Group *g = g_dead;
    g_dead = g->next;
    group_free(g);
  }
  for (Group *g = g_groups, *next; g; g = next) {
    next = g->next;
    if (g->ready < g->n && now > g->deadline) {
      char msg[160];
      snprintf(msg, sizeof msg, "setup timed out: %d of %d connections ready, none for %.0f s", g->ready, g->n,
               SETUP_MS / 1000);
      group_fail(g, msg);
    }
  }
}

void op_hold(const Msg *m) {
  Group *g = group_new(G_HOLD, (int)msg_num(m, "id", 0), msg_get(m, "host"), (int)msg_num(m, "port", 0),
                       (int)msg_num(m, "conns", 0), 128);
  const char *tag = msg_get(m, "tag"), *tail = msg_get(m, "tail");
  snprintf(g->tag, sizeof g->tag, "%s", tag ? tag : "");
  if (tail && *tail) g->tail = strdup(tail);
  add_msg_cmds(g, m);
  group_start(g);
}

void op_release(const Msg *m) {
  const char *tag = msg_get(m, "tag");
  Group *g = g_groups;
  while (g && !(g->kind == G_HOLD && tag && !strcmp(g->tag, tag))) g = g->next;
  Buf b = {0};
  buf_str(&b, "{\"id\":");
  buf_num(&b, (unsigned long long)msg_num(m, "id", 0));
  buf_str(&b, ",\"ev\":\"released\",\"errors\":[");
  if (g) buf_add(&b, g->errors.p, g->errors.len);
  buf_str(&b, "],\"count\":");
  buf_num(&b, g ? (unsigned long long)g->nerrors : 0);
  buf_str(&b, "}");
  emit(&b);
  if (!g) return;
  for (int i = 0; i < g->opened; i++) conn_free_later(g->conns[i]);
  group_remove(g);
}

void op_query(const Msg *m) {
  Group *g = group_new(G_QUERY, (int)msg_num(m, "id", 0), msg_get(m, "host"), (int)msg_num(m, "port", 0), 1, 1);
  add_msg_cmds(g, m);
  group_start(g);
}
