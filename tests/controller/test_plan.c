/*
 * Tests controller/plan.c: ctrl_plan() over a table of every transition
 * the controller decides (placement, progress, completion, rank failure
 * with and without retries, a lost host with and without a spare, stop,
 * MaxRuntime, planned moves, MPI), and ctrl_plan_summarize() over agent
 * reports as they arrive on the wire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/plan.h"
#include "db/run.h"

/* A summary in one line: n hosts and what their reports add up to. */
struct sum {
	size_t n, running, downloading, exited_ok, done;
	int failed;
	const char *reason;
	int leader_exited;
	size_t followers_waiting;
};

struct row {
	const char *name;
	/* in */
	enum ctrl_job_state cur;
	int attempt;
	struct sum sum;
	int stop_max_runtime, runtime_exceeded, settled, any_drained,
		drain_move_failed, retryable, retries_left, planned_move;
	size_t restart_missing;
	int restart_wait_over;
	/* out */
	enum ctrl_plan_act act;
	const char *actions;
	enum ctrl_job_state to;
	int upload, then_complete, stop_followers;
	const char *text; /* substring of out.text, or NULL: empty */
	int queued_again; /* in: preempted, back in the queue */
};

#define S_ST CTRL_JOB_STARTING
#define S_DL CTRL_JOB_DOWNLOADING
#define S_TR CTRL_JOB_TRAINING
#define S_UP CTRL_JOB_UPLOADING
#define S_RS CTRL_JOB_RESTARTING
#define S_SG CTRL_JOB_STOPPING
#define S_IN CTRL_JOB_INTERRUPTED

/* clang-format off */
static const struct row rows[] = {
	{ "queued job is placed", S_ST, 0, { 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_PLACE, NULL, 0, 0, 0, 0, NULL, 0 },
	{ "stop before placement: Stopped at once", S_SG, 0, { 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, NULL, CTRL_JOB_STOPPED, 0, 0, 0, NULL, 0 },
	{ "MaxRuntime before placement: MaxRuntimeExceeded", S_SG, 0, { 0 },
	  1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, NULL, CTRL_JOB_MAX_RUNTIME, 0, 0, 0, NULL, 0 },
	{ "stop: ranks told to stop, hosts not settled yet", S_SG, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_NOTHING, "stop", 0, 0, 0, 0, NULL, 0 },
	{ "stop: settled, Stopped with the model uploaded", S_SG, 1,
	  { 2, 2, 0, 2, 2, 0, NULL, 0, 0 },
	  0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, "stop", CTRL_JOB_STOPPED, 1, 0, 0, NULL, 0 },
	{ "MaxRuntime stop settled: MaxRuntimeExceeded", S_SG, 1,
	  { 1, 1, 0, 1, 1, 0, NULL, 0, 0 },
	  1, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, "stop", CTRL_JOB_MAX_RUNTIME, 1, 0, 0, NULL, 0 },
	{ "running past MaxRuntimeInSeconds: time out", S_TR, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_TIME_OUT, NULL, 0, 0, 0, 0, NULL, 0 },
	{ "assigned, nothing reported: wait", S_ST, 1,
	  { 3, 0, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_NOTHING, NULL, 0, 0, 0, 0, NULL, 0 },
	{ "a host downloads: Downloading", S_ST, 1,
	  { 3, 0, 1, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_DL, 0, 0, 0, NULL, 0 },
	{ "every host runs: Training", S_DL, 1,
	  { 3, 3, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_TR, 0, 0, 0, NULL, 0 },
	{ "every rank exited 0, uploads under way: Uploading", S_TR, 1,
	  { 3, 3, 0, 3, 1, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_UP, 0, 0, 0, NULL, 0 },
	{ "every host done: Uploading, then Completed", S_TR, 1,
	  { 3, 3, 0, 3, 3, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_UP, 0, 1, 0, NULL, 0 },
	{ "rank failure, retries left: Restarting, ranks aborted", S_TR, 1,
	  { 3, 3, 0, 2, 0, 1, "AlgorithmError: algo-2 rank 0 exited with code 3", 0, 0 },
	  0, 0, 0, 0, 0, 1, 2, 0, 0, 0,
	  CTRL_PLAN_RESTART, "abort", 0, 0, 0, 0,
	  "Attempt 1 failed: AlgorithmError: algo-2 rank 0 exited with code 3. Restarting (1 restart left)", 0 },
	{ "rank failure, last retry: (0 restarts left)", S_TR, 2,
	  { 1, 1, 0, 0, 0, 1, "AlgorithmError: x", 0, 0 },
	  0, 0, 0, 0, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_RESTART, "abort", 0, 0, 0, 0, "(0 restarts left)", 0 },
	{ "rank failure, no retries left: Failed", S_TR, 3,
	  { 1, 1, 0, 0, 0, 1, "AlgorithmError: x", 0, 0 },
	  0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, "abort", CTRL_JOB_FAILED, 0, 0, 0, "AlgorithmError: x", 0 },
	{ "a ClientError is not retried: Failed", S_TR, 1,
	  { 1, 0, 0, 0, 0, 1, "ClientError: bad channel", 0, 0 },
	  0, 0, 0, 0, 0, 0, 5, 0, 0, 0,
	  CTRL_PLAN_FINISH, "abort", CTRL_JOB_FAILED, 0, 0, 0, "ClientError: bad channel", 0 },
	{ "failure while Uploading fails the job", S_UP, 1,
	  { 2, 2, 0, 1, 1, 1, "AlgorithmError: y", 0, 0 },
	  0, 0, 0, 0, 0, 1, 3, 0, 0, 0,
	  CTRL_PLAN_FINISH, "abort", CTRL_JOB_FAILED, 0, 0, 0, "AlgorithmError: y", 0 },
	{ "host lost while Uploading, retries left: Restarting", S_UP, 1,
	  { 2, 2, 0, 2, 1, 1, "InternalServerError: host h1 (algo-1) stopped responding", 0, 0 },
	  0, 0, 0, 0, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_RESTART, "abort", 0, 0, 0, 0, "stopped responding", 0 },
	{ "host lost while Uploading, no retries left: Failed", S_UP, 1,
	  { 2, 2, 0, 2, 1, 1, "InternalServerError: host h1 (algo-1) stopped responding", 0, 0 },
	  0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, "abort", CTRL_JOB_FAILED, 0, 0, 0, "stopped responding", 0 },
	{ "host lost, retries left: Restarting", S_TR, 1,
	  { 2, 1, 0, 0, 0, 1, "InternalServerError: host h2 (algo-2) stopped responding", 0, 0 },
	  0, 0, 0, 0, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_RESTART, "abort", 0, 0, 0, 0, "stopped responding", 0 },
	{ "restarting, hosts not settled: abort and wait", S_RS, 1,
	  { 2, 1, 0, 0, 0, 1, "x", 0, 0 },
	  0, 0, 0, 0, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_NOTHING, "abort", 0, 0, 0, 0, NULL, 0 },
	{ "restarting, settled, a spare for the lost host: next attempt", S_RS, 1,
	  { 2, 1, 0, 0, 0, 1, "x", 0, 0 },
	  0, 0, 1, 0, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_NEXT_ATTEMPT, "abort", 0, 0, 0, 0, NULL, 0 },
	{ "restarting, no spare yet: wait", S_RS, 1,
	  { 2, 1, 0, 0, 0, 1, "x", 0, 0 },
	  0, 0, 1, 0, 0, 1, 1, 0, 1, 0,
	  CTRL_PLAN_NOTHING, "abort", 0, 0, 0, 0, NULL, 0 },
	{ "restarting, no spare within --restart-wait: Failed", S_RS, 1,
	  { 2, 1, 0, 0, 0, 1, "x", 0, 0 },
	  0, 0, 1, 0, 0, 1, 1, 0, 1, 1,
	  CTRL_PLAN_FINISH, "abort", CTRL_JOB_FAILED, 0, 0, 0,
	  "InternalServerError: 1 host of the job were lost and no spare host was free within 60 s", 0 },
	{ "planned move restarting: ranks stopped, not aborted", S_RS, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
	  CTRL_PLAN_NOTHING, "stop", 0, 0, 0, 0, NULL, 0 },
	{ "a host was drained: try a planned move", S_TR, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_MOVE, NULL, 0, 0, 0, 0, NULL, 0 },
	{ "drained, no spare: train on", S_TR, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 1, 1, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_TR, 0, 0, 0, NULL, 0 },
	{ "drained but failed: the failure wins", S_TR, 1,
	  { 2, 2, 0, 0, 0, 1, "AlgorithmError: z", 0, 0 },
	  0, 0, 0, 1, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_RESTART, "abort", 0, 0, 0, 0, "AlgorithmError: z", 0 },
	{ "drained while Uploading: no move", S_UP, 1,
	  { 2, 2, 0, 2, 1, 0, NULL, 0, 0 },
	  0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_UP, 0, 0, 0, NULL, 0 },
	{ "MPI: mpirun ended, followers still up: stop them", S_TR, 1,
	  { 3, 3, 0, 1, 0, 0, NULL, 1, 2 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_ADVANCE, NULL, S_TR, 0, 0, 1, NULL, 0 },
	{ "preempted: ranks told to stop, hosts not settled yet", S_IN, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_NOTHING, "stop", 0, 0, 0, 0, NULL, 0 },
	{ "preempted, a rank fails as it stops: no verdict, no retry", S_IN, 1,
	  { 2, 1, 0, 0, 0, 1, "AlgorithmError: killed by signal 15", 0, 0 },
	  0, 0, 0, 0, 0, 1, 1, 0, 0, 0,
	  CTRL_PLAN_NOTHING, "stop", 0, 0, 0, 0, NULL, 0 },
	{ "preempted and settled: back to the queue", S_IN, 2,
	  { 2, 2, 0, 0, 2, 0, NULL, 0, 0 },
	  0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_REQUEUE, "stop", 0, 0, 0, 0, NULL, 0 },
	{ "preempted past MaxRuntimeInSeconds: time out", S_IN, 1,
	  { 2, 2, 0, 0, 0, 0, NULL, 0, 0 },
	  0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_TIME_OUT, NULL, 0, 0, 0, 0, NULL, 0 },
	{ "back in the queue: placed again as attempt N+1", S_ST, 2, { 0 },
	  0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_PLACE, NULL, 0, 0, 0, 0, NULL, 1 },
	{ "stop while back in the queue: Stopped, nothing to upload", S_SG, 2,
	  { 0 },
	  0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	  CTRL_PLAN_FINISH, NULL, CTRL_JOB_STOPPED, 0, 0, 0, NULL, 1 },
};
/* clang-format on */

static void test_table(void **state)
{
	struct ctrl_plan_out out;
	size_t i;

	(void)state;
	memset(&out, 0, sizeof(out));
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct ctrl_plan_summary s;
		struct ctrl_plan_in in;

		memset(&s, 0, sizeof(s));
		memset(&in, 0, sizeof(in));
		buf_init(&s.reason, 0);
		s.n = r->sum.n;
		s.running = r->sum.running;
		s.downloading = r->sum.downloading;
		s.exited_ok = r->sum.exited_ok;
		s.done = r->sum.done;
		s.failed = r->sum.failed;
		if (r->sum.reason)
			(void)buf_adds(&s.reason, r->sum.reason);
		s.leader_exited = r->sum.leader_exited;
		s.followers_waiting = r->sum.followers_waiting;
		in.cur = r->cur;
		in.attempt = r->attempt;
		in.s = r->attempt ? &s : NULL;
		in.stop_max_runtime = r->stop_max_runtime;
		in.runtime_exceeded = r->runtime_exceeded;
		in.settled = r->settled;
		in.any_drained = r->any_drained;
		in.drain_move_failed = r->drain_move_failed;
		in.retryable = r->retryable;
		in.retries_left = r->retries_left;
		in.planned_move = r->planned_move;
		in.queued_again = r->queued_again;
		in.restart_missing = r->restart_missing;
		in.restart_wait_over = r->restart_wait_over;
		in.restart_wait_s = 60;
		ctrl_plan(&in, &out);
		if (out.act != r->act)
			fail_msg("%s: act %d, want %d", r->name, out.act,
				 r->act);
		if ((out.actions == NULL) != (r->actions == NULL) ||
		    (r->actions && strcmp(out.actions, r->actions)))
			fail_msg("%s: actions %s, want %s", r->name,
				 out.actions ? out.actions : "none",
				 r->actions ? r->actions : "none");
		if ((r->act == CTRL_PLAN_FINISH || r->act == CTRL_PLAN_ADVANCE) &&
		    out.to != r->to)
			fail_msg("%s: to %s, want %s", r->name,
				 ctrl_job_state_secondary(out.to),
				 ctrl_job_state_secondary(r->to));
		if (out.upload != r->upload ||
		    out.then_complete != r->then_complete ||
		    out.stop_followers != r->stop_followers)
			fail_msg("%s: upload %d complete %d stop_followers %d",
				 r->name, out.upload, out.then_complete,
				 out.stop_followers);
		if (r->text ? !strstr(out.text.data, r->text) : out.text.len)
			fail_msg("%s: text '%s', want '%s'", r->name,
				 out.text.data, r->text ? r->text : "");
		/* A failure reason is given exactly when the job fails. */
		if (out.act == CTRL_PLAN_FINISH &&
		    out.has_reason != (r->to == CTRL_JOB_FAILED))
			fail_msg("%s: has_reason %d", r->name, out.has_reason);
		/* Every terminal move is one the state table allows. */
		if (out.act == CTRL_PLAN_FINISH &&
		    !ctrl_job_transition_allowed(r->cur, out.to))
			fail_msg("%s: %s -> %s is not allowed", r->name,
				 ctrl_job_state_secondary(r->cur),
				 ctrl_job_state_secondary(out.to));
		buf_release(&s.reason);
		buf_release(&s.runtime);
	}
	buf_release(&out.text);
}

/*
 * A hang the agent found, with StalledTrainingRule's stop_training_on_fire:
 * the job stops (abort, then Stopping) instead of restarting or failing;
 * without the setting, or for a failure that is not a hang, it restarts.
 */
static void test_stall_stop(void **state)
{
	struct ctrl_plan_summary s;
	struct ctrl_plan_in in;
	struct ctrl_plan_out out;

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	buf_init(&s.reason, 0);
	(void)buf_adds(&s.reason, "AlgorithmError: algo-2 (host h2) rank 0 "
				  "made no progress for 5 s");
	s.n = s.running = 2;
	s.failed = s.hung = 1;
	in.cur = CTRL_JOB_TRAINING;
	in.attempt = 1;
	in.s = &s;
	in.retryable = 1;
	in.retries_left = 2;
	in.stop_on_stall = 1;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_STALL_STOP);
	assert_string_equal(out.actions, "abort");
	assert_string_equal(out.text.data,
			    "StalledTrainingRule found an issue ("
			    "AlgorithmError: algo-2 (host h2) rank 0 made no "
			    "progress for 5 s): stopping the training job");
	/* No retries left: stopped all the same, not Failed. */
	in.retries_left = 0;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_STALL_STOP);
	/* Without stop_training_on_fire: restarted like any failure. */
	in.retries_left = 2;
	in.stop_on_stall = 0;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_RESTART);
	/* A crash is not a hang: restarted too. */
	in.stop_on_stall = 1;
	s.hung = 0;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_RESTART);
	/* Stopping once settled ends Stopped, as after StopTrainingJob. */
	in.cur = CTRL_JOB_STOPPING;
	in.settled = 1;
	s.hung = 1;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_FINISH);
	assert_int_equal(out.to, CTRL_JOB_STOPPED);
	buf_release(&out.text);
	buf_release(&s.reason);
}

/* One host's stored report: phase, then each process as "code" or "sN"
 * (killed by signal N) or "-" (running), exited at exited_ms. */
static char *report(int host_index, const char *phase, const char *procs,
		    long long exited_ms, const char *failure)
{
	struct buf b = BUF_INIT;
	const char *p = procs;
	int rank = 0;

	(void)buf_addf(&b,
		       "{\"boot_id\":\"b\",\"assignments\":[{\"job\":\"j\","
		       "\"job_uid\":\"0123456789abcdef\",\"attempt\":1,"
		       "\"algo\":\"algo-%d\",\"phase\":\"%s\","
		       "\"started_ms\":1,\"processes\":[",
		       host_index + 1, phase);
	while (p && *p) {
		char tok[16];
		size_t k = strcspn(p, " ");

		snprintf(tok, sizeof(tok), "%.*s", (int)k, p);
		(void)buf_addf(&b, "%s{\"rank\":%d,\"pid\":%d,\"started_ms\":1,",
			       rank ? "," : "", rank, 100 + rank);
		if (!strcmp(tok, "-"))
			(void)buf_adds(&b, "\"exit_code\":null,\"signal\":null,"
					   "\"exited_ms\":null}");
		else if (tok[0] == 's')
			(void)buf_addf(&b,
				       "\"exit_code\":null,\"signal\":%s,"
				       "\"exited_ms\":%lld}",
				       tok + 1, exited_ms);
		else
			(void)buf_addf(&b,
				       "\"exit_code\":%s,\"signal\":null,"
				       "\"exited_ms\":%lld}",
				       tok, exited_ms);
		rank++;
		p += k;
		while (*p == ' ')
			p++;
	}
	(void)buf_addf(&b, "],\"failure\":%s%s%s,\"error\":null}]}",
		       failure ? "\"" : "", failure ? failure : "null",
		       failure ? "\"" : "");
	return buf_detach(&b, NULL);
}

static void set(struct db_assignment *a, int index, const char *host,
		char *json)
{
	memset(a, 0, sizeof(*a));
	a->host_index = index;
	a->host = (char *)host;
	a->report_json = json;
}

static void test_summarize(void **state)
{
	struct db_assignment as[3];
	struct ctrl_plan_summary s;
	int lost[3] = { 0, 0, 0 };
	int i;

	(void)state;
	/* All done and exited 0. */
	set(&as[0], 0, "h1", report(0, "done", "0", 50, NULL));
	set(&as[1], 1, "h2", report(1, "done", "0", 60, NULL));
	set(&as[2], 2, "h3", NULL); /* not reported yet */
	ctrl_plan_summarize(as, lost, 3, 0, &s);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.done, 2);
	assert_int_equal(s.exited_ok, 2);
	assert_false(s.failed);
	assert_null(s.culprit);
	buf_release(&s.reason);
	for (i = 0; i < 3; i++)
		free(as[i].report_json);

	/* Two ranks fail: the first in time names the culprit. */
	set(&as[0], 0, "h1", report(0, "exited", "s9", 80, NULL));
	set(&as[1], 1, "h2", report(1, "exited", "3", 70, NULL));
	set(&as[2], 2, "h3", report(2, "running", "-", 0, NULL));
	ctrl_plan_summarize(as, lost, 3, 0, &s);
	assert_true(s.failed);
	assert_non_null(strstr(s.reason.data, "algo-2 (host h2) RANK 1 "
					      "exited with code 3"));
	/* ...and the host the failure is laid at: not h1, whose rank
	 * was merely killed after it. */
	assert_string_equal(s.culprit, "h2");
	assert_int_equal(s.running, 3);
	buf_release(&s.reason);
	for (i = 0; i < 3; i++)
		free(as[i].report_json);

	/* The program's own failure file wins over the exit code. */
	set(&as[0], 0, "h1", report(0, "exited", "1", 80, "out of memory"));
	ctrl_plan_summarize(as, lost, 1, 0, &s);
	assert_string_equal(s.reason.data, "AlgorithmError: out of memory");
	assert_string_equal(s.culprit, "h1");
	assert_false(s.hung);
	buf_release(&s.reason);
	free(as[0].report_json);

	/* A hang the agent found is marked as one (StalledTrainingRule). */
	as[0].report_json = report(0, "exited", "s9", 80, "algo-1 hung");
	as[0].report_json[strlen(as[0].report_json) - 3] = '\0';
	{
		struct buf b = BUF_INIT;

		(void)buf_addf(&b, "%s,\"hung\":true}]}", as[0].report_json);
		free(as[0].report_json);
		as[0].report_json = buf_detach(&b, NULL);
	}
	ctrl_plan_summarize(as, lost, 1, 0, &s);
	assert_string_equal(s.reason.data, "AlgorithmError: algo-1 hung");
	assert_true(s.hung);
	buf_release(&s.reason);
	free(as[0].report_json);

	/* The first host that says which versions its script runs. */
	set(&as[0], 0, "h1", report(0, "running", "-", 0, NULL));
	set(&as[1], 1, "h2", report(1, "running", "-", 0, NULL));
	for (i = 0; i < 2; i++) {
		struct buf b = BUF_INIT;

		as[i].report_json[strlen(as[i].report_json) - 3] = '\0';
		(void)buf_addf(&b, "%s,\"runtime\":\"Python 3.%d\"}]}",
			       as[i].report_json, 11 - i);
		free(as[i].report_json);
		as[i].report_json = buf_detach(&b, NULL);
	}
	ctrl_plan_summarize(as, lost, 2, 0, &s);
	assert_string_equal(s.runtime.data, "Python 3.11");
	assert_false(s.failed);
	buf_release(&s.reason);
	buf_release(&s.runtime);
	for (i = 0; i < 2; i++)
		free(as[i].report_json);

	/* A lost host fails the attempt. */
	set(&as[0], 0, "h1", report(0, "running", "-", 0, NULL));
	set(&as[1], 1, "h2", report(1, "running", "-", 0, NULL));
	lost[1] = 1;
	ctrl_plan_summarize(as, lost, 2, 0, &s);
	assert_true(s.failed);
	assert_string_equal(s.reason.data, "InternalServerError: host h2 "
					   "(algo-2) stopped responding");
	/* A lost host is not laid a failure at (no quarantine for it). */
	assert_null(s.culprit);
	buf_release(&s.reason);
	lost[1] = 0;
	for (i = 0; i < 2; i++)
		free(as[i].report_json);

	/* MPI: mpirun (algo-1) ended; the followers still serve it. */
	set(&as[0], 0, "h1", report(0, "done", "0", 90, NULL));
	set(&as[1], 1, "h2", report(1, "running", "-", 0, NULL));
	set(&as[2], 2, "h3", report(2, "running", "-", 0, NULL));
	ctrl_plan_summarize(as, lost, 3, 1, &s);
	assert_true(s.leader_exited);
	assert_int_equal(s.followers_waiting, 2);
	assert_false(s.failed);
	buf_release(&s.reason);
	for (i = 0; i < 3; i++)
		free(as[i].report_json);

	/* ... one follower's daemon was killed as mpirun ended (143): it
	 * waits in exited for the word to stop, no verdict. */
	set(&as[0], 0, "h1", report(0, "done", "0", 90, NULL));
	set(&as[1], 1, "h2", report(1, "exited", "143", 95, NULL));
	set(&as[2], 2, "h3", report(2, "done", "0", 95, NULL));
	ctrl_plan_summarize(as, lost, 3, 1, &s);
	assert_true(s.leader_exited);
	assert_int_equal(s.followers_waiting, 1);
	assert_int_equal(s.done, 2);
	assert_false(s.failed);
	buf_release(&s.reason);
	for (i = 0; i < 3; i++)
		free(as[i].report_json);

	/* A reason is cut at CTRL_REASON_MAX, at a character boundary. */
	{
		char *tail = malloc(3000), *json;

		for (i = 0; i < 2998; i += 2) {
			tail[i] = (char)0xc3; /* U+00E9, two bytes */
			tail[i + 1] = (char)0xa9;
		}
		tail[2998] = '\0';
		json = report(0, "exited", "1", 10, tail);
		set(&as[0], 0, "h1", json);
		ctrl_plan_summarize(as, lost, 1, 0, &s);
		assert_true(s.reason.len <= CTRL_REASON_MAX);
		assert_true(((unsigned char)s.reason.data[s.reason.len - 1] &
			     0xc0) == 0x80);
		buf_release(&s.reason);
		free(json);
		free(tail);
	}
}

/*
 * A report of host idx whose ranks 0..nproc-1 ran, the last one exiting
 * with code 3 and last lines tail (JSON-escaped), the others 0.
 */
static char *tail_report(int idx, int nproc, const char *tail)
{
	struct buf b = BUF_INIT;
	int k;

	(void)buf_addf(&b,
		       "{\"boot_id\":\"b\",\"assignments\":[{\"job\":\"j\","
		       "\"attempt\":1,\"algo\":\"algo-%d\","
		       "\"phase\":\"exited\",\"started_ms\":1,"
		       "\"processes\":[",
		       idx + 1);
	for (k = 0; k < nproc; k++)
		(void)buf_addf(&b,
			       "%s{\"rank\":%d,\"pid\":%d,\"started_ms\":1,"
			       "\"exit_code\":%d,\"signal\":null,"
			       "\"exited_ms\":70%s%s%s}",
			       k ? "," : "", k, 100 + k, k == nproc - 1 ? 3 : 0,
			       k == nproc - 1 ? ",\"tail\":\"" : "",
			       k == nproc - 1 ? tail : "",
			       k == nproc - 1 ? "\"" : "");
	(void)buf_adds(&b, "],\"failure\":null,\"error\":null}]}");
	return buf_detach(&b, NULL);
}

/* A line of n copies of c after a prefix, for tails. */
static void add_line(struct buf *b, const char *prefix, char c, size_t n)
{
	(void)buf_adds(b, prefix);
	while (n--)
		(void)buf_add(b, &c, 1);
}

static void test_reason_rank_and_tail(void **state)
{
	struct db_assignment as[2];
	struct ctrl_plan_summary s;
	int lost[2] = { 0, 0 };
	struct buf tail = BUF_INIT, want = BUF_INIT;

	(void)state;
	/* Two ranks a host: algo-2's local rank 1 is the global RANK 3. */
	set(&as[0], 0, "h1", tail_report(0, 2, "x"));
	set(&as[1], 1, "h2", tail_report(1, 2, "a\\nb | c\\nlast"));
	free(as[0].report_json);
	as[0].report_json = report(0, "running", "- -", 0, NULL);
	ctrl_plan_summarize(as, lost, 2, 0, &s);
	assert_string_equal(s.reason.data,
			    "AlgorithmError: algo-2 (host h2) RANK 3 (local "
			    "rank 1) exited with code 3; last output: a | b | "
			    "c | last");
	buf_release(&s.reason);
	free(as[0].report_json);
	free(as[1].report_json);

	/* MPI: algo-1's process is mpirun. */
	set(&as[0], 0, "h1", tail_report(0, 1, "boom"));
	ctrl_plan_summarize(as, lost, 1, 1, &s);
	assert_string_equal(s.reason.data,
			    "AlgorithmError: algo-1 (host h1) mpirun exited "
			    "with code 3; last output: boom");
	buf_release(&s.reason);
	free(as[0].report_json);

	/* Too much output: the newest lines that fit, whole; older ones
	 * are said to be left out. */
	add_line(&tail, "old-", 'o', 600);
	add_line(&tail, "\\nmid-", 'm', 300);
	add_line(&tail, "\\nnew-", 'n', 300);
	set(&as[0], 0, "h1", tail_report(0, 1, tail.data));
	ctrl_plan_summarize(as, lost, 1, 0, &s);
	assert_true(s.reason.len <= CTRL_REASON_MAX);
	assert_null(strstr(s.reason.data, "old-"));
	add_line(&want, "; last output: ... | mid-", 'm', 300);
	add_line(&want, " | new-", 'n', 300);
	assert_string_equal(s.reason.data + s.reason.len - want.len, want.data);
	buf_release(&s.reason);
	free(as[0].report_json);

	/* The newest line alone is too long: its start, marked as cut. */
	buf_reset(&tail);
	add_line(&tail, "huge-", 'h', 2000);
	set(&as[0], 0, "h1", tail_report(0, 1, tail.data));
	ctrl_plan_summarize(as, lost, 1, 0, &s);
	assert_true(s.reason.len <= CTRL_REASON_MAX);
	assert_non_null(strstr(s.reason.data, "; last output: huge-hhh"));
	assert_string_equal(s.reason.data + s.reason.len - 4, "h...");
	buf_release(&s.reason);
	free(as[0].report_json);
	buf_release(&tail);
	buf_release(&want);
}

static char *checked_report(int idx, const char *phase, const char *error,
			    int check_ms)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b,
		       "{\"boot_id\":\"b\",\"assignments\":[{\"job\":\"j\","
		       "\"attempt\":1,\"algo\":\"algo-%d\",\"phase\":\"%s\","
		       "\"started_ms\":null,\"processes\":[],"
		       "\"failure\":null,\"error\":",
		       idx + 1, phase);
	if (error)
		(void)buf_addf(&b, "\"%s\"", error);
	else
		(void)buf_adds(&b, "null");
	if (check_ms)
		(void)buf_addf(&b, ",\"check_ms\":%d", check_ms);
	(void)buf_adds(&b, "}]}");
	return buf_detach(&b, NULL);
}

/*
 * Infrastructure checks: hosts that passed are counted with the slowest
 * time; a host that failed them is an InternalServerError naming it,
 * which ctrl_plan() answers with a replacement, or (no spare) as any
 * failure.
 */
static void test_infra_check(void **state)
{
	struct db_assignment as[3];
	struct ctrl_plan_summary s;
	struct ctrl_plan_in in;
	struct ctrl_plan_out out;
	int lost[3] = { 0, 0, 0 };
	int i;

	(void)state;
	set(&as[0], 0, "h1", checked_report(0, "preparing", NULL, 5));
	set(&as[1], 1, "h2", checked_report(1, "downloading", NULL, 41));
	set(&as[2], 2, "h3", checked_report(2, "preparing", NULL, 0));
	ctrl_plan_summarize(as, lost, 3, 0, &s);
	assert_int_equal(s.checked, 2);
	assert_int_equal(s.check_ms, 40);
	assert_false(s.failed);
	buf_release(&s.reason);
	/* MPI: the followers' passes count too. */
	ctrl_plan_summarize(as, lost, 3, 1, &s);
	assert_int_equal(s.checked, 2);
	buf_release(&s.reason);
	free(as[2].report_json);
	set(&as[2], 2, "h3",
	    checked_report(2, "error",
			   "Infrastructure check failed: /dev/shm has 3 MiB "
			   "free, needs 64 MiB",
			   0));
	ctrl_plan_summarize(as, lost, 3, 0, &s);
	assert_true(s.failed);
	assert_int_equal(s.check_failed, 3);
	assert_string_equal(s.reason.data,
			    "InternalServerError: Infrastructure check failed "
			    "on algo-3 (host h3): /dev/shm has 3 MiB free, "
			    "needs 64 MiB");

	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	in.cur = CTRL_JOB_STARTING;
	in.attempt = 1;
	in.s = &s;
	in.retryable = 1;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_REPLACE);
	assert_string_equal(out.actions, "abort");
	/* No spare, no retries: Failed with the check's reason. */
	in.check_replace_failed = 1;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_FINISH);
	assert_int_equal(out.to, CTRL_JOB_FAILED);
	assert_string_equal(out.text.data, s.reason.data);
	/* ... with retries left: another attempt on the same hosts. */
	in.retries_left = 1;
	ctrl_plan(&in, &out);
	assert_int_equal(out.act, CTRL_PLAN_RESTART);
	buf_release(&out.text);
	buf_release(&s.reason);
	/* Any other agent error stays a ClientError. */
	free(as[2].report_json);
	set(&as[2], 2, "h3", checked_report(2, "error", "no such channel", 0));
	ctrl_plan_summarize(as, lost, 3, 0, &s);
	assert_int_equal(s.check_failed, 0);
	assert_string_equal(s.reason.data,
			    "ClientError: algo-3 (host h3): no such channel");
	buf_release(&s.reason);
	/* ... but a full disk is the host's: retried, laid at the host. */
	free(as[2].report_json);
	set(&as[2], 2, "h3",
	    checked_report(2, "error",
			   "Host fault: the disk of the work folder is full: "
			   "12 KiB free (channel 'train': cannot write)",
			   0));
	ctrl_plan_summarize(as, lost, 3, 0, &s);
	assert_int_equal(s.check_failed, 0);
	assert_string_equal(s.culprit, "h3");
	assert_string_equal(s.reason.data,
			    "InternalServerError: algo-3 (host h3): Host fault: "
			    "the disk of the work folder is full: 12 KiB free "
			    "(channel 'train': cannot write)");
	buf_release(&s.reason);
	for (i = 0; i < 3; i++)
		free(as[i].report_json);
}

/*
 * Elastic jobs (controller/elastic.h): a lost host restarts a job that
 * keeps its minimum without a retry, whatever its budget; the restart
 * waits --elastic-wait for a spare, then goes on with the hosts it has,
 * but never below the minimum; the lost host's attempt is no move, its
 * ranks are killed.
 */
static enum ctrl_plan_act plan_of(const struct ctrl_plan_in *in,
				  struct ctrl_plan_out *out)
{
	buf_release(&out->text);
	memset(out, 0, sizeof(*out));
	buf_init(&out->text, 0);
	ctrl_plan(in, out);
	return out->act;
}

static void test_elastic(void **state)
{
	struct ctrl_plan_summary s;
	struct ctrl_plan_in in;
	struct ctrl_plan_out out;

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	buf_init(&s.reason, 0);
	(void)buf_adds(&s.reason, "InternalServerError: host node3 (algo-3) "
				  "stopped responding");
	s.n = 3;
	s.running = 2;
	s.failed = 1;
	s.lost = 1;
	in.cur = CTRL_JOB_TRAINING;
	in.attempt = 1;
	in.s = &s;
	in.retryable = 1;
	in.retries_left = 0;
	in.elastic_min = 2;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_RESTART);
	assert_true(out.elastic);
	assert_string_equal(out.actions, "abort");
	assert_non_null(strstr(out.text.data, "on the 2 hosts left (no retry "
					      "spent)"));
	/* Below the minimum, or not elastic: as any job (no retry left). */
	in.elastic_min = 3;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_FINISH);
	in.elastic_min = 0;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_FINISH);
	/* A crash with no host lost is no elastic restart. */
	in.elastic_min = 2;
	s.lost = 0;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_FINISH);

	/* Restarting, settled, one of 3 places without a spare. */
	in.cur = CTRL_JOB_RESTARTING;
	in.settled = 1;
	in.slots = 3;
	in.restart_missing = 1;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_NOTHING);
	assert_string_equal(out.actions, "abort");
	in.elastic_wait_over = 1;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_NEXT_ATTEMPT);
	/* Two missing leave 1 < 2: wait as any job, then fail. */
	in.restart_missing = 2;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_NOTHING);
	in.restart_wait_over = 1;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_FINISH);
	/* A growing job's planned move stops its ranks; a lost host's
	 * attempt (DB_ATTEMPT_ELASTIC) kills them. */
	in.restart_missing = 0;
	in.planned_move = DB_ATTEMPT_MOVED;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_NEXT_ATTEMPT);
	assert_string_equal(out.actions, "stop");
	in.planned_move = DB_ATTEMPT_ELASTIC;
	assert_int_equal(plan_of(&in, &out), CTRL_PLAN_NEXT_ATTEMPT);
	assert_string_equal(out.actions, "abort");
	buf_release(&out.text);
	buf_release(&s.reason);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_summarize),
		cmocka_unit_test(test_reason_rank_and_tail),
		cmocka_unit_test(test_stall_stop),
		cmocka_unit_test(test_infra_check),
		cmocka_unit_test(test_elastic),
	};

	return cmocka_run_group_tests_name("controller/plan", tests, NULL,
					   NULL);
}
