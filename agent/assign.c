/*
 * Desired vs actual, per assignment. The controller's work answer says
 * what should be (run, stop, abort; absent = abort); this file compares it
 * with what is (phase, processes, workers) every time either changes and
 * takes the next step. Steps only move the phase forward:
 *
 *   preparing -> downloading -> running -> exited -> uploading -> done
 *                                                  \-> (stays exited)
 *   any of them -> error (the agent could not prepare or upload)
 *
 * Nothing here blocks: staging and packing run in forked workers
 * (task.c), uploads are libcurl transfers (upload.c), and stopping is a
 * signal plus a deadline the loop sleeps on.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assign.h"
#include "agent/assignment.h"
#include "agent/ckptnow.h"
#include "agent/ckptwatch.h"
#include "agent/hangwatch.h"
#include "agent/http.h"
#include "agent/ident.h"
#include "agent/infracheck.h"
#include "agent/netcheck.h"
#include "agent/jobdir.h"
#include "agent/launch.h"
#include "agent/lines.h"
#include "agent/logq.h"
#include "agent/netiso.h"
#include "agent/pipe.h"
#include "agent/proc.h"
#include "agent/session.h"
#include "agent/stage.h"
#include "agent/task.h"
#include "agent/telemetry.h"
#include "agent/upload.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* How often an answer to a checkpoint-now request is looked for. */
#define CKPT_NOW_POLL_MS 50

/* --- bookkeeping ---------------------------------------------------------- */

struct agent_assign *agent_assign_find(struct agent_ctx *ctx, const char *job,
				       const char *uid, int attempt,
				       const char *algo)
{
	struct agent_assign *a;

	for (a = ctx->assigns; a; a = a->next)
		if (a->attempt == attempt && !strcmp(a->job, job) &&
		    !strcmp(a->algo, algo) &&
		    (a->job_uid == uid ||
		     (a->job_uid && uid && !strcmp(a->job_uid, uid))))
			return a;
	return NULL;
}

struct agent_assign *agent_assign_new(struct agent_ctx *ctx, const char *job,
				      const char *uid, int attempt,
				      const char *algo)
{
	struct agent_assign *a = xcalloc(1, sizeof(*a));
	struct agent_assign **pp;

	a->job = xstrdup(job);
	a->job_uid = uid ? xstrdup(uid) : NULL;
	a->attempt = attempt;
	a->algo = xstrdup(algo);
	a->phase = API_PHASE_PREPARING;
	a->action = API_ACTION_RUN;
	agent_task_init(&a->task);
	agent_task_init(&a->pipe);
	agent_ckpt_watch_init(&a->watch);
	/* Keep arrival order: reports and logs read better that way. */
	for (pp = &ctx->assigns; *pp; pp = &(*pp)->next)
		;
	*pp = a;
	return a;
}

void agent_assign_mark(struct agent_ctx *ctx, struct agent_assign *a)
{
	a->changed = 1;
	ctx->sess.status_dirty = 1;
}

void agent_assign_set_phase(struct agent_ctx *ctx, struct agent_assign *a,
			    enum api_phase phase)
{
	if (a->phase == phase)
		return;
	log_info("%s/%d/%s: %s -> %s", a->job, a->attempt, a->algo,
		 api_phase_name(a->phase), api_phase_name(phase));
	a->phase = phase;
	agent_assign_mark(ctx, a);
}

static void agent_assign_set_error(struct agent_ctx *ctx,
				   struct agent_assign *a, const char *msg)
{
	log_error("%s/%d/%s: %s", a->job, a->attempt, a->algo, msg);
	free(a->error);
	a->error = xstrdup(msg);
	agent_assign_set_phase(ctx, a, API_PHASE_ERROR);
}

static void rank_release(struct agent_rank *r)
{
	agent_proc_release(&r->proc);
	agent_lines_release(&r->out);
	agent_lines_release(&r->err);
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
}

void agent_assign_free(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct agent_assign **pp;
	size_t i;

	for (pp = &ctx->assigns; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	agent_upload_cancel(ctx, a);
	agent_task_kill(&a->task);
	agent_task_release(&a->task);
	agent_pipe_stop(a);
	agent_task_release(&a->pipe);
	agent_ckpt_watch_stop(&a->watch);
	for (i = 0; i < a->n_ranks; i++)
		rank_release(&a->ranks[i]);
	agent_netiso_teardown(a);
	agent_netcheck_free(a->net);
	free(a->ranks);
	if (a->have_spec)
		api_assignment_release(&a->spec);
	free(a->job);
	free(a->job_uid);
	free(a->algo);
	free(a->dir);
	free(a->failure);
	free(a->error);
	free(a->task_error);
	free(a->runtime_note);
	agent_hangwatch_release(&a->hw);
	free(a);
}

/* The rank's last lines, oldest first, one a line, as valid UTF-8: the
 * controller joins those that fit in the failure reason. */
static char *rank_tail(const struct agent_rank *k)
{
	struct buf raw = BUF_INIT, out = BUF_INIT;
	int i, start = (k->tail_next - k->tail_n + AGENT_TAIL_LINES) %
		       AGENT_TAIL_LINES;

	for (i = 0; i < k->tail_n; i++)
		(void)buf_addf(&raw, "%s%s", i ? "\n" : "",
			       k->tail[(start + i) % AGENT_TAIL_LINES]);
	(void)api_utf8_sanitize(raw.data, raw.len, &out);
	buf_release(&raw);
	return buf_detach(&out, NULL);
}

/* Fills r with a's report; r borrows a's strings, procs is allocated. */
static void agent_assign_report(const struct agent_assign *a,
				struct api_report *r)
{
	const struct agent_rank *k;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->job = a->job;
	r->job_uid = a->job_uid;
	r->attempt = a->attempt;
	r->algo = a->algo;
	r->phase = a->phase;
	r->started_ms = a->started_ms;
	r->failure = a->failure;
	r->error = a->error;
	r->hung = a->hw.reason != NULL;
	r->check_ms = a->check_ms;
	r->runtime = a->runtime_note;
	r->net = a->net_figs;
	if (!a->n_ranks)
		return;
	r->procs = xcalloc(a->n_ranks, sizeof(*r->procs));
	r->n_procs = a->n_ranks;
	for (i = 0; i < a->n_ranks; i++) {
		k = &a->ranks[i];
		r->procs[i].rank = k->rank;
		r->procs[i].pid = k->proc.pid;
		r->procs[i].started_ms = k->proc.started_ms;
		r->procs[i].exited = k->proc.exited;
		r->procs[i].exit_code = k->proc.exit_code;
		r->procs[i].signal = k->proc.term_signal;
		r->procs[i].exited_ms = k->proc.exited_ms;
		if (k->proc.exited && k->tail_n &&
		    (k->proc.term_signal || k->proc.exit_code))
			r->procs[i].tail = rank_tail(k);
	}
}

static void agent_report_clear(struct api_report *r)
{
	size_t i;

	for (i = 0; r->procs && i < r->n_procs; i++)
		free(r->procs[i].tail);
	free(r->procs);
	memset(r, 0, sizeof(*r));
}

void agent_assign_log(struct agent_ctx *ctx, const struct agent_assign *a,
		      int rank, int is_stderr, const char *text, size_t len)
{
	agent_logq_push(&ctx->logq, a->job, a->job_uid, a->attempt, a->algo,
			rank, is_stderr, time_now_ms(), text, len,
			time_mono_ms());
}

void agent_assign_note(struct agent_ctx *ctx, const struct agent_assign *a,
		       const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	(void)buf_adds(&b, "trainagent: ");
	va_start(ap, fmt);
	(void)buf_vaddf(&b, fmt, ap);
	va_end(ap);
	agent_assign_log(ctx, a, 0, 1, b.data, b.len);
	buf_release(&b);
}

/* --- the steps ------------------------------------------------------------ */

static int ranks_ended(const struct agent_assign *a)
{
	size_t i;

	for (i = 0; i < a->n_ranks; i++)
		if (!a->ranks[i].proc.exited)
			return 0;
	return 1;
}

static int ranks_succeeded(const struct agent_assign *a)
{
	size_t i;

	for (i = 0; i < a->n_ranks; i++)
		if (a->ranks[i].proc.term_signal ||
		    a->ranks[i].proc.exit_code != 0)
			return 0;
	return a->n_ranks > 0;
}

static void signal_ranks(struct agent_assign *a, int sig)
{
	size_t i;

	for (i = 0; i < a->n_ranks; i++)
		if (!a->ranks[i].proc.exited)
			(void)agent_proc_signal(&a->ranks[i].proc, sig);
}

/*
 * Every check passed: reported (and kept in state.json) with a note. The
 * network check's listener stays until the program starts: the other
 * hosts may still measure this one.
 */
static void checks_passed(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct buf net = BUF_INIT;
	const struct api_net_figures *n = &a->net_figs;

	a->check_ms = time_mono_ms() - a->check_t0 + 1;
	if (n->peers > 0 && n->reached > 0)
		(void)buf_addf(&net,
			       "; network: %d of %d peers answered, "
			       "best round trip %.2f ms, %lld Mbit/s",
			       n->reached, n->peers, (double)n->rtt_us / 1000.0,
			       (long long)n->mbps);
	else if (n->peers > 0)
		(void)buf_addf(&net, "; network: none of %d peers answered",
			       n->peers);
	agent_assign_mark(ctx, a);
	agent_assign_note(ctx, a,
			  "Infrastructure checks passed in %lld ms "
			  "(clock offset %lld ms, %s%s)",
			  (long long)(a->check_ms - 1),
			  (long long)a->check_skew_ms,
			  a->check_gpus < 0 ? "no GPU" : "GPUs healthy",
			  net.len ? net.data : "");
	buf_release(&net);
}

/* The network part's turn: once it is over, the checks passed here (the
 * controller compares the figures with the other hosts'). */
static void net_step(struct agent_ctx *ctx, struct agent_assign *a)
{
	if (a->net && !a->check_ms && agent_netcheck_done(a->net, &a->net_figs))
		checks_passed(ctx, a);
}

/* The network check ends in its own thread: looked at every 50 ms while
 * it runs (INT64_MAX: none runs). */
static int64_t net_next(const struct agent_assign *a)
{
	return a->net && !a->check_ms ? time_mono_ms() + 50 : INT64_MAX;
}

/*
 * The infrastructure checks, when the job or the controller asks for
 * them: before anything is staged, so that a bad host is replaced before
 * the program starts anywhere. Fails with API_INFRA_CHECK_FAILED. The
 * network part runs beside the staging (net_step()) when the attempt
 * has other hosts.
 */
static int infra_check(struct agent_ctx *ctx, struct agent_assign *a,
		       struct buf *err)
{
	const struct api_assignment *d = &a->spec;
	struct agent_infra_facts f;
	struct buf why = BUF_INIT;
	char *ckpt = NULL;
	int bad;

	if (!d->infra.enabled || a->check_ms || a->net)
		return 0;
	a->check_t0 = time_mono_ms();
	if (d->checkpoint_s3_uri)
		ckpt = agent_jobdir_checkpoint_path(a->dir,
						    d->checkpoint_local_path);
	agent_infra_measure(&f, &d->infra, a->dir, ckpt, a->spec_at_ms,
			    ctx->cfg.gpus);
	free(ckpt);
	bad = agent_infra_judge(&f, &d->infra, &why);
	a->check_skew_ms = f.skew_ms;
	a->check_gpus = f.gpus_seen;
	if (!bad && d->infra.network && d->n_hosts > 1 && d->master_port > 0) {
		a->net = agent_netcheck_start((const char *const *)d->addresses,
					      d->n_hosts, (size_t)d->host_index,
					      d->master_port,
					      AGENT_NET_BUDGET_MS, &why);
		bad = !a->net;
	} else if (!bad) {
		checks_passed(ctx, a);
	}
	if (bad)
		(void)buf_addf(err, "%s%s", API_INFRA_CHECK_FAILED, why.data);
	buf_release(&why);
	return bad ? ERR_INVALID : 0;
}

static void prepare(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct buf dir = BUF_INIT;
	struct buf err = BUF_INIT;

	if (!a->dir) {
		if (agent_jobdir_path(ctx->cfg.work_dir, a->job, a->job_uid,
				      a->attempt, a->algo, &dir, &err))
			goto fail;
		a->dir = buf_detach(&dir, NULL);
		if (agent_ident_resolve(&a->ident, a->spec.run_as, &err) ||
		    agent_jobdir_create(a->dir, &a->spec, &a->ident, &err))
			goto fail;
		agent_assign_mark(ctx, a);
	}
	/* Once: a restarted agent restores a pass from state.json. */
	if (infra_check(ctx, a, &err))
		goto fail;
	a->restage = 0;
	a->task_ok = 0;
	FREE_AND_NULL(a->task_error);
	/* Nothing to download: no worker to fork and hear from. */
	if (!agent_stage_needed(ctx, &a->spec)) {
		if (a->spec.launch_mode == API_LAUNCH_CONTAINER)
			agent_assign_note(ctx, a,
					  "image %s: already on this host",
					  a->spec.image);
		a->staged = 1;
		goto out;
	}
	if (agent_stage_start(ctx, a, &err))
		goto fail;
	a->task_kind = AGENT_TASK_STAGE;
	goto out;
fail:
	agent_assign_set_error(ctx, a, err.data);
out:
	buf_release(&dir);
	buf_release(&err);
}

/* The staging worker finished: launch or fail. */
/* A failure to prepare on a full or read-only disk is the host's. */
static void host_fault(const struct agent_assign *a, struct buf *err)
{
	struct buf why = BUF_INIT, all = BUF_INIT;

	if (agent_infra_disk_fault(a->dir, &why)) {
		(void)buf_addf(&all, "%s%s (%s)", API_HOST_FAULT, why.data,
			       err->data);
		buf_reset(err);
		(void)buf_adds(err, all.data);
	}
	buf_release(&why);
	buf_release(&all);
}

static void staged(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct buf err = BUF_INIT;
	int status = a->task.status;
	int ok = a->task_ok;

	a->task_kind = AGENT_TASK_NONE;
	if (!ok) {
		if (a->task_error)
			(void)buf_adds(&err, a->task_error);
		else if (WIFSIGNALED(status))
			(void)buf_addf(&err,
				       "staging worker killed by signal "
				       "%d",
				       WTERMSIG(status));
		else
			(void)buf_addf(&err, "staging worker exited with %d",
				       WEXITSTATUS(status));
		host_fault(a, &err);
		agent_task_release(&a->task);
		agent_assign_set_error(ctx, a, err.data);
		buf_release(&err);
		return;
	}
	agent_task_release(&a->task);
	a->staged = 1;
}

static int has_checkpoints(const struct agent_assign *a);

static void launch(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct buf err = BUF_INIT;
	/* Before the ranks run: what they write is newer (the mirror's
	 * since_ms), however soon they write it. */
	int64_t start = time_file_ms();

	/* Its port is the program's now. */
	agent_netcheck_free(a->net);
	a->net = NULL;
	agent_assign_watch_checkpoints(a);
	if (a->spec.network_isolation &&
	    a->spec.launch_mode != API_LAUNCH_CONTAINER && !a->netiso_procs &&
	    agent_netiso_setup(ctx->cfg.controllers, a, &err)) {
		agent_assign_set_error(ctx, a, err.data);
	} else if (agent_launch(ctx, a, &err)) {
		agent_assign_set_error(ctx, a, err.data);
	} else {
		a->started_ms = start;
		agent_assign_set_phase(ctx, a, API_PHASE_RUNNING);
		/* The pipes of epoch 0 exist: the program may open them
		 * before their writers run, and waits for them. */
		if (agent_pipe_start(ctx, a, &err))
			agent_assign_note(ctx, a, "Pipe channels: %s",
					  err.data);
	}
	buf_release(&err);
}

/* The assignment should stop at once, uploading nothing. */
static int must_abort(struct agent_ctx *ctx, const struct agent_assign *a)
{
	return a->action == API_ACTION_ABORT ||
	       (!a->desired && ctx->sess.have_work);
}

static int has_checkpoints(const struct agent_assign *a)
{
	return a->have_spec && a->dir && a->spec.checkpoint_s3_uri &&
	       *a->spec.checkpoint_s3_uri;
}

/*
 * Something is mirrored while the ranks run: checkpoints, TensorBoard,
 * Debugger's hook and profiler folders.
 */
static int has_mirror(const struct agent_assign *a)
{
	const struct api_assignment *s = &a->spec;

	return has_checkpoints(a) ||
	       (a->have_spec && a->dir &&
		((s->tensorboard_s3_uri && *s->tensorboard_s3_uri) ||
		 s->debug_s3_uri || s->profiler_s3_uri));
}

void agent_assign_watch_checkpoints(struct agent_assign *a)
{
	struct buf err = BUF_INIT;
	char *dir;

	if (!has_checkpoints(a) || a->watch.fd >= 0)
		return;
	dir = agent_jobdir_checkpoint_path(a->dir,
					   a->spec.checkpoint_local_path);
	/* Without the watch, plain files go once quiet for 2 s. */
	if (agent_ckpt_watch_start(&a->watch, dir, &err))
		log_warn("%s/%d/%s: checkpoint watch: %s", a->job, a->attempt,
			 a->algo, err.data);
	free(dir);
	buf_release(&err);
}

void agent_assign_on_watch(struct agent_ctx *ctx, struct agent_assign *a)
{
	int64_t now = time_mono_ms(), at;

	(void)ctx;
	if (!agent_ckpt_watch_read(&a->watch))
		return;
	agent_hangwatch_checkpoint(a, now);
	at = a->sync_started + AGENT_CKPT_SYNC_MIN_MS;
	if (at < now)
		at = now;
	if (at < a->sync_at)
		a->sync_at = at;
}

static void start_sync(struct agent_ctx *ctx, struct agent_assign *a, int final)
{
	struct buf err = BUF_INIT;

	a->sync_started = time_mono_ms();
	if (final)
		a->final_sync_due = 0;
	if (agent_ckpt_sync_start(ctx, a, final, &err))
		log_warn("%s/%d/%s: checkpoint sync: %s", a->job, a->attempt,
			 a->algo, err.data);
	buf_release(&err);
}

/*
 * After a failure, or when the controller aborts the attempt because a
 * peer failed, the newest checkpoints are saved for the next attempt,
 * which may run on another host (success and stop sync before packing).
 * The controller starts that attempt only once this one settled, so
 * nothing newer exists yet. Not for a fenced run or one that vanished
 * from the desired state: a newer attempt may already be writing there.
 */
static int final_sync_wanted(struct agent_ctx *ctx,
			     const struct agent_assign *a)
{
	return a->final_sync_due && has_mirror(a) && !a->fenced && a->desired &&
	       !ctx->shutting_down && !ctx->sess.fenced;
}

static void exited(struct agent_ctx *ctx, struct agent_assign *a)
{
	size_t i;

	/* Failures are said in the job's log too, with the host. */
	for (i = 0; i < a->n_ranks && !must_abort(ctx, a); i++) {
		const struct agent_proc *p = &a->ranks[i].proc;

		if (p->term_signal)
			agent_assign_note(ctx, a,
					  "rank %d on %s was killed by signal "
					  "%d (%s)",
					  a->ranks[i].rank, ctx->cfg.host,
					  p->term_signal,
					  strsignal(p->term_signal));
		else if (p->exit_code)
			agent_assign_note(ctx, a,
					  "rank %d on %s exited with code %d",
					  a->ranks[i].rank, ctx->cfg.host,
					  p->exit_code);
	}
	free(a->failure);
	/* A hang is the cause, whatever the killed program wrote. */
	if (a->hw.reason)
		a->failure = xstrdup(a->hw.reason);
	else
		a->failure = a->dir ? agent_jobdir_read_failure(a->dir) : NULL;
	a->kill_at = 0;
	agent_pipe_stop(a);
	agent_assign_set_phase(ctx, a, API_PHASE_EXITED);
	/* Every file is final now; what completed last goes in this sync. */
	agent_ckpt_watch_stop(&a->watch);
	a->final_sync_due = has_mirror(a) && !ranks_succeeded(a);
	/* A periodic sync still running is followed by the final one. */
	if (final_sync_wanted(ctx, a) && !agent_task_busy(&a->task))
		start_sync(ctx, a, 1);
}

static void step_staging(struct agent_ctx *ctx, struct agent_assign *a)
{
	if (a->task_kind == AGENT_TASK_STAGE && !agent_task_busy(&a->task))
		staged(ctx, a);
	if (a->phase == API_PHASE_ERROR)
		return;
	net_step(ctx, a);
	if (must_abort(ctx, a) || a->action == API_ACTION_STOP) {
		/* Stopped before it ran: there is nothing to upload. */
		if (agent_task_busy(&a->task)) {
			agent_task_kill(&a->task);
			return;
		}
		if (a->task_kind != AGENT_TASK_NONE) {
			a->task_kind = AGENT_TASK_NONE;
			agent_task_release(&a->task);
		}
		agent_assign_set_phase(ctx, a, API_PHASE_DONE);
		return;
	}
	if (!a->have_spec || agent_task_busy(&a->task))
		return;
	if (!a->dir || a->restage) {
		prepare(ctx, a);
		if (!a->staged || a->phase == API_PHASE_ERROR)
			return;
	}
	/* Self-fenced hosts start nothing until the controller is back; a
	 * job's program starts once every host passed its checks. */
	if (a->staged && !ctx->sess.fenced && !a->spec.infra.hold)
		launch(ctx, a);
}

/* A rank of the assignment ended by a signal or with a non-zero code. */
static int rank_failed(const struct agent_assign *a)
{
	size_t i;

	for (i = 0; i < a->n_ranks; i++)
		if (a->ranks[i].proc.exited &&
		    (a->ranks[i].proc.term_signal ||
		     a->ranks[i].proc.exit_code != 0))
			return 1;
	return 0;
}

/*
 * Hang detection runs while nothing else is ending the ranks; after it
 * fired, until the culprit's capture is done.
 */
static int hang_watched(struct agent_ctx *ctx, const struct agent_assign *a)
{
	return a->hw.fired ||
	       (a->action == API_ACTION_RUN && !must_abort(ctx, a) &&
		!a->term_sent && !a->kill_sent && !a->fenced &&
		!ctx->sess.fenced);
}

/* When hang detection has something to do for a (INT64_MAX: never). */
static int64_t hang_next(struct agent_ctx *ctx, const struct agent_assign *a)
{
	if (a->phase != API_PHASE_RUNNING || !hang_watched(ctx, a))
		return INT64_MAX;
	return agent_hangwatch_next(a);
}

/*
 * A stop with a grace period, of a job with a checkpoint folder, whose
 * program listens for checkpoint-now requests.
 */
static int ckpt_now_wanted(const struct agent_assign *a)
{
	return a->spec.grace_ms > 0 && has_checkpoints(a) &&
	       agent_ckptnow_listening(a->dir);
}

/* SIGTERM waits for the checkpoint up to half the grace period; SIGKILL
 * comes at its end, as without a request. */
static void ask_checkpoint(struct agent_assign *a, int64_t now)
{
	a->ckpt_now = 1;
	a->kill_at = now + a->spec.grace_ms;
	a->term_at = now + a->spec.grace_ms / 2;
	if (agent_ckptnow_request(a->dir, "stop")) {
		a->term_at = now;
		return;
	}
	log_info("%s/%d/%s: stopping: checkpoint requested (SIGTERM once "
		 "it is complete or in %lld ms)",
		 a->job, a->attempt, a->algo, (long long)(a->term_at - now));
}

/*
 * Stopping: SIGKILL at once for an abort; for a stop, a checkpoint-now
 * request when the program listens, SIGTERM (once it answered, or at
 * once), then SIGKILL at the end of the grace period.
 */
static void step_stop(struct agent_ctx *ctx, struct agent_assign *a,
		      int64_t now)
{
	int stop = a->action == API_ACTION_STOP && !a->term_sent;

	if (must_abort(ctx, a) && !a->kill_sent) {
		signal_ranks(a, SIGKILL);
		a->kill_sent = 1;
	} else if (stop && !a->ckpt_now && ckpt_now_wanted(a)) {
		ask_checkpoint(a, now);
	} else if (stop && (!a->ckpt_now || now >= a->term_at ||
			    !agent_ckptnow_pending(a->dir))) {
		if (!a->ckpt_now)
			a->kill_at =
				now +
				(a->spec.grace_ms > 0 ? a->spec.grace_ms : 0);
		log_info("%s/%d/%s: stopping (SIGTERM, SIGKILL after %lld ms)",
			 a->job, a->attempt, a->algo,
			 (long long)(a->kill_at - now));
		signal_ranks(a, SIGTERM);
		a->term_sent = 1;
	} else if (a->term_sent && !a->kill_sent && a->kill_at &&
		   now >= a->kill_at) {
		log_info("%s/%d/%s: grace period over: SIGKILL", a->job,
			 a->attempt, a->algo);
		signal_ranks(a, SIGKILL);
		a->kill_sent = 1;
	}
}

static void step_running(struct agent_ctx *ctx, struct agent_assign *a,
			 int64_t now)
{
	/* After a hang, what is left of its capture comes first. */
	if (hang_watched(ctx, a))
		agent_hangwatch_step(ctx, a, now);
	/*
	 * One rank failed: the others of this host go at once, as torchrun
	 * stops its workers, instead of hanging in a collective until its
	 * timeout; the host then reports the attempt's failure.
	 */
	if (a->n_ranks > 1 && !a->kill_sent && !ranks_ended(a) &&
	    rank_failed(a)) {
		log_info("%s/%d/%s: a rank failed: killing the others", a->job,
			 a->attempt, a->algo);
		signal_ranks(a, SIGKILL);
		a->kill_sent = 1;
	}
	if (ranks_ended(a)) {
		exited(ctx, a);
		return;
	}
	if (has_mirror(a) && !a->term_sent && !a->kill_sent &&
	    !ctx->sess.fenced && !agent_task_busy(&a->task) &&
	    now >= a->sync_at) {
		a->sync_at = now + AGENT_CKPT_SYNC_MS;
		if (a->task_kind == AGENT_TASK_NONE)
			start_sync(ctx, a, 0);
	}
	step_stop(ctx, a, now);
}

/* An artifact PUT ended (http.c calls this). */
static void on_put_done(struct agent_ctx *ctx, struct agent_req *req)
{
	struct agent_assign *a = req->data;
	struct buf msg = BUF_INIT;
	enum agent_put_result r;
	int lost;

	r = agent_upload_put_done(a, req, &lost, &msg);
	if (lost)
		agent_session_lost(ctx, "artifact upload", req);
	switch (r) {
	case AGENT_PUT_UPLOADED:
		agent_assign_mark(ctx, a);
		break;
	case AGENT_PUT_FAILED:
		agent_assign_set_error(ctx, a, msg.data);
		break;
	case AGENT_PUT_RETRY:
		log_warn("%s/%d/%s: %s", a->job, a->attempt, a->algo, msg.data);
		break;
	}
	buf_release(&msg);
}

/* Packing and uploading, one step further. */
static void upload_step(struct agent_ctx *ctx, struct agent_assign *a,
			int64_t now)
{
	struct buf err = BUF_INIT;

	switch (agent_upload_step(ctx, a, now, on_put_done, &err)) {
	case AGENT_UPLOAD_WAIT:
		break;
	case AGENT_UPLOAD_FAILED:
		agent_assign_set_error(ctx, a, err.data);
		break;
	case AGENT_UPLOAD_DONE:
		agent_assign_set_phase(ctx, a, API_PHASE_DONE);
		break;
	}
	buf_release(&err);
}

static void step_exited(struct agent_ctx *ctx, struct agent_assign *a,
			int64_t now)
{
	if (must_abort(ctx, a)) {
		/* The last checkpoint sync goes first (see exited()). */
		if ((agent_task_busy(&a->task) || final_sync_wanted(ctx, a)) &&
		    a->desired && !a->fenced)
			return;
		agent_assign_set_phase(ctx, a, API_PHASE_DONE);
		return;
	}
	/* A failed run waits here: the controller decides what follows. */
	if (a->action == API_ACTION_STOP ||
	    (a->action == API_ACTION_RUN && ranks_succeeded(a))) {
		agent_assign_set_phase(ctx, a, API_PHASE_UPLOADING);
		a->up_step = AGENT_UP_NONE;
		upload_step(ctx, a, now);
	}
}

static void step_uploading(struct agent_ctx *ctx, struct agent_assign *a,
			   int64_t now)
{
	if (must_abort(ctx, a)) {
		agent_upload_cancel(ctx, a);
		if (agent_task_busy(&a->task)) {
			agent_task_kill(&a->task);
			return;
		}
		agent_task_release(&a->task);
		a->task_kind = AGENT_TASK_NONE;
		agent_assign_set_phase(ctx, a, API_PHASE_DONE);
		return;
	}
	upload_step(ctx, a, now);
}

/* Nothing of a is running and nothing will run. */
static int quiet(const struct agent_assign *a)
{
	return ranks_ended(a) && !agent_task_busy(&a->task) &&
	       !agent_task_busy(&a->pipe) && !a->up_req &&
	       (a->phase == API_PHASE_DONE || a->phase == API_PHASE_ERROR ||
		a->phase == API_PHASE_EXITED);
}

static void step(struct agent_ctx *ctx, struct agent_assign *a, int64_t now)
{
	if (a->task_kind == AGENT_TASK_SYNC && !agent_task_busy(&a->task))
		agent_ckpt_sync_done(ctx, a);
	if (a->phase == API_PHASE_EXITED && a->task_kind == AGENT_TASK_NONE &&
	    final_sync_wanted(ctx, a))
		start_sync(ctx, a, 1);
	if (ctx->shutting_down) {
		/* Only record what ends; start nothing new. */
		if (a->phase == API_PHASE_RUNNING && ranks_ended(a))
			exited(ctx, a);
		return;
	}
	switch (a->phase) {
	case API_PHASE_PREPARING:
	case API_PHASE_DOWNLOADING:
		step_staging(ctx, a);
		break;
	case API_PHASE_RUNNING:
		step_running(ctx, a, now);
		if (a->phase == API_PHASE_EXITED)
			step_exited(ctx, a, now);
		break;
	case API_PHASE_EXITED:
		step_exited(ctx, a, now);
		break;
	case API_PHASE_UPLOADING:
		step_uploading(ctx, a, now);
		break;
	case API_PHASE_DONE:
	case API_PHASE_ERROR:
		agent_upload_cancel(ctx, a);
		if (agent_task_busy(&a->task)) {
			agent_task_kill(&a->task);
		} else if (a->task_kind != AGENT_TASK_NONE) {
			agent_task_release(&a->task);
			a->task_kind = AGENT_TASK_NONE;
		}
		break;
	}
	if (a->phase == API_PHASE_ERROR && !ranks_ended(a) && !a->kill_sent) {
		signal_ranks(a, SIGKILL);
		a->kill_sent = 1;
	}
}

/* Takes the controller's latest desired state, if one arrived. */
static void apply_work(struct agent_ctx *ctx)
{
	struct api_work *w = ctx->sess.pending;
	struct api_assignment *d;
	struct agent_assign *a;
	int64_t now_ms;
	size_t i;

	if (!w)
		return;
	/* When the answer arrived, on the clock the checks compare. */
	now_ms = ctx->sess.pending_at_ms;
	ctx->sess.pending = NULL;
	if (w->prune_images > ctx->images.want)
		ctx->images.want = w->prune_images;
	for (a = ctx->assigns; a; a = a->next)
		a->desired = 0;
	for (i = 0; i < w->n; i++) {
		d = &w->items[i];
		if (!d->job || !d->algo)
			continue;
		a = agent_assign_find(ctx, d->job, d->job_uid, d->attempt,
				      d->algo);
		if (!a) {
			a = agent_assign_new(ctx, d->job, d->job_uid,
					     d->attempt, d->algo);
			log_info("%s/%d/%s: new assignment (%s)", a->job,
				 a->attempt, a->algo,
				 api_action_name(d->action));
			/* Stop or abort for something never started. */
			if (d->action != API_ACTION_RUN)
				a->phase = API_PHASE_DONE;
			agent_assign_mark(ctx, a);
		}
		a->desired = 1;
		if (!a->have_spec) {
			/* Take the item over; the work keeps an empty one. */
			a->spec = *d;
			memset(d, 0, sizeof(*d));
			a->have_spec = 1;
			a->spec_at_ms = now_ms;
			/*
			 * Adopted by a restarted agent, which learns only now
			 * where its checkpoints go: watch and mirror them as
			 * promptly as after a launch, not at the 2 s fallback
			 * (what a lost host then loses must stay within K).
			 */
			if (a->phase == API_PHASE_RUNNING) {
				agent_assign_watch_checkpoints(a);
				a->sync_at = 0;
			}
		} else {
			a->spec.grace_ms = d->grace_ms;
			a->spec.action = d->action;
			a->spec.infra.hold = d->infra.hold;
		}
		/* Actions only escalate: run < stop < abort. */
		if (a->spec.action > a->action) {
			log_info("%s/%d/%s: action %s", a->job, a->attempt,
				 a->algo, api_action_name(a->spec.action));
			a->action = a->spec.action;
		}
	}
	ctx->sess.have_work = 1;
	api_work_release(w);
	free(w);
}

/* Writes a's state.json (nothing before it has a folder). */
static int save_state(struct agent_ctx *ctx, const struct agent_assign *a,
		      struct buf *err)
{
	struct api_status st;
	struct api_report r;
	int ret;

	if (!a->dir)
		return 0;
	agent_assign_report(a, &r);
	memset(&st, 0, sizeof(st));
	st.boot_id = ctx->boot_id;
	st.items = &r;
	st.n = 1;
	ret = agent_jobdir_save_state(a->dir, &st, err);
	agent_report_clear(&r);
	return ret;
}

void agent_reconcile(struct agent_ctx *ctx)
{
	struct agent_assign *a, *next;
	struct buf err = BUF_INIT;
	int64_t now = time_mono_ms();

	apply_work(ctx);
	for (a = ctx->assigns; a; a = next) {
		next = a->next;
		step(ctx, a, now);
		if (a->changed) {
			a->changed = 0;
			buf_reset(&err);
			if (save_state(ctx, a, &err))
				log_warn("%s/%d/%s: cannot save state: %s",
					 a->job, a->attempt, a->algo, err.data);
		}
		/*
		 * Forget an assignment the controller no longer wants once
		 * its final state went out in an acknowledged report.
		 */
		if (!a->desired && ctx->sess.have_work && quiet(a) &&
		    a->final_acked) {
			log_info("%s/%d/%s: forgotten", a->job, a->attempt,
				 a->algo);
			if (a->dir && !ctx->cfg.keep_jobs)
				(void)agent_jobdir_remove(ctx->cfg.work_dir,
							  a->dir);
			else if (a->dir)
				agent_jobdir_retire(a->dir);
			agent_assign_free(ctx, a);
		}
	}
	buf_release(&err);
}

/* The next deadline of a stop: a look for the checkpoint-now answer
 * (a file removed: every CKPT_NOW_POLL_MS until term_at), or SIGKILL. */
static int64_t stop_next(const struct agent_assign *a)
{
	int64_t at = INT64_MAX;

	if (a->kill_sent)
		return at;
	if (a->term_sent && a->kill_at)
		at = a->kill_at;
	if (a->ckpt_now && !a->term_sent && a->phase == API_PHASE_RUNNING) {
		at = time_mono_ms() + CKPT_NOW_POLL_MS;
		if (a->term_at < at)
			at = a->term_at;
	}
	return at;
}

int64_t agent_assign_next(struct agent_ctx *ctx)
{
	struct agent_assign *a;
	int64_t next = INT64_MAX;

	/* Only deadlines that will lead to an action, or we would spin. */
	for (a = ctx->assigns; a; a = a->next) {
		if (net_next(a) < next)
			next = net_next(a);
		if (a->phase != API_PHASE_RUNNING &&
		    a->phase != API_PHASE_UPLOADING)
			continue;
		if (stop_next(a) < next)
			next = stop_next(a);
		if (hang_next(ctx, a) < next)
			next = hang_next(ctx, a);
		if (a->phase == API_PHASE_RUNNING && has_mirror(a) &&
		    !a->term_sent && !a->kill_sent && !ctx->sess.fenced &&
		    a->task_kind == AGENT_TASK_NONE && a->sync_at < next)
			next = a->sync_at;
		if (a->phase == API_PHASE_UPLOADING && !a->up_req &&
		    ctx->sess.registered &&
		    (a->up_step == AGENT_UP_MODEL ||
		     a->up_step == AGENT_UP_OUTPUT) &&
		    a->up_retry_at < next)
			next = a->up_retry_at;
	}
	return next;
}

void agent_assign_fence_all(struct agent_ctx *ctx, const char *why)
{
	struct agent_assign *a;

	/*
	 * Ranks the watchdog killed while the agent was not running have
	 * ended already, but their attempt is just as fenced: no final
	 * checkpoint sync for it (a newer attempt may be running).
	 */
	for (a = ctx->assigns; a; a = a->next) {
		if (a->phase != API_PHASE_RUNNING &&
		    a->phase != API_PHASE_EXITED)
			continue;
		a->fenced = 1;
		if (a->task_kind == AGENT_TASK_SYNC)
			agent_task_kill(&a->task);
		if (ranks_ended(a))
			continue;
		log_warn("%s/%d/%s: self-fencing: %s: SIGKILL", a->job,
			 a->attempt, a->algo, why);
		agent_assign_note(ctx, a, "killed: %s (self-fencing)", why);
		signal_ranks(a, SIGKILL);
		a->kill_sent = 1;
	}
}

void agent_assign_shutdown(struct agent_ctx *ctx, int sig)
{
	struct agent_assign *a;

	for (a = ctx->assigns; a; a = a->next) {
		if (sig == SIGKILL)
			a->kill_sent = 1;
		else
			a->term_sent = 1;
		signal_ranks(a, sig);
		agent_task_kill(&a->task);
		agent_upload_cancel(ctx, a);
	}
}

int agent_assign_all_quiet(struct agent_ctx *ctx)
{
	struct agent_assign *a;

	for (a = ctx->assigns; a; a = a->next)
		if (!ranks_ended(a) || agent_task_busy(&a->task))
			return 0;
	return 1;
}

int agent_assign_status_build(struct agent_ctx *ctx, struct buf *out)
{
	struct api_status st;
	struct agent_assign *a;
	size_t n = 0, i;
	int ret;

	for (a = ctx->assigns; a; a = a->next)
		n++;
	memset(&st, 0, sizeof(st));
	st.boot_id = ctx->boot_id;
	st.items = xcalloc(n ? n : 1, sizeof(*st.items));
	st.n = n;
	i = 0;
	for (a = ctx->assigns; a; a = a->next) {
		agent_assign_report(a, &st.items[i++]);
		a->final_in_flight = !a->desired && ctx->sess.have_work &&
				     quiet(a);
	}
	st.images_json = ctx->images.unsent ? ctx->images.list : NULL;
	st.images_pruned = ctx->images.done;
	ctx->images.in_flight = st.images_json != NULL;
	agent_telemetry_take(ctx, &st.samples, &st.n_samples);
	ret = api_status_build(&st, out);
	for (i = 0; i < n; i++)
		agent_report_clear(&st.items[i]);
	free(st.items);
	return ret;
}

void agent_assign_status_done(struct agent_ctx *ctx, int ok)
{
	struct agent_assign *a;

	for (a = ctx->assigns; a; a = a->next) {
		if (a->final_in_flight && ok)
			a->final_acked = 1;
		a->final_in_flight = 0;
	}
	if (ctx->images.in_flight && ok)
		ctx->images.unsent = 0;
	ctx->images.in_flight = 0;
	agent_telemetry_done(ctx, ok);
}
