#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/agent_proto.h"
#include "controller/plan.h"
#include "db/run.h"
#include "common/banned.h"

static void describe_exit_only(struct buf *b, const struct db_assignment *a,
			       const struct api_proc_report *p);

static void describe_exit(struct buf *b, const struct db_assignment *a,
			  const struct api_proc_report *p)
{
	describe_exit_only(b, a, p);
	if (p->tail && *p->tail)
		(void)buf_addf(b, "; last output: %s", p->tail);
}

static void describe_exit_only(struct buf *b, const struct db_assignment *a,
			       const struct api_proc_report *p)
{
	if (p->signal)
		(void)buf_addf(b,
			       "AlgorithmError: algo-%d (host %s) rank %d was "
			       "killed by signal %d (%s)",
			       a->host_index + 1, a->host, p->rank, p->signal,
			       strsignal(p->signal));
	else
		(void)buf_addf(b,
			       "AlgorithmError: algo-%d (host %s) rank %d "
			       "exited with code %d",
			       a->host_index + 1, a->host, p->rank,
			       p->exit_code);
}

/* Whether algo-1 has reported every process exited. */
static int leader_exited(const struct db_assignment *as, size_t n)
{
	struct buf err = BUF_INIT;
	struct api_status st;
	size_t i;
	int yes = 0;

	for (i = 0; i < n; i++) {
		if (as[i].host_index != 0 || !as[i].report_json)
			continue;
		if (!api_status_parse(as[i].report_json,
				      strlen(as[i].report_json), &st, &err)) {
			yes = st.n == 1 &&
			      st.items[0].phase >= API_PHASE_EXITED &&
			      st.items[0].phase != API_PHASE_ERROR;
			api_status_release(&st);
		}
	}
	buf_release(&err);
	return yes;
}

/* The summary being added up, and when its failure happened. */
struct tally {
	struct ctrl_plan_summary *s;
	/* The failure named so far: 0 none, 1 a lost host (always wins), 2
	 * an exit at an unknown time, else the exit's time. */
	int64_t first_fail_ms;
};

static void fail_lost(struct tally *t, const struct db_assignment *a)
{
	struct ctrl_plan_summary *s = t->s;

	if (s->failed)
		return;
	s->failed = 1;
	buf_reset(&s->reason);
	(void)buf_addf(&s->reason,
		       "InternalServerError: host %s (algo-%d) stopped "
		       "responding",
		       a->host, a->host_index + 1);
	/* A lost host is the heartbeat's business, not a failure of
	 * the jobs it ran. */
	s->culprit = NULL;
	t->first_fail_ms = 1;
}

/*
 * An MPI follower (not algo-1) that is not in error: it serves mpirun's
 * daemons, so its end is no verdict. Counts it as running or as having
 * ended well, as the phase says.
 */
static void count_follower(struct ctrl_plan_summary *s,
			   const struct api_report *r)
{
	/* An exited one whose daemon mpirun's end killed waits to be told. */
	if (r->phase == API_PHASE_RUNNING || r->phase == API_PHASE_EXITED)
		s->followers_waiting++;
	if (r->phase >= API_PHASE_RUNNING)
		s->running++;
	if (r->phase == API_PHASE_DOWNLOADING)
		s->downloading++;
	if (r->phase == API_PHASE_DONE)
		s->done++;
	if (r->phase >= API_PHASE_EXITED) {
		s->finished++;
		s->exited_ok++;
	}
}

/*
 * Judges the exits of a host that reported them all (its report then
 * carries output/failure too). The first failure in time names the
 * culprit. Returns whether every process exited 0.
 */
static int judge_exits(struct tally *t, const struct db_assignment *a,
		       const struct api_report *r)
{
	struct ctrl_plan_summary *s = t->s;
	int ok = r->phase >= API_PHASE_EXITED && r->n_procs > 0;
	size_t k;

	for (k = 0; r->phase >= API_PHASE_EXITED && k < r->n_procs; k++) {
		const struct api_proc_report *p = &r->procs[k];

		if (!p->exited) {
			ok = 0;
			continue;
		}
		if (p->exit_code == 0 && p->signal == 0)
			continue;
		ok = 0;
		if (s->failed &&
		    !(t->first_fail_ms > 1 && p->exited_ms < t->first_fail_ms))
			continue;
		s->failed = 1;
		t->first_fail_ms = p->exited_ms ? p->exited_ms : 2;
		s->culprit = a->host;
		buf_reset(&s->reason);
		s->hung = r->hung;
		if (r->failure && *r->failure)
			(void)buf_addf(&s->reason, "AlgorithmError: %s",
				       r->failure);
		else
			describe_exit(&s->reason, a, p);
	}
	return ok;
}

/*
 * A host in error: the agent could not prepare (the job's ClientError,
 * unless the error starts with API_HOST_FAULT: a full or read-only disk,
 * the host's InternalServerError), or (its error starts with
 * API_INFRA_CHECK_FAILED) the host failed its infrastructure checks, the
 * infrastructure's failure and not the job's.
 */
static void fail_error(struct ctrl_plan_summary *s,
		       const struct db_assignment *a,
		       const struct api_report *r)
{
	const char *e = r->error ? r->error : "error";
	size_t k = strlen(API_INFRA_CHECK_FAILED);

	s->failed = 1;
	s->culprit = a->host;
	buf_reset(&s->reason);
	if (!strncmp(e, API_INFRA_CHECK_FAILED, k)) {
		s->check_failed = a->host_index + 1;
		(void)buf_addf(&s->reason,
			       "InternalServerError: Infrastructure check "
			       "failed on algo-%d (host %s): %s",
			       a->host_index + 1, a->host, e + k);
		return;
	}
	(void)buf_addf(&s->reason, "%s: algo-%d (host %s): %s",
		       strncmp(e, API_HOST_FAULT, strlen(API_HOST_FAULT)) ?
			       "ClientError" :
			       "InternalServerError",
		       a->host_index + 1, a->host, e);
}

/* Adds one host's report to the tally. */
static void add_report(struct tally *t, const struct db_assignment *a,
		       const struct api_report *r, int mpi)
{
	struct ctrl_plan_summary *s = t->s;
	int ok = 1;

	/* Every host's, an MPI follower's too: they release the program. */
	if (r->runtime && !s->runtime.len)
		(void)buf_adds(&s->runtime, r->runtime);
	if (r->check_ms > 0) {
		s->checked++;
		if (r->check_ms - 1 > s->check_ms)
			s->check_ms = r->check_ms - 1;
	}
	if (mpi && a->host_index > 0 && r->phase != API_PHASE_ERROR &&
	    (s->leader_exited || r->phase < API_PHASE_EXITED)) {
		count_follower(s, r);
		return;
	}
	if (r->phase == API_PHASE_DOWNLOADING)
		s->downloading++;
	if (r->phase >= API_PHASE_RUNNING && r->phase != API_PHASE_ERROR)
		s->running++;
	if (r->phase == API_PHASE_DONE)
		s->done++;
	if (r->phase >= API_PHASE_EXITED)
		s->finished++;
	if (r->phase == API_PHASE_ERROR) {
		if (!s->failed)
			fail_error(s, a, r);
		ok = 0;
	}
	if (!judge_exits(t, a, r))
		ok = 0;
	if (ok)
		s->exited_ok++;
}

/* Cuts an over-long reason at a character boundary. */
static void cut_reason(struct buf *reason)
{
	size_t cut = CTRL_REASON_MAX;

	if (reason->len <= CTRL_REASON_MAX)
		return;
	while (cut && ((unsigned char)reason->data[cut] & 0xc0) == 0x80)
		cut--;
	reason->len = cut;
	reason->data[cut] = '\0';
}

/*
 * In MPI mode algo-1's outcome (mpirun's) decides: the other hosts serve
 * mpirun's daemons and end when it does, or are stopped then. A host that
 * fails before mpirun has ended (its worker could not start, its daemon
 * died) fails the attempt like any rank.
 */
void ctrl_plan_summarize(const struct db_assignment *as, const int *lost,
			 size_t n, int mpi, struct ctrl_plan_summary *s)
{
	struct tally t = { s, 0 };
	size_t i;

	memset(s, 0, sizeof(*s));
	buf_init(&s->reason, 0);
	buf_init(&s->runtime, 0);
	s->n = n;
	if (mpi)
		s->leader_exited = leader_exited(as, n);
	for (i = 0; i < n; i++) {
		struct api_status st;
		struct buf err = BUF_INIT;

		if (lost[i])
			fail_lost(&t, &as[i]);
		if (!as[i].report_json ||
		    api_status_parse(as[i].report_json,
				     strlen(as[i].report_json), &st, &err) ||
		    st.n != 1) {
			if (as[i].report_json)
				api_status_release(&st);
			buf_release(&err);
			continue;
		}
		buf_release(&err);
		add_report(&t, &as[i], &st.items[0], mpi);
		api_status_release(&st);
	}
	cut_reason(&s->reason);
}

static void finish_to(struct ctrl_plan_out *out, enum ctrl_job_state to,
		      const char *message, const char *reason, int upload)
{
	out->act = CTRL_PLAN_FINISH;
	out->to = to;
	out->message = message;
	out->upload = upload;
	if (reason) {
		(void)buf_adds(&out->text, reason);
		out->has_reason = 1;
	}
}

/* Stop or MaxRuntime: once every host has stopped, Stopped. */
static void plan_stopping(const struct ctrl_plan_in *in,
			  struct ctrl_plan_out *out)
{
	enum ctrl_job_state to = in->stop_max_runtime ? CTRL_JOB_MAX_RUNTIME :
							CTRL_JOB_STOPPED;

	if (in->attempt == 0 || in->queued_again) {
		finish_to(out, to, "Training job stopped", NULL, 0);
		return;
	}
	out->actions = "stop";
	if (in->settled)
		finish_to(out, to,
			  in->stop_max_runtime ? "Training job stopped: "
						 "MaxRuntimeInSeconds exceeded" :
						 "Training job stopped",
			  NULL, 1);
}

/*
 * Restarting: once every host of the failed attempt has settled (killed
 * and acknowledged, or lost), attempt N+1 starts on the same hosts, a
 * lost one replaced by a free live host of its instance type. With no
 * replacement the job waits for the host to return or a spare to free
 * up, at most --restart-wait, then fails. A planned move stops its attempt
 * (SIGTERM, the grace period, a last checkpoint); a failed one is killed.
 */
static void plan_restarting(const struct ctrl_plan_in *in,
			    struct ctrl_plan_out *out)
{
	out->actions = in->planned_move ? "stop" : "abort";
	if (!in->settled)
		return;
	if (!in->restart_missing) {
		out->act = CTRL_PLAN_NEXT_ATTEMPT;
		return;
	}
	if (!in->restart_wait_over)
		return;
	(void)buf_addf(&out->text,
		       "InternalServerError: %zu host%s of the job were lost "
		       "and no spare host was free within %ld s",
		       in->restart_missing, in->restart_missing == 1 ? "" : "s",
		       in->restart_wait_s);
	finish_to(out, CTRL_JOB_FAILED, "Training job failed", NULL, 0);
	out->has_reason = 1;
}

/*
 * Interrupted (preempted for a job that is owed the hosts): the attempt's
 * ranks stop (SIGTERM, the grace period, a last checkpoint sync); once
 * every host has settled the job goes back to the queue. What the ranks
 * do meanwhile, a failure included, is no verdict on the job.
 */
static void plan_interrupted(const struct ctrl_plan_in *in,
			     struct ctrl_plan_out *out)
{
	out->actions = "stop";
	if (in->settled)
		out->act = CTRL_PLAN_REQUEUE;
}

/*
 * StalledTrainingRule with stop_training_on_fire: a hang stops the job, as
 * the service's rule action does (StopTrainingJob); it neither fails nor
 * retries. Returns 1 when it decided.
 */
static int plan_stall_stop(const struct ctrl_plan_in *in,
			   struct ctrl_plan_out *out)
{
	const struct ctrl_plan_summary *s = in->s;

	if (!s->failed || !s->hung || !in->stop_on_stall ||
	    !ctrl_job_transition_allowed(in->cur, CTRL_JOB_STOPPING))
		return 0;
	out->act = CTRL_PLAN_STALL_STOP;
	out->actions = "abort";
	(void)buf_addf(&out->text,
		       "StalledTrainingRule found an issue (%s): stopping the "
		       "training job",
		       s->reason.data);
	return 1;
}

/* No failure: walk forward as the reports say. */
static void plan_progress(const struct ctrl_plan_in *in,
			  struct ctrl_plan_out *out)
{
	const struct ctrl_plan_summary *s = in->s;
	size_t n = s->n;

	/* mpirun is done: whatever still waits for it stops. */
	out->stop_followers = s->leader_exited && s->followers_waiting;
	out->act = CTRL_PLAN_ADVANCE;
	if (s->exited_ok >= n && s->done >= n) {
		out->to = CTRL_JOB_UPLOADING;
		out->then_complete = 1;
	} else if (s->exited_ok >= n) {
		out->to = CTRL_JOB_UPLOADING;
	} else if (s->running >= n) {
		out->to = CTRL_JOB_TRAINING;
	} else if (s->downloading && in->cur == CTRL_JOB_STARTING) {
		out->to = CTRL_JOB_DOWNLOADING;
	} else {
		out->act = CTRL_PLAN_NOTHING;
	}
}

/*
 * A host failed its infrastructure checks before the program started:
 * replaced by a spare, spending no retry, unless none was free.
 */
static int plan_replace(const struct ctrl_plan_in *in,
			struct ctrl_plan_out *out)
{
	if (!in->s->failed || !in->s->check_failed ||
	    in->check_replace_failed ||
	    !ctrl_job_transition_allowed(in->cur, CTRL_JOB_RESTARTING))
		return 0;
	out->act = CTRL_PLAN_REPLACE;
	out->actions = "abort";
	return 1;
}

void ctrl_plan(const struct ctrl_plan_in *in, struct ctrl_plan_out *out)
{
	struct buf text = out->text;
	const struct ctrl_plan_summary *s = in->s;
	enum ctrl_job_state cur = in->cur;

	memset(out, 0, sizeof(*out));
	out->text = text;
	buf_reset(&out->text);
	if (cur == CTRL_JOB_STOPPING) {
		plan_stopping(in, out);
		return;
	}
	if (in->attempt == 0 || in->queued_again) {
		out->act = CTRL_PLAN_PLACE;
		return;
	}
	if (in->runtime_exceeded) {
		out->act = CTRL_PLAN_TIME_OUT;
		return;
	}
	if (cur == CTRL_JOB_INTERRUPTED) {
		plan_interrupted(in, out);
		return;
	}
	if (cur == CTRL_JOB_RESTARTING) {
		plan_restarting(in, out);
		return;
	}
	if ((cur == CTRL_JOB_STARTING || cur == CTRL_JOB_DOWNLOADING ||
	     cur == CTRL_JOB_TRAINING) &&
	    !s->failed && in->any_drained && !in->drain_move_failed) {
		out->act = CTRL_PLAN_MOVE;
		return;
	}
	if (plan_replace(in, out))
		return;
	/*
	 * While uploading, only the infrastructure's failure (a host lost
	 * before its upload arrived) is worth another attempt: the next one
	 * resumes from the last checkpoint and uploads again, and nothing of
	 * this attempt's reaches the output (artifacts are kept by attempt
	 * until the job completes). Any other failure there would recur.
	 */
	if (plan_stall_stop(in, out))
		return;
	if (s->failed && in->retryable &&
	    ctrl_job_transition_allowed(cur, CTRL_JOB_RESTARTING) &&
	    (cur != CTRL_JOB_UPLOADING ||
	     ctrl_failure_internal(s->reason.data)) &&
	    in->retries_left > 0) {
		out->act = CTRL_PLAN_RESTART;
		out->actions = "abort";
		(void)buf_addf(&out->text,
			       "Attempt %d failed: %s. Restarting (%d restart%s "
			       "left)",
			       in->attempt, s->reason.data, in->retries_left - 1,
			       in->retries_left - 1 == 1 ? "" : "s");
		return;
	}
	if (s->failed) {
		out->actions = "abort";
		finish_to(out, CTRL_JOB_FAILED, "Training job failed",
			  s->reason.data, 0);
		return;
	}
	plan_progress(in, out);
}
