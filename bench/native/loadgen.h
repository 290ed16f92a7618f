// The native load generator (built by bench/native.ts with cc, driven by bench/gen.ts):
// one single-threaded epoll loop that drives beanstalkd connections, checks every
// reply and measures latency. Shared types of its three files:
//   io.c         event loop, sockets
//   text.c       buffers, JSON events on stdout, control lines on stdin, reply parser
//   setup.c      connection groups: setup scripts, hold/release, query
//   run.c        the measured runs: life, budget, histogram, a client's output
//   workloads.c  the workloads' closed loops (as bench/loadgen_drivers.ts)
#ifndef LOADGEN_H
#define LOADGEN_H

#include <stddef.h>

// ------------------------------------------------------------------ replies

// (not R_OK: unistd.h has one)
enum { BS_INSERTED = 1, BS_RESERVED, BS_DELETED, BS_FOUND, BS_NOT_FOUND, BS_TIMED_OUT, BS_OK, BS_USING, BS_WATCHING, BS_OTHER };

typedef struct {
  int kind;
  unsigned long long a; // job id (RESERVED/FOUND), number (INSERTED/WATCHING)
  size_t n;             // body length (RESERVED/FOUND/OK)
  const char *line;     // the reply line, without CRLF
  size_t linelen;
  const char *body; // NULL when the reply has none
} Reply;

// ------------------------------------------------------------------ buffers

typedef struct {
  char *p;
  size_t len, cap;
} Buf;

void buf_add(Buf *b, const void *d, size_t n);
void buf_str(Buf *b, const char *s);
void buf_num(Buf *b, unsigned long long v);
void buf_json(Buf *b, const char *s, size_t n); // a JSON string literal
void buf_free(Buf *b);

// ------------------------------------------------------------------ connections

enum { M_CONNECTING, M_SCRIPT, M_LOAD, M_IDLE };

struct Run;
struct Group;
typedef struct Run Run;

typedef struct Conn {
  int fd;
  int mode;
  int idx;                        // index within its group / run
  struct Group *group;            // M_CONNECTING, M_SCRIPT, M_IDLE
  struct Run *run;                // M_LOAD
  Buf rest;                       // unparsed tail of the last read
  Buf out;                        // bytes not yet written, from `outoff`
  size_t outoff;
  int wantout;                    // EPOLLOUT armed
  // load: a FIFO of the send times (ms) of the commands in flight
  double *times;
  unsigned tcap, th, tt, inflight;
  unsigned ocmds;                 // commands queued since the last flush
  unsigned puts;                  // puts to send at the next flush
  int done, rtt, step, producer, undelivered;
  // script: replies collected so far
  char **replies;
  int nreplies;
} Conn;

// io.c
extern int g_epoll;
void on_stdin(void);
extern double g_now; // when the read being parsed was made
double now_ms(void);
double cpu_ms(void);
void emit(Buf *b);                        // write one JSON event line (b ends without newline)
void emit_simple(int id, const char *ev); // {"id":id,"ev":ev}
void emit_error(int id, const char *msg);
Conn *conn_open(const char *host, int port, char *err, size_t errlen);
void conn_close(Conn *c);      // close the socket now
void conn_free_later(Conn *c); // close, and free at the end of this loop turn
void conn_send(Conn *c, const char *d, size_t n);
void conn_flush_out(Conn *c);
long parse_replies(Conn *c, const char *buf, size_t len, int (*on)(Conn *, const Reply *));

// ------------------------------------------------------------------ control messages

#define MAXF 64
typedef struct {
  int n;
  char *k[MAXF], *v[MAXF];
} Msg;
const char *msg_get(const Msg *m, const char *key);
double msg_num(const Msg *m, const char *key, double dflt);

// setup.c: groups of connections being opened and scripted
typedef struct Group {
  int kind; // G_RUN, G_HOLD, G_QUERY
  int id;
  char host[64];
  int port, n, opened, ready, par, failed;
  int *ports, nports; // run: connection i goes to ports[i % nports] (several nodes); none: to port
  char **cmds, **wants; // a want of "" accepts any reply
  int ncmds;
  char *tail;
  Conn **conns;
  double t0, deadline;
  char tag[64];
  Buf errors; // hold: JSON strings of errors seen on idle connections, comma separated
  int nerrors;
  struct Run *run;
  struct Group *next;
} Group;
enum { G_RUN, G_HOLD, G_QUERY };

Group *group_new(int kind, int id, const char *host, int port, int n, int par);
void group_add_cmd(Group *g, const char *cmd, const char *want);
void group_start(Group *g);
void group_fail(Group *g, const char *msg);
int groups_active(void);
void script_begin(Conn *c); // connected: send the group's setup commands
void script_reply(Conn *c, const Reply *r);
void idle_event(Conn *c, const char *what);
void setup_tick(double now);
void op_hold(const Msg *m);
void op_release(const Msg *m);
void op_query(const Msg *m);

// ------------------------------------------------------------------ runs

enum { K_PUT, K_RD, K_E2E, K_MIX };

// bench/hist.ts's buckets, so that the coordinator merges ours with no conversion:
// 0.1 µs units, exact below 12.8 µs, then 64 sub-buckets per power of two
#define SUB 64
#define LINEAR (2 * SUB)
#define HSIZE (LINEAR + 25 * SUB)

typedef struct {
  double counts[HSIZE];
  double n, max;
} Hist;

struct Run {
  int id, kind, n, depth, body, producers, window, sync;
  double duration, warmup;
  long long budget; // jobs still to start; LLONG_MAX = no limit
  Conn **c;
  long long ops, jobs, produced, delivered;
  int errors, nsamples, nnotes, measuring, stopped, finished, ready, started, go, active, producers_active;
  Buf samples, notes; // JSON strings, comma separated
  double deadline, t0, tlast, warmend, hardstop, cpu0;
  char *put, *batch; // one put command; `depth` of them back to back
  size_t putlen;
  char stats[160];
  Hist hist;
  struct Run *next;
};

// run.c
void hist_add(Hist *h, double us);
void note(Buf *list, int *count, const char *s);
void finish(Run *r);
void fail(Run *r, Conn *c, const char *msg); // an error; c (when given) is done
void bad(Conn *c, const char *what, const Reply *rep);
int take(Run *r, int k, double now);
void finish_if_idle(Conn *c);
void start_measuring(Run *r, double now);
void add(Conn *c, const char *s, size_t n); // queue one command
void add_delete(Conn *c, unsigned long long id);
void op_run(const Msg *m);
void op_go(const Msg *m);
void run_ready(struct Run *r, Group *g); // every connection of the run is set up
void run_setup_failed(struct Run *r);
void load_flush(Conn *c);
void run_tick(double now);
void run_reap(void); // finished runs: report and free
int runs_active(void);

// workloads.c
void start_client(Run *r, Conn *c, double now); // queue a client's first commands (mix: of its next cycle)
int load_reply(Conn *c, const Reply *r);
void load_closed(Conn *c, const char *why);

#endif
