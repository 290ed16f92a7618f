// What goes in and out as text: growable buffers, the JSON events written to
// stdout (the events bench/loadgen.ts sends), the control lines read from stdin
// (tab-separated key=value fields, see msg_parse) and beanstalkd's replies.
#include "loadgen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ------------------------------------------------------------------ buffers and JSON

void buf_add(Buf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    b->p = realloc(b->p, cap);
    if (!b->p) abort();
    b->cap = cap;
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

void buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_num(Buf *b, unsigned long long v) {
  char t[24];
  buf_add(b, t, (size_t)snprintf(t, sizeof t, "%llu", v));
}

void buf_json(Buf *b, const char *s, size_t n) {
  buf_add(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      buf_add(b, "\\", 1);
      buf_add(b, &s[i], 1);
    } else if (ch < 0x20 || ch >= 0x7f) {
      // bytes, not UTF-8: the JS generator reads replies as latin1, so do the same
      char t[8];
      buf_add(b, t, (size_t)snprintf(t, sizeof t, "\\u%04x", ch));
    } else {
      buf_add(b, &s[i], 1);
    }
  }
  buf_add(b, "\"", 1);
}

void buf_free(Buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

void emit(Buf *b) {
  buf_add(b, "\n", 1);
  for (size_t off = 0; off < b->len;) {
    ssize_t k = write(1, b->p + off, b->len - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) exit(1); // the coordinator is gone
    off += (size_t)k;
  }
  buf_free(b);
}

void emit_simple(int id, const char *ev) {
  Buf b = {0};
  buf_str(&b, "{\"id\":");
  buf_num(&b, (unsigned long long)id);
  buf_str(&b, ",\"ev\":\"");
  buf_str(&b, ev);
  buf_str(&b, "\"}");
  emit(&b);
}

void emit_error(int id, const char *msg) {
  Buf b = {0};
  buf_str(&b, "{\"id\":");
  buf_num(&b, (unsigned long long)id);
  buf_str(&b, ",\"ev\":\"error\",\"message\":");
  buf_json(&b, msg, strlen(msg));
  buf_str(&b, "}");
  emit(&b);
}

// ------------------------------------------------------------------ control messages

const char *msg_get(const Msg *m, const char *key) {
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->k[i], key)) return m->v[i];
  return NULL;
}

double msg_num(const Msg *m, const char *key, double dflt) {
  const char *v = msg_get(m, key);
  return v && *v ? strtod(v, NULL) : dflt;
}

/** Split `op=run\tid=3\t...` in place; a key may repeat (cmd=, want=: kept in order). */
static void msg_parse(char *line, Msg *m) {
  m->n = 0;
  for (char *f = line; f && m->n < MAXF;) {
    char *tab = strchr(f, '\t');
    if (tab) *tab = 0;
    char *eq = strchr(f, '=');
    if (eq) {
      *eq = 0;
      m->k[m->n] = f;
      m->v[m->n++] = eq + 1;
    }
    f = tab ? tab + 1 : NULL;
  }
}

static void handle_line(char *line) {
  Msg m;
  msg_parse(line, &m);
  const char *op = msg_get(&m, "op");
  int id = (int)msg_num(&m, "id", 0);
  if (!op) return;
  if (!strcmp(op, "run")) op_run(&m);
  else if (!strcmp(op, "go")) op_go(&m);
  else if (!strcmp(op, "hold")) op_hold(&m);
  else if (!strcmp(op, "release")) op_release(&m);
  else if (!strcmp(op, "query")) op_query(&m);
  else if (!strcmp(op, "exit")) exit(0);
  else emit_error(id, "unknown op");
}

static Buf g_in;

void on_stdin(void) {
  char t[65536];
  ssize_t k = read(0, t, sizeof t);
  if (k == 0) exit(0); // the coordinator closed our stdin
  if (k < 0) {
    if (errno == EINTR || errno == EAGAIN) return;
    exit(1);
  }
  buf_add(&g_in, t, (size_t)k);
  size_t start = 0;
  for (size_t i = 0; i < g_in.len; i++) {
    if (g_in.p[i] != '\n') continue;
    g_in.p[i] = 0;
    if (i > start) handle_line(g_in.p + start);
    start = i + 1;
  }
  memmove(g_in.p, g_in.p + start, g_in.len - start);
  g_in.len -= start;
}


// ------------------------------------------------------------------ replies

static int starts(const char *p, const char *end, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

/** An unsigned decimal from p up to a space or `end`; sets *stop; -1 if malformed. */
static long long num(const char *p, const char *end, const char **stop) {
  const char *q = p;
  unsigned long long v = 0;
  while (q < end && *q != ' ') {
    if (*q < '0' || *q > '9') return -1;
    v = v * 10 + (unsigned)(*q++ - '0');
  }
  *stop = q;
  return q == p ? -1 : (long long)v;
}

long parse_replies(Conn *c, const char *buf, size_t len, int (*on)(Conn *, const Reply *)) {
  size_t pos = 0;
  while (pos < len) {
    const char *s = buf + pos, *end = buf + len;
    const char *cr = memchr(s, '\r', len - pos);
    if (!cr || cr + 1 >= end) break;
    if (cr[1] != '\n') return -1 - (long)pos;
    Reply r = {.kind = BS_OTHER, .line = s, .linelen = (size_t)(cr - s)};
    const char *q;
    long long a, n;
    if (starts(s, cr, "INSERTED ") && (a = num(s + 9, cr, &q)) >= 0 && q == cr) {
      r.kind = BS_INSERTED, r.a = (unsigned long long)a;
    } else if ((starts(s, cr, "RESERVED ") && (a = num(s + 9, cr, &q)) >= 0) ||
               (starts(s, cr, "FOUND ") && (a = num(s + 6, cr, &q)) >= 0)) {
      if (q < cr && (n = num(q + 1, cr, &q)) >= 0 && q == cr)
        r.kind = *s == 'R' ? BS_RESERVED : BS_FOUND, r.a = (unsigned long long)a, r.n = (size_t)n;
    } else if (cr - s == 7 && starts(s, cr, "DELETED")) {
      r.kind = BS_DELETED;
    } else if (cr - s == 9 && starts(s, cr, "NOT_FOUND")) {
      r.kind = BS_NOT_FOUND;
    } else if (cr - s == 9 && starts(s, cr, "TIMED_OUT")) {
      r.kind = BS_TIMED_OUT;
    } else if (starts(s, cr, "OK ") && (n = num(s + 3, cr, &q)) >= 0 && q == cr) {
      r.kind = BS_OK, r.n = (size_t)n;
    } else if (starts(s, cr, "USING ") && cr - s > 6) {
      r.kind = BS_USING;
    } else if (starts(s, cr, "WATCHING ") && (a = num(s + 9, cr, &q)) >= 0 && q == cr) {
      r.kind = BS_WATCHING, r.a = (unsigned long long)a;
    }
    size_t next = (size_t)(cr + 2 - buf);
    if (r.kind == BS_RESERVED || r.kind == BS_FOUND || r.kind == BS_OK) {
      r.body = cr + 2;
      next += r.n + 2;
      if (next > len) break;
      if (buf[next - 2] != '\r' || buf[next - 1] != '\n') return -1 - (long)pos;
    }
    pos = next;
    if (on(c, &r)) break; // the connection is done with: ignore the rest
  }
  return (long)pos;
}

