/*
 * Tests what agent/upload.c and agent/jobdir.c hand back to assign.c: the
 * outcome of an artifact PUT (uploaded, retry, failed; lost), and a
 * state.json written and found again by the scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/assignment.h"
#include "agent/http.h"
#include "agent/jobdir.h"
#include "agent/upload.h"
#include "api/agent_proto.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "common/timeutil.h"

static char job[] = "job-1";
static char uid[] = "0123456789abcdef";
static char algo[] = "algo-1";
static char boot_id[] = "boot-1";

static void init_assign(struct agent_assign *a)
{
	memset(a, 0, sizeof(*a));
	a->job = job;
	a->attempt = 1;
	a->algo = algo;
	a->up_step = AGENT_UP_MODEL;
}

static void init_req(struct agent_req *req, long status, const char *body)
{
	memset(req, 0, sizeof(*req));
	buf_init(&req->resp, 0);
	if (body)
		(void)buf_adds(&req->resp, body);
	req->status = status;
}

static void test_put_uploaded(void **state)
{
	struct agent_assign a;
	struct agent_req req;
	struct buf msg = BUF_INIT;
	int lost = -1;

	(void)state;
	init_assign(&a);
	a.up_tries = 3;
	a.up_req = &req;
	init_req(&req, 200, NULL);
	assert_int_equal(agent_upload_put_done(&a, &req, &lost, &msg),
			 AGENT_PUT_UPLOADED);
	assert_int_equal(lost, 0);
	assert_null(a.up_req);
	assert_int_equal(a.up_step, AGENT_UP_OUTPUT);
	assert_int_equal(a.up_tries, 0);
	assert_int_equal(agent_upload_put_done(&a, &req, &lost, &msg),
			 AGENT_PUT_UPLOADED);
	assert_int_equal(a.up_step, AGENT_UP_FINISHED);
	assert_int_equal(msg.len, 0);
	buf_release(&req.resp);
	buf_release(&msg);
}

static void test_put_refused(void **state)
{
	struct agent_assign a;
	struct agent_req req;
	struct buf msg = BUF_INIT;
	int lost = -1;

	(void)state;
	init_assign(&a);
	init_req(&req, 409, "already there");
	assert_int_equal(agent_upload_put_done(&a, &req, &lost, &msg),
			 AGENT_PUT_FAILED);
	assert_int_equal(lost, 0);
	assert_string_equal(msg.data, "the controller refused model.tar.gz: "
				      "already there");
	assert_int_equal(a.up_step, AGENT_UP_MODEL);
	buf_release(&req.resp);
	buf_release(&msg);
}

static void test_put_lost_then_retry(void **state)
{
	struct agent_assign a;
	struct agent_req req;
	struct buf msg = BUF_INIT;
	int64_t before = time_mono_ms();
	int lost = -1;

	(void)state;
	init_assign(&a);
	init_req(&req, 401, NULL);
	assert_int_equal(agent_upload_put_done(&a, &req, &lost, &msg),
			 AGENT_PUT_RETRY);
	assert_int_equal(lost, 1);
	assert_int_equal(a.up_tries, 1);
	assert_true(a.up_retry_at >= before + 400);
	assert_string_equal(msg.data,
			    "upload failed (HTTP 401), retrying in 400 ms");
	buf_reset(&msg);
	/* A transfer that failed names curl's code. */
	req.status = 0;
	req.curl_code = 7;
	assert_int_equal(agent_upload_put_done(&a, &req, &lost, &msg),
			 AGENT_PUT_RETRY);
	assert_int_equal(lost, 0);
	assert_string_equal(msg.data, "upload failed (7), retrying in 800 ms");
	buf_release(&req.resp);
	buf_release(&msg);
}

static void test_put_too_many_tries(void **state)
{
	struct agent_assign a;
	struct agent_req req;
	struct buf msg = BUF_INIT;
	enum agent_put_result r;
	int lost, i;

	(void)state;
	init_assign(&a);
	a.up_step = AGENT_UP_OUTPUT;
	init_req(&req, 500, NULL);
	for (i = 1; i < 10; i++) {
		buf_reset(&msg);
		r = agent_upload_put_done(&a, &req, &lost, &msg);
		assert_int_equal(r, AGENT_PUT_RETRY);
	}
	buf_reset(&msg);
	r = agent_upload_put_done(&a, &req, &lost, &msg);
	assert_int_equal(r, AGENT_PUT_FAILED);
	assert_string_equal(msg.data, "upload of output.tar.gz failed 10 "
				      "times: HTTP error 500");
	buf_release(&req.resp);
	buf_release(&msg);
}

struct found {
	int n;
	char dir[512];
	struct api_report r;
};

static void on_state(void *data, const char *dir, const struct api_report *r)
{
	struct found *f = data;

	f->n++;
	(void)snprintf(f->dir, sizeof(f->dir), "%s", dir);
	f->r.attempt = r->attempt;
	f->r.phase = r->phase;
}

static void test_state_saved_and_scanned(void **state)
{
	char top[] = "/tmp/test_upload_XXXXXX";
	struct buf dir = BUF_INIT, err = BUF_INIT;
	struct api_report r;
	struct api_status st;
	struct found f;

	(void)state;
	assert_non_null(mkdtemp(top));
	assert_int_equal(agent_jobdir_path(top, "job-1", uid, 2, "algo-1", &dir,
					   &err),
			 0);
	assert_int_equal(fs_mkdir_p(dir.data, 0755, NULL), 0);
	memset(&r, 0, sizeof(r));
	r.job = job;
	r.job_uid = uid;
	r.attempt = 2;
	r.algo = algo;
	r.phase = API_PHASE_RUNNING;
	memset(&st, 0, sizeof(st));
	st.boot_id = boot_id;
	st.items = &r;
	st.n = 1;
	assert_int_equal(agent_jobdir_save_state(dir.data, &st, &err), 0);
	memset(&f, 0, sizeof(f));
	agent_jobdir_scan(top, on_state, &f);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.dir, dir.data);
	assert_int_equal(f.r.attempt, 2);
	assert_int_equal(f.r.phase, API_PHASE_RUNNING);
	assert_int_equal(agent_jobdir_remove(top, dir.data), 0);
	memset(&f, 0, sizeof(f));
	agent_jobdir_scan(top, on_state, &f);
	assert_int_equal(f.n, 0);
	assert_int_equal(fs_remove_tree(top), 0);
	buf_release(&dir);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_uploaded),
		cmocka_unit_test(test_put_refused),
		cmocka_unit_test(test_put_lost_then_retry),
		cmocka_unit_test(test_put_too_many_tries),
		cmocka_unit_test(test_state_saved_and_scanned),
	};

	return cmocka_run_group_tests_name("agent_upload", tests, NULL, NULL);
}
