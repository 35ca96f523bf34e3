/*
 * Tests controller/quarantine.c: the pure decision over a host's failures
 * (the count of different jobs, the window, jobs that failed elsewhere
 * too, when a failure is confirmed, the reason's text and its cap), then
 * the whole path against a real store: failures laid at hosts, the drain
 * it leads to, and the undrain that forgets them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctrl.h"
#include "tests/controller/ctx_fixture.h"
#include "controller/hosts.h"
#include "controller/quarantine.h"
#include "db/db.h"
#include "db/run.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"

#define NOW 1700000000000LL
#define WINDOW 600000L

static struct db_host_failure failure(const char *job, int64_t ended_ms,
				      const char *reason, int elsewhere)
{
	struct db_host_failure f;

	memset(&f, 0, sizeof(f));
	f.job = (char *)job;
	f.attempt = 1;
	f.started_ms = ended_ms - 100;
	f.ended_ms = ended_ms;
	f.reason = (char *)reason;
	f.elsewhere = elsewhere;
	/* The job left the host and completed elsewhere. */
	f.left = 1;
	f.later_ended_well = 1;
	return f;
}

/* Three different jobs within the window: quarantined, each named. */
static void test_three_jobs(void **state)
{
	struct db_host_failure f[3];
	struct buf reason = BUF_INIT;

	(void)state;
	f[0] = failure("jobA", NOW - 500000, "AlgorithmError: exited 1", 0);
	f[1] = failure("jobB", NOW - 20000, "ClientError: no space left", 0);
	f[2] = failure("jobC", NOW - 1000, NULL, 0);
	assert_int_equal(ctrl_quarantine_decide(f, 3, 3, WINDOW, NOW, &reason),
			 3);
	assert_string_equal(reason.data,
			    "quarantined: 3 jobs failed on this host within "
			    "600 s: jobA (AlgorithmError: exited 1), jobB "
			    "(ClientError: no space left), jobC (failed)");
	assert_true(ctrl_quarantine_is(reason.data));
	assert_false(ctrl_quarantine_is("fans"));
	assert_false(ctrl_quarantine_is(NULL));
	/* One job fewer than asked for: not yet. */
	assert_int_equal(ctrl_quarantine_decide(f, 2, 3, WINDOW, NOW, &reason),
			 0);
	assert_int_equal(reason.len, 0);
	/* 0: the quarantine is off. */
	assert_int_equal(ctrl_quarantine_decide(f, 3, 0, WINDOW, NOW, &reason),
			 0);
	buf_release(&reason);
}

/* The same job failing again counts once; old failures not at all. */
static void test_distinct_and_window(void **state)
{
	struct db_host_failure f[4];
	struct buf reason = BUF_INIT;

	(void)state;
	f[0] = failure("old", NOW - WINDOW - 1, "AlgorithmError: a", 0);
	f[1] = failure("jobA", NOW - 3000, "AlgorithmError: b", 0);
	f[2] = failure("jobA", NOW - 2000, "AlgorithmError: c", 0);
	f[3] = failure("jobB", NOW - 1000, "AlgorithmError: d", 0);
	assert_int_equal(ctrl_quarantine_decide(f, 4, 3, WINDOW, NOW, &reason),
			 0);
	assert_int_equal(ctrl_quarantine_decide(f, 4, 2, WINDOW, NOW, &reason),
			 2);
	/* The job's first failure here speaks for it. */
	assert_string_equal(reason.data,
			    "quarantined: 2 jobs failed on this host within "
			    "600 s: jobA (AlgorithmError: b), jobB "
			    "(AlgorithmError: d)");
	/* At the window's very edge a failure still counts. */
	f[0].ended_ms = NOW - WINDOW;
	assert_int_equal(ctrl_quarantine_decide(f, 4, 3, WINDOW, NOW, &reason),
			 3);
	buf_release(&reason);
}

/* A job that failed on another host too is its own fault. */
static void test_failed_elsewhere(void **state)
{
	struct db_host_failure f[3];
	struct buf reason = BUF_INIT;

	(void)state;
	f[0] = failure("buggy1", NOW - 3000, "AlgorithmError: bug", 1);
	f[1] = failure("buggy2", NOW - 2000, "AlgorithmError: bug", 1);
	f[2] = failure("jobC", NOW - 1000, "AlgorithmError: disk", 0);
	assert_int_equal(ctrl_quarantine_decide(f, 3, 2, WINDOW, NOW, &reason),
			 0);
	f[1].elsewhere = 0;
	assert_int_equal(ctrl_quarantine_decide(f, 3, 2, WINDOW, NOW, &reason),
			 2);
	assert_null(strstr(reason.data, "buggy1"));
	buf_release(&reason);
}

/*
 * A failure is held against the host only once the job got further
 * elsewhere: ended well there, or ran long enough (10 s, and twice as
 * long as the failed attempt did).
 */
static void test_confirmation(void **state)
{
	struct db_host_failure f = failure("j", NOW - 60000, NULL, 0);

	(void)state;
	assert_true(ctrl_quarantine_confirmed(&f, NOW));
	/* A job that never ran again (no retry, a ClientError): no. */
	f.later_ended_well = 0;
	assert_false(ctrl_quarantine_confirmed(&f, NOW));
	/* Running elsewhere: once for 10 s. */
	f.later_running_ms = NOW - CTRL_QUARANTINE_CONFIRM_MS + 1;
	assert_false(ctrl_quarantine_confirmed(&f, NOW));
	f.later_running_ms = NOW - CTRL_QUARANTINE_CONFIRM_MS;
	assert_true(ctrl_quarantine_confirmed(&f, NOW));
	/* A failed attempt that ran 30 s: the next must run 60 s. */
	f.started_ms = f.ended_ms - 30000;
	assert_false(ctrl_quarantine_confirmed(&f, NOW));
	f.later_running_ms = NOW - 60000;
	assert_true(ctrl_quarantine_confirmed(&f, NOW));
	/* It went back to the same host (no spare): no evidence. */
	f.left = 0;
	assert_false(ctrl_quarantine_confirmed(&f, NOW));
	f.left = 1;
	f.elsewhere = 1;
	assert_false(ctrl_quarantine_confirmed(&f, NOW));
}

/* Long reasons are cut per job and in all, at character boundaries. */
static void test_reason_caps(void **state)
{
	static char names[40][16];
	struct db_host_failure f[40];
	struct buf reason = BUF_INIT;
	char *long_reason = malloc(2001);
	int i;

	(void)state;
	for (i = 0; i < 2000; i += 2) {
		long_reason[i] = (char)0xc3; /* U+00E9 */
		long_reason[i + 1] = (char)0xa9;
	}
	long_reason[2000] = '\0';
	for (i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "job%02d", i);
		f[i] = failure(names[i], NOW - 40 + i, long_reason, 0);
	}
	assert_int_equal(ctrl_quarantine_decide(f, 40, 3, WINDOW, NOW, &reason),
			 40);
	assert_true(reason.len <= CTRL_QUARANTINE_REASON_MAX + 100);
	assert_non_null(strstr(reason.data, "quarantined: 40 jobs failed"));
	assert_non_null(strstr(reason.data, "job00 ("));
	assert_null(strstr(reason.data, "job39"));
	/* No character is cut in half. */
	for (i = 0; i + 1 < (int)reason.len; i++)
		if ((unsigned char)reason.data[i] == 0xc3)
			assert_int_equal((unsigned char)reason.data[i + 1],
					 0xa9);
	buf_release(&reason);
	free(long_reason);
}

struct fixture {
	char dir[256];
	struct ctrl_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (ctx_fixture_open(&f->ctx, f->dir, sizeof(f->dir), "quar")) {
		free(f);
		return -1;
	}
	f->ctx.cfg.quarantine_failures = 2;
	f->ctx.cfg.quarantine_window_ms = WINDOW;
	ctrl_hosts_add(&f->ctx, "h1", "t1");
	ctrl_hosts_add(&f->ctx, "h2", "t2");
	ctrl_hosts_add(&f->ctx, "h3", "t3");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ctx_fixture_close(&f->ctx, f->dir);
	free(f);
	return 0;
}

/*
 * Job name runs its attempts on hosts[0..n), one each: every one but the
 * last fails (laid at its host), each next attempt leaves the host, and
 * the last ends as last says (NULL: it still runs; "fail": it fails too).
 */
static void run_job(struct ctrl_ctx *ctx, const char *name,
		    const char *const *hosts, int n, const char *last)
{
	struct db_job j;
	struct buf err = BUF_INIT, why = BUF_INIT;
	int i;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/x";
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Starting";
	j.request_json = (char *)"{}";
	j.instance_count = 1;
	j.creation_ms = time_now_ms();
	assert_int_equal(db_job_insert(ctx->db, &j, "Starting", &err), 0);
	for (i = 0; i < n; i++) {
		int fails = i < n - 1 || (last && !strcmp(last, "fail"));

		assert_int_equal(db_attempt_start(ctx->db, name, i + 1, 20000,
						  &hosts[i], 1, time_now_ms(),
						  &err),
				 0);
		if (i > 0)
			assert_int_equal(db_attempt_set_failed_host_left(
						 ctx->db, name, i, &err),
					 0);
		if (!fails && !last)
			break;
		buf_reset(&why);
		(void)buf_addf(&why, "AlgorithmError: %s failed on %s", name,
			       hosts[i]);
		assert_int_equal(db_attempt_end(ctx->db, name, i + 1,
						fails ? why.data : last,
						time_now_ms(), &err),
				 0);
		if (fails)
			ctrl_quarantine_note(ctx, name, i + 1, hosts[i]);
	}
	ctrl_quarantine_tick(ctx, 1);
	buf_release(&why);
	buf_release(&err);
}

static int drained(struct ctrl_ctx *ctx, const char *host, char **reason)
{
	struct ctrl_host *h = ctrl_hosts_find(ctx, host);

	if (reason)
		*reason = h->drain_reason ? strdup(h->drain_reason) : NULL;
	return h->drained;
}

static void test_store_path(void **state)
{
	static const char *const h1[] = { "h1" };
	static const char *const h1h2[] = { "h1", "h2" };
	static const char *const h1h3[] = { "h1", "h3" };
	static const char *const h2h3[] = { "h2", "h3" };
	struct fixture *f = *state;
	struct ctrl_ctx *ctx = &f->ctx;
	struct db_host_failure *v = NULL;
	struct buf err = BUF_INIT;
	char *reason = NULL, *host = NULL;
	size_t n = 0;

	/* Jobs that fail wherever they run, or never run again, or are
	 * still young elsewhere: nothing is held against h1. */
	run_job(ctx, "buggy", h1h2, 2, "fail");
	run_job(ctx, "no-retry", h1, 1, "fail");
	run_job(ctx, "young", h1h3, 2, NULL);
	assert_false(drained(ctx, "h1", NULL));
	assert_int_equal(
		db_attempt_failed_host(ctx->db, "buggy", 2, &host, &err), 0);
	assert_string_equal(host, "h2");
	free(host);
	assert_int_equal(db_host_failures(ctx->db, "h1", 0, &v, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].job, "buggy");
	assert_true(v[0].elsewhere);
	assert_string_equal(v[0].reason, "AlgorithmError: buggy failed on h1");
	assert_false(v[1].left);
	assert_false(v[1].later_ended_well);
	assert_true(v[2].left);
	assert_false(v[2].later_ended_well);
	assert_true(v[2].later_running_ms > 0);
	db_host_failures_free(v, n);

	/* Failed on h1, completed on h2: held against h1. */
	run_job(ctx, "jobA", h1h2, 2, "Completed");
	assert_false(drained(ctx, "h1", NULL));
	/* The second such job: h1 is drained, both named. */
	run_job(ctx, "jobB", h1h3, 2, "Completed");
	assert_true(drained(ctx, "h1", &reason));
	assert_non_null(reason);
	assert_string_equal(reason,
			    "quarantined: 2 jobs failed on this host within "
			    "600 s: jobA (AlgorithmError: jobA failed on h1), "
			    "jobB (AlgorithmError: jobB failed on h1)");
	free(reason);
	assert_false(drained(ctx, "h2", NULL));
	/* The drain is kept in the store (a restart reads it back). */
	ctrl_hosts_load_drains(ctx);
	assert_true(drained(ctx, "h1", NULL));

	/* Undrain forgets: one more failure does not quarantine it. */
	ctrl_quarantine_forget(ctx, "h1");
	assert_int_equal(db_host_drain_clear(ctx->db, "h1", &err), 0);
	ctrl_hosts_load_drains(ctx);
	assert_int_equal(db_host_failures(ctx->db, "h1", 0, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	db_host_failures_free(v, n);
	run_job(ctx, "jobC", h1h2, 2, "Completed");
	assert_false(drained(ctx, "h1", NULL));
	run_job(ctx, "jobD", h1h3, 2, "Completed");
	assert_true(drained(ctx, "h1", NULL));

	/* Off: failures are recorded, nothing is drained. */
	ctx->cfg.quarantine_failures = 0;
	run_job(ctx, "jobE", h2h3, 2, "Completed");
	run_job(ctx, "jobF", h2h3, 2, "Completed");
	assert_false(drained(ctx, "h2", NULL));
	assert_int_equal(db_host_failures(ctx->db, "h2", 0, &v, &n, &err), 0);
	assert_int_equal(n, 3); /* buggy's second attempt, jobE, jobF */
	db_host_failures_free(v, n);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_jobs),
		cmocka_unit_test(test_distinct_and_window),
		cmocka_unit_test(test_failed_elsewhere),
		cmocka_unit_test(test_confirmation),
		cmocka_unit_test(test_reason_caps),
		cmocka_unit_test_setup_teardown(test_store_path, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("controller/quarantine", tests, NULL,
					   NULL);
}
