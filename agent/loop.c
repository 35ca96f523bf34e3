/*
 * The one poll loop. Each turn: send what is due to the controller, let
 * every assignment take its next step, build the poll set afresh (signal
 * self-pipe, curl's sockets, children's pipes, workers' report pipes,
 * pidfds), sleep until the earliest deadline, dispatch. Rebuilding the set
 * every turn costs a few hundred bytes of copying and means no fd is ever
 * registered after its owner was freed.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assign.h"
#include "agent/assignment.h"
#include "agent/http.h"
#include "agent/images.h"
#include "agent/lease.h"
#include "agent/loop.h"
#include "agent/peerserve.h"
#include "agent/session.h"
#include "agent/supervise.h"
#include "agent/telemetry.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* On SIGTERM/SIGINT, children get this long between SIGTERM and SIGKILL. */
#define SHUTDOWN_GRACE_MS 5000
/* ... and the final status report this long to go out. */
#define SHUTDOWN_REPORT_MS 1000
/* The longest sleep; every deadline is computed, this is a safety net. */
#define MAX_SLEEP_MS 5000
#define WORK_DIR_CHECK_MS 5000

/* Written by the signal handler only (OpenSSH sshd.c does the same). */
static int signal_write_fd = -1;

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;

	if (signal_write_fd >= 0)
		(void)!write(signal_write_fd, &c, 1);
	errno = saved;
}

static int setup_signals(struct agent_ctx *ctx, struct buf *err)
{
	struct sigaction sa;
	sigset_t none;

	if (pipe2(ctx->sig_pipe, O_NONBLOCK | O_CLOEXEC)) {
		(void)buf_addf(err, "pipe: %s", strerror(errno));
		return ERR_IO;
	}
	signal_write_fd = ctx->sig_pipe[1];
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	if (sigaction(SIGCHLD, &sa, NULL) || sigaction(SIGTERM, &sa, NULL) ||
	    sigaction(SIGINT, &sa, NULL)) {
		(void)buf_addf(err, "sigaction: %s", strerror(errno));
		return ERR_IO;
	}
	sa.sa_handler = SIG_IGN;
	sa.sa_flags = 0;
	(void)sigaction(SIGPIPE, &sa, NULL);
	/* Nothing to reload; a closing SSH session must not kill us. */
	(void)sigaction(SIGHUP, &sa, NULL);
	/*
	 * The mask is inherited: a parent that blocks SIGTERM in its threads
	 * (trainctld does, to sigwait() for it) would hand us a mask in
	 * which SIGTERM never arrives.
	 */
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	return 0;
}

/* Adds fd to this turn's poll set. */
static void poll_add(struct agent_ctx *ctx, int fd, short events,
		     enum agent_poll_kind kind, struct agent_assign *a,
		     size_t rank)
{
	ALLOC_GROW(ctx->pfds, ctx->n_pfds + 1, ctx->alloc_pfds);
	ALLOC_GROW(ctx->prefs, ctx->n_pfds + 1, ctx->alloc_prefs);
	ctx->pfds[ctx->n_pfds].fd = fd;
	ctx->pfds[ctx->n_pfds].events = events;
	ctx->pfds[ctx->n_pfds].revents = 0;
	ctx->prefs[ctx->n_pfds].kind = kind;
	ctx->prefs[ctx->n_pfds].a = a;
	ctx->prefs[ctx->n_pfds].rank = rank;
	ctx->n_pfds++;
}

static void build_pollset(struct agent_ctx *ctx)
{
	struct agent_assign *a;
	size_t i;

	ctx->n_pfds = 0;
	poll_add(ctx, ctx->sig_pipe[0], POLLIN, AGENT_POLL_SIGNAL, NULL, 0);
	for (i = 0; i < ctx->http.n_socks; i++)
		poll_add(ctx, ctx->http.socks[i].fd,
			 agent_http_sock_events(&ctx->http.socks[i]),
			 AGENT_POLL_CURL, NULL, 0);
	for (a = ctx->assigns; a; a = a->next) {
		for (i = 0; i < a->n_ranks; i++) {
			struct agent_rank *r = &a->ranks[i];

			if (r->proc.out_fd >= 0)
				poll_add(ctx, r->proc.out_fd, POLLIN,
					 AGENT_POLL_OUT, a, i);
			if (r->proc.err_fd >= 0)
				poll_add(ctx, r->proc.err_fd, POLLIN,
					 AGENT_POLL_ERR, a, i);
			if (r->pidfd >= 0)
				poll_add(ctx, r->pidfd, POLLIN,
					 AGENT_POLL_PIDFD, a, i);
		}
		if (a->task.fd >= 0)
			poll_add(ctx, a->task.fd, POLLIN, AGENT_POLL_TASK, a,
				 0);
		if (a->watch.fd >= 0)
			poll_add(ctx, a->watch.fd, POLLIN, AGENT_POLL_WATCH, a,
				 0);
		if (a->pipe.fd >= 0)
			poll_add(ctx, a->pipe.fd, POLLIN, AGENT_POLL_PIPE, a,
				 0);
	}
	if (ctx->images.task.fd >= 0)
		poll_add(ctx, ctx->images.task.fd, POLLIN, AGENT_POLL_IMAGES,
			 NULL, 0);
}

/* Stops the children and exits, as on SIGTERM. */
static void begin_shutdown(struct agent_ctx *ctx, int64_t now)
{
	ctx->shutting_down = 1;
	ctx->shutdown_kill_at = now + SHUTDOWN_GRACE_MS;
	agent_assign_shutdown(ctx, SIGTERM);
}

/*
 * Every few seconds: whether the work directory is still this agent's.
 * When it was removed (a test's or an operator's clean-up after its
 * controller died), the agent would otherwise retry forever.
 */
static void check_work_dir(struct agent_ctx *ctx, int64_t now)
{
	struct stat fs, ps;

	if (ctx->lock_fd < 0 || ctx->shutting_down || now < ctx->lock_check_at)
		return;
	ctx->lock_check_at = now + WORK_DIR_CHECK_MS;
	if (fstat(ctx->lock_fd, &fs))
		return;
	if (!stat(ctx->lock_path, &ps) && ps.st_ino == fs.st_ino &&
	    ps.st_dev == fs.st_dev)
		return;
	log_warn("%s is gone (the work directory was removed): stopping "
		 "children and exiting",
		 ctx->lock_path);
	begin_shutdown(ctx, now);
}

static void read_signals(struct agent_ctx *ctx, int64_t now)
{
	unsigned char sigs[64];
	ssize_t n, i;

	while ((n = read(ctx->sig_pipe[0], sigs, sizeof(sigs))) > 0) {
		for (i = 0; i < n; i++) {
			if (sigs[i] == SIGCHLD) {
				ctx->got_sigchld = 1;
				continue;
			}
			if (ctx->shutting_down) {
				log_info("signal %d again: killing children",
					 sigs[i]);
				ctx->shutdown_kill_at = now;
				continue;
			}
			log_info("signal %d: stopping children and exiting",
				 sigs[i]);
			begin_shutdown(ctx, now);
		}
	}
}

static void dispatch(struct agent_ctx *ctx, int64_t now)
{
	struct agent_pollref *ref;
	size_t i;

	for (i = 0; i < ctx->n_pfds; i++) {
		if (!ctx->pfds[i].revents)
			continue;
		ref = &ctx->prefs[i];
		switch (ref->kind) {
		case AGENT_POLL_SIGNAL:
			read_signals(ctx, now);
			break;
		case AGENT_POLL_CURL:
			agent_http_event(ctx, ctx->pfds[i].fd,
					 ctx->pfds[i].revents);
			break;
		case AGENT_POLL_OUT:
			agent_sup_on_output(ctx, ref->a, ref->rank, 0);
			break;
		case AGENT_POLL_ERR:
			agent_sup_on_output(ctx, ref->a, ref->rank, 1);
			break;
		case AGENT_POLL_PIDFD:
			agent_sup_on_pidfd(ctx, ref->a, ref->rank);
			break;
		case AGENT_POLL_TASK:
			agent_sup_on_task(ctx, ref->a);
			break;
		case AGENT_POLL_WATCH:
			agent_assign_on_watch(ctx, ref->a);
			break;
		case AGENT_POLL_IMAGES:
			agent_images_on_task(ctx);
			break;
		case AGENT_POLL_PIPE:
			agent_sup_on_pipe(ctx, ref->a);
			break;
		}
	}
	agent_http_timeout(ctx);
	agent_peerserve_run(ctx);
	if (ctx->got_sigchld) {
		ctx->got_sigchld = 0;
		agent_sup_reap(ctx);
	}
}

/*
 * Shutting down: SIGTERM went out; SIGKILL at the deadline; once nothing
 * runs, one last status report (so the controller learns the exits at
 * once), then leave.
 */
static void shutdown_step(struct agent_ctx *ctx, int64_t now,
			  int64_t *report_until)
{
	if (!agent_assign_all_quiet(ctx)) {
		if (now >= ctx->shutdown_kill_at) {
			agent_assign_shutdown(ctx, SIGKILL);
			ctx->shutdown_kill_at = INT64_MAX;
		}
		return;
	}
	if (!*report_until) {
		*report_until = now + SHUTDOWN_REPORT_MS;
		ctx->sess.status_dirty = 1;
		if (ctx->sess.registered)
			return;
	}
	if (now >= *report_until || !ctx->sess.registered ||
	    (!ctx->sess.status_dirty && !ctx->sess.status_req))
		ctx->exit_now = 1;
}

int agent_run(struct agent_ctx *ctx)
{
	struct buf err = BUF_INIT;
	int64_t now, next, report_until = 0, t;
	int timeout, n;

	if (setup_signals(ctx, &err)) {
		log_error("%s", err.data);
		buf_release(&err);
		return ERR_IO;
	}
	agent_sup_adopt_all(ctx);
	while (!ctx->exit_now) {
		now = time_mono_ms();
		/*
		 * Step first, then report: what the last dispatch changed
		 * (a rank that exited) must reach the controller together
		 * with its consequence (phase exited, the failure text).
		 */
		agent_session_check_lease(ctx, now);
		agent_reconcile(ctx);
		agent_images_tick(ctx);
		agent_lease_sync(ctx, now, agent_session_lease_end(ctx));
		check_work_dir(ctx, now);
		if (ctx->shutting_down) {
			shutdown_step(ctx, now, &report_until);
			if (ctx->exit_now)
				break;
		}
		agent_telemetry_tick(ctx, now);
		agent_session_tick(ctx, now);
		build_pollset(ctx);
		next = agent_session_next(ctx);
		t = agent_assign_next(ctx);
		if (t < next)
			next = t;
		t = agent_telemetry_next(ctx);
		if (t < next)
			next = t;
		if (ctx->http.timer_at >= 0 && ctx->http.timer_at < next)
			next = ctx->http.timer_at;
		if (ctx->shutting_down) {
			t = report_until ? report_until : ctx->shutdown_kill_at;
			if (t < next)
				next = t;
		}
		now = time_mono_ms();
		if (next <= now)
			timeout = 0;
		else if (next - now > MAX_SLEEP_MS)
			timeout = MAX_SLEEP_MS;
		else
			timeout = (int)(next - now);
		n = poll(ctx->pfds, (nfds_t)ctx->n_pfds, timeout);
		if (n < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			break;
		}
		dispatch(ctx, time_mono_ms());
	}
	buf_release(&err);
	return 0;
}
