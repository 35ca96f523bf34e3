#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

/*
 * trainagent, the node daemon (docs/agent-protocol.md). One thread and one
 * poll loop (loop.c) serve everything: the signal self-pipe, the stdout
 * and stderr pipes of every child, the report pipes of the staging and
 * packing workers (task.c), pidfds of processes adopted after a restart,
 * and libcurl's sockets (http.c). Everything the daemon knows lives in one
 * struct agent_ctx, passed first to every function.
 *
 * Files: config.c (command line), loop.c (the loop, signals, reaping),
 * http.c (libcurl multi), session.c (register, work long-poll, status
 * heartbeat, log shipping, self-fencing), logq.c (the bounded log queue),
 * assign.c (desired vs actual: the per-assignment state machine),
 * supervise.c (output, exits, adoption after a restart),
 * jobdir.c (job directories and state.json), launch.c (argv and
 * environment of a rank), pyenv.c (requirements.txt), task.c + stage.c +
 * upload.c (the forked workers and artifact upload), proc.c (fork/exec of
 * one process), lines.c (line splitting).
 */
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/lines.h"
#include "agent/proc.h"
#include "agent/telemetry.h"
#include "api/agent_proto.h"
#include "common/buf.h"
#include "storage/storage.h"

#define AGENT_VERSION "0.1.0"

/* --- config.c ---------------------------------------------------------- */

/*
 * Built in three steps as OpenSSH's servconf.c: agent_config_init() marks
 * every field unset (-1 or NULL), agent_config_parse_args() fills in the
 * command line, agent_config_fill_defaults() the rest.
 */
struct agent_config {
	char *controller; /* base URL, no trailing slash */
	char *host;
	char *work_dir;
	int cpus;
	int gpus;
	char *address; /* NULL until found: see session.c */
	int token_stdin;
	int keep_jobs;
	int verbose;
	char *ca_file; /* --ca-file: what the controller's TLS is checked
			* against (pinned at provisioning), NULL: system CAs */
	long telemetry_ms; /* --telemetry-ms: sampling interval, 0: off */
};

void agent_config_init(struct agent_config *cfg);

/*
 * Parses argv. Returns 0, or ERR_INVALID with err explaining (the caller
 * prints usage and exits 2). --help prints usage and exits 0.
 */
int agent_config_parse_args(struct agent_config *cfg, int argc, char **argv,
			    struct buf *err);

/* Supplies defaults for what is still unset; may run nvidia-smi. */
void agent_config_fill_defaults(struct agent_config *cfg);

/* Checks required options. Returns 0 or ERR_INVALID with err. */
int agent_config_check(const struct agent_config *cfg, struct buf *err);

void agent_config_release(struct agent_config *cfg);
void agent_usage(void);

/* --- task.c: a forked worker reporting through a pipe ------------------- */

/*
 * Staging and packing run in a forked child of the agent (no exec) so the
 * poll loop never blocks on a download or on compressing a model. The
 * child writes text lines into its report pipe ("phase downloading",
 * "log ...", "error ...", "ok") and exits; see task.c for why a process
 * rather than a thread.
 */
/* The Unix user a job's processes run as (agent/ident.c). */
#define AGENT_IDENT_MAX_GROUPS 256
struct agent_ident {
	int set; /* 0: the agent's own user */
	uid_t uid;
	gid_t gid;
	gid_t groups[AGENT_IDENT_MAX_GROUPS];
	int n_groups;
};

/* Looks up user on this host (NULL: *id unset). 0 or ERR_INVALID. */
int agent_ident_lookup(const char *user, struct agent_ident *id,
		       struct buf *err);
/* Looks user up once: nothing to do when *id is set or user is NULL. */
int agent_ident_resolve(struct agent_ident *id, const char *user,
			struct buf *err);
/* In a child: becomes id for good. 0, or -1 with errno. */
int agent_ident_become(const struct agent_ident *id);
/* Gives path and everything under it (symlinks not followed) to id;
 * mode (when not 0) for path itself. 0 or ERR_IO. */
int agent_ident_chown_tree(const char *path, const struct agent_ident *id,
			   int mode, struct buf *err);

typedef int agent_task_fn(void *arg, int report_fd);

struct agent_task {
	pid_t pid;	      /* -1 when none */
	uint64_t start_ticks; /* kernel start time (lease.c); 0: unknown */
	int fd;		      /* report pipe read end, -1 after EOF */
	int reaped;	      /* 1 once waited for */
	int status;	      /* wait status */
	struct agent_lines lines;
};

void agent_task_init(struct agent_task *t);
/* Runs fn(arg) in a worker process, as id when id is set. */
int agent_task_start(struct agent_task *t, agent_task_fn *fn, void *arg,
		     const struct agent_ident *id, struct buf *err);
/* Reaps without blocking; returns 1 once reaped. */
int agent_task_reap(struct agent_task *t);
/* SIGKILLs the worker's process group. */
void agent_task_kill(struct agent_task *t);
/* 1 when a worker exists and has not finished (pipe open or not reaped). */
int agent_task_busy(const struct agent_task *t);
void agent_task_release(struct agent_task *t);
/* In the worker: writes one report line ("%s\n"). */
void agent_task_say(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* --- http.c: libcurl's multi interface on our poll loop ----------------- */

struct agent_ctx;
struct agent_req;

typedef void agent_req_fn(struct agent_ctx *ctx, struct agent_req *req);

struct agent_req {
	void *easy; /* CURL * */
	void *headers;
	struct buf body; /* request body */
	struct buf resp; /* response body, capped */
	int upload_fd;	 /* PUT from this file, or -1 */
	int64_t sent_ms; /* monotonic: when it was started */
	long status;	 /* HTTP status; 0 when the transfer failed */
	int curl_code;
	int os_errno; /* of a failed connect (CURLINFO_OS_ERRNO) */
	char errbuf[256];
	agent_req_fn *done;
	void *data;
	struct agent_req *next;
};

struct agent_http_sock {
	int fd;
	int what; /* CURL_POLL_* */
};

struct agent_http {
	void *multi; /* CURLM * */
	struct agent_http_sock *socks;
	size_t n_socks;
	size_t alloc_socks;
	int64_t timer_at; /* monotonic ms; -1 none */
	struct agent_req *reqs;
	char *auth;	/* "Authorization: Bearer ..." */
	char *base;	/* controller URL */
	char *local_ip; /* learnt from the first completed request */
};

int agent_http_init(struct agent_ctx *ctx, struct buf *err);
void agent_http_release(struct agent_ctx *ctx);

/*
 * Starts a request to base + path. body (may be NULL) is copied. Calls
 * done exactly once, from the loop, unless cancelled; the request is freed
 * after done returns. timeout_ms 0: none (only a low-speed limit).
 */
struct agent_req *agent_http_start(struct agent_ctx *ctx, const char *method,
				   const char *path, const char *body,
				   size_t len, int64_t timeout_ms,
				   agent_req_fn *done, void *data);

/* PUT of the file fd (size bytes) streamed with a read callback. Takes fd. */
struct agent_req *agent_http_put_file(struct agent_ctx *ctx, const char *path,
				      int fd, int64_t size, agent_req_fn *done,
				      void *data);

/* Drops a request without calling done. */
void agent_http_cancel(struct agent_ctx *ctx, struct agent_req *req);

/* The loop's side: the poll events a socket waits for, events, the
 * timer. */
short agent_http_sock_events(const struct agent_http_sock *sock);
void agent_http_event(struct agent_ctx *ctx, int fd, short revents);
void agent_http_timeout(struct agent_ctx *ctx);

/* --- logq.c: the bounded queue of log lines ----------------------------- */

struct agent_logq_entry {
	struct agent_logq_entry *next;
	struct api_log_line line;
	size_t cost;	       /* bytes of memory and (about) of JSON */
	uint64_t marker_count; /* a "lines dropped" marker for that many */
	int64_t queued_ms;     /* monotonic */
};

struct agent_logq_drop {
	struct agent_logq_drop *next;
	char *job;
	char *uid; /* may be NULL */
	int attempt;
	char *algo;
	uint64_t n;
};

struct agent_logq {
	struct agent_logq_entry *head;
	struct agent_logq_entry *tail;
	size_t n;
	size_t bytes;	   /* of every queued entry */
	size_t inflight_n; /* the first inflight_n entries are being sent */
	struct agent_logq_entry *inflight_last; /* the last of them */
	size_t inflight_bytes;
	size_t max_bytes;
	struct agent_logq_drop *drops;
	uint64_t dropped_total;
	/* The batch in flight as sent, its number, and whether it is to be
	 * sent again as it is (nacked): a batch sent again is the same
	 * bytes with the same seq, so the controller stores it once. */
	struct buf inflight_body;
	int64_t seq;
	int resend;
};

#define AGENT_LOGQ_MAX (16u << 20)
#define AGENT_LOGQ_BATCH_MAX (1u << 20)
#define AGENT_LOGQ_FLUSH_BYTES (64u << 10)
#define AGENT_LOGQ_FLUSH_MS 50

void agent_logq_init(struct agent_logq *q, size_t max_bytes);

/* Queues a copy of one line; drops the oldest unsent lines past max. */
void agent_logq_push(struct agent_logq *q, const char *job, const char *uid,
		     int attempt, const char *algo, int rank, int is_stderr,
		     int64_t ts_ms, const char *text, size_t len,
		     int64_t now_mono);

/* Bytes and age (monotonic ms of the oldest) of what is not in flight. */
size_t agent_logq_unsent_bytes(const struct agent_logq *q);
int64_t agent_logq_oldest_unsent(const struct agent_logq *q);

/*
 * Marks the oldest unsent lines (up to AGENT_LOGQ_BATCH_MAX of JSON, drop
 * markers first) as in flight and appends their JSON batch, named by
 * boot_id and the next seq, to out. After a nack it appends the batch in
 * flight again, unchanged. Returns the number of lines taken (0: nothing
 * to send).
 */
size_t agent_logq_take(struct agent_logq *q, const char *boot_id,
		       int64_t now_ms, struct buf *out);

/* The batch in flight was delivered (ack) or not (nack: the next take
 * sends the same batch again). */
void agent_logq_ack(struct agent_logq *q);
void agent_logq_nack(struct agent_logq *q);

void agent_logq_release(struct agent_logq *q);

/* --- assign.c: one assignment's actual state ---------------------------- */

enum agent_task_kind {
	AGENT_TASK_NONE = 0,
	AGENT_TASK_STAGE, /* checkpoint restore, channels, code */
	AGENT_TASK_SYNC,  /* checkpoint folder -> checkpoint URI */
	AGENT_TASK_PACK	  /* final checkpoint sync, then the two tar.gz */
};

/*
 * How often a running assignment's checkpoint folder is mirrored, and the
 * least time between two mirrors when files keep completing.
 */
#define AGENT_CKPT_SYNC_MS 2000
#define AGENT_CKPT_SYNC_MIN_MS 100

/* ckptwatch.c: the checkpoint folder's complete files (inotify). */
struct agent_ckpt_watch_dir {
	int wd;
	char *rel; /* "" for the folder itself */
};

struct agent_ckpt_watch {
	int fd; /* inotify, -1 when not watching */
	char *root;
	struct agent_ckpt_watch_dir *dirs;
	size_t n_dirs;
	size_t alloc_dirs;
	/* Keys relative to root, sorted, with size and mtime when complete. */
	struct stor_list complete;
	int news; /* a file completed since the last read */
};

void agent_ckpt_watch_init(struct agent_ckpt_watch *w);
/* Starts watching root and its subfolders. Returns 0 or -1 with err. */
int agent_ckpt_watch_start(struct agent_ckpt_watch *w, const char *root,
			   struct buf *err);
/* Reads pending events; returns 1 when a file completed. */
int agent_ckpt_watch_read(struct agent_ckpt_watch *w);
void agent_ckpt_watch_stop(struct agent_ckpt_watch *w);

enum agent_upload_step {
	AGENT_UP_NONE = 0,
	AGENT_UP_PACKING,
	AGENT_UP_MODEL,
	AGENT_UP_OUTPUT,
	AGENT_UP_FINISHED
};

/* The last lines a rank wrote, for the failure reason. */
#define AGENT_TAIL_LINES 3
#define AGENT_TAIL_LEN 240

struct agent_rank {
	struct agent_proc proc;
	uint64_t start_ticks; /* kernel start time, for the watchdog */
	struct agent_lines out;
	struct agent_lines err;
	char tail[AGENT_TAIL_LINES][AGENT_TAIL_LEN + 1];
	int tail_next; /* ring position */
	int tail_n;
	int rank;
	int pidfd;   /* adopted processes: watched through a pidfd */
	int adopted; /* not our child: no pipes, exit status unknown */
};

struct agent_assign {
	struct agent_assign *next;
	/* Identity: a job of the same name created after this one was
	 * deleted has another uid, and is another assignment. */
	char *job;
	char *job_uid; /* may be NULL (an older controller) */
	int attempt;
	char *algo;
	/* Desired: the last copy from the controller. */
	struct api_assignment spec;
	int have_spec;
	int desired; /* present in the last work answer */
	enum api_action action;
	/* Actual. */
	char *dir; /* NULL for an assignment we never prepared */
	enum api_phase phase;
	int64_t started_ms;
	struct agent_rank *ranks;
	size_t n_ranks;
	char *failure;
	char *error;
	int bound;		  /* ranks see the job dir at /opt/ml */
	char *netiso_procs;	  /* isolated: cgroup.procs the ranks join */
	struct agent_ident ident; /* spec.run_as on this host */
	/* Workers and upload. */
	struct agent_task task;
	/* Pipe mode's writer while the ranks run (pipe.c), apart from
	 * the staging, sync and pack worker in task. */
	struct agent_task pipe;
	enum agent_task_kind task_kind;
	char *task_error;
	int task_ok; /* the worker said "ok" */
	int staged;  /* staging succeeded: ready to launch */
	int restage; /* adopted while staging: stage again */
	enum agent_upload_step up_step;
	struct agent_req *up_req;
	int up_tries;
	int64_t up_retry_at;
	/* Stopping. */
	int term_sent;
	int64_t kill_at; /* monotonic; 0 none */
	int kill_sent;
	int fenced;
	int64_t sync_at;      /* monotonic: next checkpoint mirror */
	int64_t sync_started; /* monotonic: when the last one began */
	struct agent_ckpt_watch watch;
	/* The ranks ended: one more mirror with every file final is due. */
	int final_sync_due;
	/* Bookkeeping. */
	int changed;	     /* state.json and a status report are due */
	int final_in_flight; /* a status POST carrying the final state */
	int final_acked;     /* ... has been accepted: we may forget it */
	struct agent_tm_prev tm_prev; /* telemetry.c: its ranks' CPU ticks */
};

/* --- session.c: the conversation with the controller --------------------- */

struct agent_session {
	int registered;
	int warned; /* a failure was logged since the last registration */
	struct agent_req *reg_req;
	struct agent_req *work_req;
	struct agent_req *status_req;
	struct agent_req *log_req;
	int64_t backoff_ms;
	int64_t register_at; /* monotonic: next register attempt */
	int64_t work_at;     /* monotonic: next work poll */
	int64_t log_at;	     /* monotonic: earliest next log POST */
	int64_t log_sent_ms; /* monotonic: when the last log POST began */
	int64_t heartbeat_ms;
	int64_t deadline_ms;
	int64_t last_contact; /* monotonic: last 2xx from the controller */
	/* monotonic: the send time of the last acknowledged request that the
	 * controller counts as a sign of life (register, work, status), or
	 * of one its machine refused; the lease runs from here (lease.c) */
	int64_t lease_base;
	/* monotonic: the controller's machine last answered (any HTTP
	 * status, or a refused connection: up, its trainctld down) */
	int64_t last_reachable;
	int64_t hold_since; /* monotonic: a report waits for logs (session.c) */
	int hold_flushed;   /* the logs queued at hold_since were sent */
	int64_t next_status; /* monotonic */
	int status_dirty;
	int64_t work_version;
	int have_work;		  /* a work answer arrived since start */
	struct api_work *pending; /* not yet applied */
	int fenced;
};

void agent_session_init(struct agent_ctx *ctx);
/* Sends what is due; called once per loop turn. */
void agent_session_tick(struct agent_ctx *ctx, int64_t now);
/*
 * Self-fencing, first thing every turn (before any exit is acted on):
 * once the lease has run out every running process is killed and the
 * assignments are marked fenced (no checkpoint of theirs is stored).
 */
void agent_session_check_lease(struct agent_ctx *ctx, int64_t now);
/* Monotonic ms at which the host's lease ends. */
int64_t agent_session_lease_end(const struct agent_ctx *ctx);
/* Earliest monotonic time something is due (INT64_MAX: nothing). */
int64_t agent_session_next(struct agent_ctx *ctx);
void agent_session_release(struct agent_ctx *ctx);
/*
 * A request failed in a way that means the controller lost us (or we it):
 * register again, after the backoff. what names the request for the log.
 */
void agent_session_lost(struct agent_ctx *ctx, const char *what,
			const struct agent_req *req);

/* --- the context ---------------------------------------------------------- */

enum agent_poll_kind {
	AGENT_POLL_SIGNAL = 1,
	AGENT_POLL_CURL,
	AGENT_POLL_OUT,
	AGENT_POLL_ERR,
	AGENT_POLL_PIDFD,
	AGENT_POLL_TASK,
	AGENT_POLL_WATCH,
	AGENT_POLL_IMAGES,
	AGENT_POLL_PIPE
};

struct agent_pollref {
	enum agent_poll_kind kind;
	struct agent_assign *a;
	size_t rank;
};

/* --- lease.c: the lease and its watchdog -------------------------------- */

#define AGENT_LEASE_PROCS 240

struct agent_lease_page;

struct agent_lease {
	int fd;
	struct agent_lease_page *page; /* <work-dir>/lease, shared */
	uint64_t fired_seen;
	int64_t check_at; /* monotonic: next look at the watchdog */
};

/* The lease ends this long before the controller's host deadline. */
int64_t agent_lease_margin_ms(int64_t deadline_ms);
/* Maps the lease file and starts the watchdog unless one runs. */
int agent_lease_open(struct agent_ctx *ctx, struct buf *err);
/*
 * Publishes the lease's end (until: monotonic ms, the session's) and the
 * processes it guards (every turn).
 */
void agent_lease_sync(struct agent_ctx *ctx, int64_t now, int64_t until);
/* A clean exit: nothing to guard, and the watchdog leaves. */
void agent_lease_close(struct agent_ctx *ctx);
/* `trainagent watchdog WORK_DIR` */
int agent_watchdog_main(int argc, char **argv);
/* /proc/<pid>/stat's starttime; 0 when there is no such process. */
uint64_t agent_proc_start_ticks(pid_t pid);

/* --- netiso.c: EnableNetworkIsolation ----------------------------------- */

/*
 * Puts the assignment's ranks behind the firewall: a cgroup they join
 * (a->netiso_procs) whose traffic reaches only the job's hosts and
 * loopback, never the controller (whose URL is controller). Returns 0,
 * or an error code with err saying why (nothing is left set up then).
 */
int agent_netiso_setup(const char *controller, struct agent_assign *a,
		       struct buf *err);
/* Removes the rules and the cgroup (also those of an earlier agent). */
void agent_netiso_teardown(struct agent_assign *a);

/* --- images.c: the host's container images ------------------------------ */

struct agent_images {
	struct agent_task task; /* a worker: prune (when asked), then list */
	int64_t want;		/* the controller's latest prune request */
	int64_t done;		/* the last request done */
	int64_t running;	/* the request the worker does, 0: list only */
	int refresh;		/* a list is due (start, after a pull) */
	char *list;		/* the last list (JSON array), NULL: none yet */
	char *next;		/* the worker's list, until it has ended */
	int unsent;		/* list not yet delivered with a status */
	int in_flight;		/* ... the status in flight carries it */
};

struct agent_ctx;
void agent_images_init(struct agent_ctx *ctx);
/* Starts a worker when a list or a prune is due (every turn). */
void agent_images_tick(struct agent_ctx *ctx);
/* Its report pipe is readable. */
void agent_images_on_task(struct agent_ctx *ctx);
/* Reaps pid if it is the worker: 1, else 0. */
int agent_images_reap(struct agent_ctx *ctx, pid_t pid);
void agent_images_release(struct agent_ctx *ctx);

struct agent_ctx {
	struct agent_config cfg;
	struct agent_images images;
	char **argv; /* main's, for the watchdog to start the agent again */
	struct agent_lease lease;
	char *token;
	char boot_id[40];
	int can_bind; /* root with working mount namespaces */
	struct agent_http http;
	struct agent_session sess;
	struct agent_logq logq;
	struct agent_telemetry tm;
	struct agent_assign *assigns;
	/* The poll set, rebuilt every turn. */
	struct pollfd *pfds;
	struct agent_pollref *prefs;
	size_t n_pfds;
	size_t alloc_pfds;
	size_t alloc_prefs; /* allocated count of prefs */
	int sig_pipe[2];
	int got_sigchld;
	int shutting_down;
	int64_t shutdown_kill_at; /* monotonic */
	int exit_now;
	/* The work directory's lock, checked now and then: an agent whose
	 * directory was removed has nothing left to serve. */
	int lock_fd;
	char *lock_path;
	int64_t lock_check_at; /* monotonic */
};

/* mpi.c: `trainagent rsh ...` and `trainagent mpi-worker ...`. */
int agent_rsh_main(int argc, char **argv);
int agent_mpi_worker_main(int argc, char **argv);

/* Runs the loop until SIGTERM/SIGINT and the children are gone. */
int agent_run(struct agent_ctx *ctx);

/* assign.c: bookkeeping, the steps, reports */
struct agent_assign *agent_assign_find(struct agent_ctx *ctx, const char *job,
				       const char *uid, int attempt,
				       const char *algo);
/* A new assignment in phase preparing, appended to ctx->assigns. */
struct agent_assign *agent_assign_new(struct agent_ctx *ctx, const char *job,
				      const char *uid, int attempt,
				      const char *algo);
/* The agent's own note in a job's log ("trainagent: ..."), rank 0 stderr. */
void agent_assign_note(struct agent_ctx *ctx, const struct agent_assign *a,
		       const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void agent_reconcile(struct agent_ctx *ctx);
void agent_assign_fence_all(struct agent_ctx *ctx, const char *why);
void agent_assign_shutdown(struct agent_ctx *ctx, int sig);
int agent_assign_all_quiet(struct agent_ctx *ctx);
void agent_assign_mark(struct agent_ctx *ctx, struct agent_assign *a);
void agent_assign_set_phase(struct agent_ctx *ctx, struct agent_assign *a,
			    enum api_phase phase);
void agent_assign_set_error(struct agent_ctx *ctx, struct agent_assign *a,
			    const char *msg);
/*
 * Appends the status body (every assignment's REPORT) to out; the reports
 * of forgotten-to-be assignments are marked as in flight, and
 * agent_assign_status_done() says whether the controller took them.
 */
int agent_assign_status_build(struct agent_ctx *ctx, struct buf *out);
void agent_assign_status_done(struct agent_ctx *ctx, int ok);
int64_t agent_assign_next(struct agent_ctx *ctx);
void agent_assign_free(struct agent_ctx *ctx, struct agent_assign *a);
/* Fills r with a's report; r borrows a's strings, procs is allocated. */
void agent_assign_report(const struct agent_assign *a, struct api_report *r);
void agent_report_clear(struct api_report *r);
/* Logs one line of a job's output (text need not be NUL-terminated). */
void agent_assign_log(struct agent_ctx *ctx, const struct agent_assign *a,
		      int rank, int is_stderr, const char *text, size_t len);

/* supervise.c: output, exits, workers' reports, adoption */
void agent_sup_on_output(struct agent_ctx *ctx, struct agent_assign *a,
			 size_t rank, int is_stderr);
void agent_sup_on_pidfd(struct agent_ctx *ctx, struct agent_assign *a,
			size_t rank);
void agent_sup_on_task(struct agent_ctx *ctx, struct agent_assign *a);
/* The Pipe mode writer's report pipe is readable (or it ended). */
void agent_sup_on_pipe(struct agent_ctx *ctx, struct agent_assign *a);
/* Files of the checkpoint folder completed: mirror them soon. */
void agent_assign_on_watch(struct agent_ctx *ctx, struct agent_assign *a);
/* Watches the checkpoint folder of a running assignment (launch, adoption). */
void agent_assign_watch_checkpoints(struct agent_assign *a);
/* Reaps every ended child (SIGCHLD arrived). */
void agent_sup_reap(struct agent_ctx *ctx);
/* Finds the assignments of a previous agent in the work directory. */
void agent_sup_adopt_all(struct agent_ctx *ctx);

/* jobdir.c */
/* <work>/jobs/<job>[.<uid>]/<attempt>/<algo> */
int agent_jobdir_path(const char *work_dir, const char *job, const char *uid,
		      int attempt, const char *algo, struct buf *out,
		      struct buf *err);
/* Makes the /opt/ml tree; with id set, gives the job's part of it to id. */
int agent_jobdir_create(const char *dir, const struct api_assignment *spec,
			const struct agent_ident *id, struct buf *err);
/* <dir>/.trainagent/scratch/<name>: archives the job's workers make. */
char *agent_jobdir_scratch(const char *dir, const char *name);
/* Writes st (one assignment's report) to <dir>/state.json. */
int agent_jobdir_save_state(const char *dir, const struct api_status *st,
			    struct buf *err);
char *agent_jobdir_read_failure(const char *dir);
int agent_jobdir_remove(const char *work_dir, const char *dir);
/* --keep-jobs: renames state.json so the next agent does not adopt it. */
void agent_jobdir_retire(const char *dir);
/* Calls fn(data, ...) with the state.json of every job folder. */
typedef void agent_state_fn(void *data, const char *dir,
			    const struct api_report *r);
void agent_jobdir_scan(const char *work_dir, agent_state_fn *fn, void *data);
/*
 * <dir>/.trainagent/rank<N>.<stream>: a rank's named pipe ("stdout",
 * "stderr") or its keeper's exit file ("exit"), as a new string.
 */
char *agent_fifo_path(const char *dir, int rank, const char *stream);
/* The host path of the checkpoint folder (mapped from /opt/ml/...). */
char *agent_jobdir_checkpoint_path(const char *dir, const char *local_path);

/* launch.c */
/* The PATH a job's processes start from. */
#define AGENT_BASE_PATH \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
int agent_launch(struct agent_ctx *ctx, struct agent_assign *a,
		 struct buf *err);

/* stage.c */
struct stor_config;
/* Storage settings for an assignment (the caller releases cfg). */
void agent_stor_config(struct agent_ctx *ctx, const struct api_assignment *s,
		       struct stor_config *cfg);
/* Whether the assignment has anything to download (checkpoints, channels,
 * code); without, it launches without a staging worker. */
int agent_stage_needed(const struct agent_ctx *ctx,
		       const struct api_assignment *s);
int agent_stage_start(struct agent_ctx *ctx, struct agent_assign *a,
		      struct buf *err);

/* locations.c: the locations an assignment's job may name */
/*
 * Whether the job of s may name uri: it parses, and (when the controller
 * sent "locations") an s3:// one starts with one of the owner's S3
 * prefixes, a file:// one lies under one of the allowed folders once its
 * existing part is resolved. Returns 0, or an error with why saying why.
 */
int agent_uri_allowed(const struct api_assignment *s, const char *uri,
		      struct buf *why);
/* The same for a URI of channel c, err naming the channel and the URI. */
int agent_channel_uri_check(const struct api_assignment *s,
			    const struct api_channel *c, const char *uri,
			    struct buf *err);
/*
 * The same for an object of c's manifest (its prefix joined to a key),
 * which must also have the manifest's own scheme; err names the channel,
 * the manifest and the URI.
 */
int agent_manifest_uri_check(const struct api_assignment *s,
			     const struct api_channel *c, const char *uri,
			     struct buf *err);

/* pipe.c: channels in Pipe mode (docs/pipe-mode.md) */
/* 1 when the channel's input mode (as the controller resolved it) is Pipe. */
int agent_channel_is_pipe(const struct api_channel *c);
int agent_assign_has_pipes(const struct api_assignment *s);
/*
 * The order of a channel's n listed objects in an epoch: order[k] is the
 * index of the object at position k; the listing's order unless the
 * channel has a ShuffleConfig, then a shuffle its Seed and the epoch fix
 * (sharding takes positions, so hosts share each epoch anew).
 */
void agent_channel_order(const struct api_channel *c, size_t n, int epoch,
			 size_t *order);
/* <dir>/input/data/<channel>_<epoch>, as a new string. */
char *agent_pipe_path(const char *dir, const char *channel, int epoch);
/*
 * In the staging worker: checks that the channel has objects for this
 * host and options Pipe mode supports, and makes its pipe of epoch 0.
 */
int agent_pipe_stage(struct stor *st, const struct api_assignment *s,
		     const struct api_channel *c, const char *dir, int fd,
		     struct buf *err);
/* Starts the writer of every Pipe channel (none: nothing to do). */
int agent_pipe_start(struct agent_ctx *ctx, struct agent_assign *a,
		     struct buf *err);
/* Kills the writers (the ranks have ended); reaped as any child. */
void agent_pipe_stop(struct agent_assign *a);
/*
 * The writer's report pipe is readable: reads what it said, adding the
 * notes meant for the job's log to notes.
 */
void agent_pipe_on_report(struct agent_assign *a, struct strvec *notes);
/* pyenv.c: requirements.txt into a virtual environment of the job's own */
/*
 * 1 when script mode runs a Python program and dir/code has a
 * requirements.txt (after staging unpacked the code).
 */
int agent_pyenv_wanted(const struct api_assignment *s, const char *dir);
/* <base>/.trainagent/scratch/venv, as a new string (yours to free). */
char *agent_pyenv_path(const char *base);
/* 1 when the job folder dir holds an environment made by _install(). */
int agent_pyenv_ready(const char *dir);
/*
 * In the staging worker: creates the environment and installs
 * dir/code/requirements.txt into it with pip, reporting its output on fd.
 * Returns 0, or ERR_IO with err saying what failed and pip's last line.
 */
int agent_pyenv_install(const struct api_assignment *s, const char *dir, int fd,
			struct buf *err);

/* upload.c */
int agent_pack_start(struct agent_ctx *ctx, struct agent_assign *a,
		     struct buf *err);
enum agent_upload_result {
	AGENT_UPLOAD_WAIT,  /* nothing more to do this turn */
	AGENT_UPLOAD_DONE,  /* both artifacts are with the controller */
	AGENT_UPLOAD_FAILED /* err says why */
};
/*
 * Packs, then PUTs the artifacts, one step per call. A PUT calls
 * put_done when it ends, which hands the request to
 * agent_upload_put_done().
 */
enum agent_upload_result agent_upload_step(struct agent_ctx *ctx,
					   struct agent_assign *a, int64_t now,
					   agent_req_fn *put_done,
					   struct buf *err);
enum agent_put_result {
	AGENT_PUT_UPLOADED, /* the next step may go on */
	AGENT_PUT_RETRY,    /* to be tried again later: msg says why */
	AGENT_PUT_FAILED    /* refused, or too many tries: msg says why */
};
/*
 * Takes the outcome of an artifact PUT. *lost: the controller no longer
 * knows this agent (register again).
 */
enum agent_put_result agent_upload_put_done(struct agent_assign *a,
					    const struct agent_req *req,
					    int *lost, struct buf *msg);
void agent_upload_cancel(struct agent_ctx *ctx, struct agent_assign *a);
/* final: the ranks have ended, so every file is complete. */
int agent_ckpt_sync_start(struct agent_ctx *ctx, struct agent_assign *a,
			  int final, struct buf *err);
/* A finished sync worker: logs a failure and frees the task slot. */
void agent_ckpt_sync_done(struct agent_ctx *ctx, struct agent_assign *a);

#endif
