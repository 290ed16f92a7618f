// The native generator's event loop and its sockets: non-blocking connect, one
// read per readiness event (level-triggered, so a busy connection cannot starve the
// others), writes that park the unwritten rest until EPOLLOUT.
#define _GNU_SOURCE
#include "loadgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int g_epoll;
double g_now;

double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double cpu_ms(void) {
  // user + system time of this process, at nanosecond resolution (not clock ticks)
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// ------------------------------------------------------------------ sockets

static Conn **g_garbage; // closed this turn, freed at its end
static size_t g_ngarbage, g_capgarbage;

static void set_events(Conn *c, unsigned ev) {
  struct epoll_event e = {.events = ev, .data.ptr = c};
  epoll_ctl(g_epoll, EPOLL_CTL_MOD, c->fd, &e);
}

Conn *conn_open(const char *host, int port, char *err, size_t errlen) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    snprintf(err, errlen, "bad address %s", host);
    return NULL;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return NULL;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); // we batch writes ourselves; Nagle only delays
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
    snprintf(err, errlen, "connect %s:%d: %s", host, port, strerror(errno));
    close(fd);
    return NULL;
  }
  Conn *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->fd = fd;
  c->mode = M_CONNECTING;
  struct epoll_event e = {.events = EPOLLOUT, .data.ptr = c};
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, fd, &e);
  return c;
}

void conn_close(Conn *c) {
  if (c->fd < 0) return;
  epoll_ctl(g_epoll, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
}

/** Free at the end of this loop turn: an event for it may still be in this turn's batch. */
void conn_free_later(Conn *c) {
  conn_close(c);
  if (g_ngarbage == g_capgarbage) {
    g_capgarbage = g_capgarbage ? g_capgarbage * 2 : 1024;
    g_garbage = realloc(g_garbage, g_capgarbage * sizeof *g_garbage);
    if (!g_garbage) abort();
  }
  g_garbage[g_ngarbage++] = c;
}

static void conn_free(Conn *c) {
  buf_free(&c->rest);
  buf_free(&c->out);
  free(c->times);
  for (int i = 0; i < c->nreplies; i++) free(c->replies[i]);
  free(c->replies);
  free(c);
}

static void collect_garbage(void) {
  for (size_t i = 0; i < g_ngarbage; i++) conn_free(g_garbage[i]);
  g_ngarbage = 0;
}

/** The connection failed or the server closed it: its owner decides what that means. */
static void conn_lost(Conn *c, const char *why) {
  if (c->fd < 0) return;
  char t[256];
  if (c->mode == M_LOAD) {
    snprintf(t, sizeof t, "connection lost: %s", why);
    load_closed(c, t);
  } else if (c->mode == M_IDLE) {
    snprintf(t, sizeof t, "idle connection closed: %s", why);
    idle_event(c, t);
    conn_close(c);
  } else {
    snprintf(t, sizeof t, "connection %d: %s", c->idx, why);
    group_fail(c->group, t);
  }
}

void conn_flush_out(Conn *c) {
  while (c->outoff < c->out.len) {
    ssize_t k = write(c->fd, c->out.p + c->outoff, c->out.len - c->outoff);
    if (k > 0) {
      c->outoff += (size_t)k;
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && errno == EAGAIN) {
      break;
    } else {
      conn_lost(c, k < 0 ? strerror(errno) : "write returned 0");
      return;
    }
  }
  if (c->outoff == c->out.len) {
    c->out.len = c->outoff = 0;
    if (c->wantout) set_events(c, EPOLLIN);
    c->wantout = 0;
  } else if (!c->wantout) {
    set_events(c, EPOLLIN | EPOLLOUT);
    c->wantout = 1;
  }
}

void conn_send(Conn *c, const char *d, size_t n) {
  if (c->fd < 0) return;
  if (c->out.len == c->outoff) {
    // nothing parked: write straight from the caller's bytes, park only the rest
    ssize_t k;
    do k = write(c->fd, d, n);
    while (k < 0 && errno == EINTR);
    if (k < 0 && errno != EAGAIN) return conn_lost(c, strerror(errno));
    if (k > 0) d += k, n -= (size_t)k;
    if (!n) return;
  }
  buf_add(&c->out, d, n);
  conn_flush_out(c);
}

static int on_reply(Conn *c, const Reply *r) {
  if (c->mode == M_LOAD) return load_reply(c, r);
  if (c->mode == M_SCRIPT) script_reply(c, r);
  else idle_event(c, "unexpected reply on an idle connection");
  return c->fd < 0;
}

static void on_readable(Conn *c) {
  static char t[65536];
  ssize_t k = read(c->fd, t, sizeof t);
  if (k < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (k <= 0) return conn_lost(c, k == 0 ? "closed by the server" : strerror(errno));
  g_now = now_ms();
  const char *p = t;
  size_t len = (size_t)k;
  if (c->rest.len) {
    buf_add(&c->rest, t, len);
    p = c->rest.p, len = c->rest.len;
  }
  long used = parse_replies(c, p, len, on_reply);
  if (c->fd < 0) return;
  if (used < 0) {
    char msg[160];
    long at = -1 - used;
    snprintf(msg, sizeof msg, "malformed reply: %.60s", p + at);
    if (c->mode == M_LOAD) return load_closed(c, msg);
    return conn_lost(c, msg);
  }
  // keep the partial reply for the next read (memmove: p may be rest itself)
  size_t left = len - (size_t)used;
  if (p == c->rest.p) memmove(c->rest.p, p + used, left), c->rest.len = left;
  else if (left) buf_add(&c->rest, p + used, left);
  if (c->mode == M_LOAD) load_flush(c);
}

static void on_event(Conn *c, unsigned ev) {
  if (c->fd < 0) return;
  if (c->mode == M_CONNECTING) {
    int err = 0;
    socklen_t l = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
    if (err) return conn_lost(c, strerror(err));
    set_events(c, EPOLLIN);
    c->mode = M_SCRIPT;
    script_begin(c);
    return;
  }
  if (ev & EPOLLOUT) conn_flush_out(c);
  if (c->fd >= 0 && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable(c);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN); // a write to a closed socket is an error to report, not a death
  g_epoll = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, 0, &e);
  printf("{\"ev\":\"hello\",\"transport\":\"epoll\",\"runtime\":\"native\"}\n");
  fflush(stdout);
  struct epoll_event evs[512];
  for (;;) {
    // the watchdogs (warm-up end, deadline, stalls) tick every 50 ms, as loadgen.ts's
    int n = epoll_wait(g_epoll, evs, 512, runs_active() || groups_active() ? 50 : -1);
    for (int i = 0; i < n; i++) {
      if (!evs[i].data.ptr) on_stdin();
      else on_event(evs[i].data.ptr, evs[i].events);
    }
    double now = now_ms();
    run_tick(now);
    setup_tick(now);
    run_reap();
    collect_garbage();
  }
}
