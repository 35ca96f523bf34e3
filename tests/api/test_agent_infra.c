/*
 * Tests the infrastructure checks on the agent wire (api/agent_work.c,
 * api/agent_status.c): an assignment's "infra_check" thresholds, the
 * controller's clock and "hold" round-trip, absent means none, a bad
 * "hold" is refused, "network" round-trips (absent: false); a report's
 * "check_ms" round-trips and is absent when none passed; its "net"
 * figures round-trip, are absent when no network check ran, and a count
 * of peers reached above those tried is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/agent_proto.h"
#include "common/buf.h"
#include "common/xalloc.h"

static char *work_text(const struct api_infra_check *c)
{
	static char *hosts[] = { (char *)"algo-1", NULL };
	static char *argv[] = { (char *)"/bin/true", (char *)"train", NULL };
	struct api_work w;
	struct api_assignment a;
	struct buf out = BUF_INIT;

	memset(&w, 0, sizeof(w));
	memset(&a, 0, sizeof(a));
	a.job = (char *)"j";
	a.attempt = 1;
	a.algo = (char *)"algo-1";
	a.job_arn = (char *)"arn:aws:sagemaker:us-east-1:0:training-job/j";
	a.hosts = hosts;
	a.addresses = hosts;
	a.n_hosts = 1;
	a.instance_type = (char *)"ml.m5.large";
	a.hyperparameters_json = (char *)"{}";
	a.input_data_config_json = (char *)"{}";
	a.resource_config_json = (char *)"{}";
	a.launch_mode = API_LAUNCH_EXEC;
	a.argv = argv;
	a.blob_url = (char *)"http://127.0.0.1:8080/v1/blobs";
	a.output_path = (char *)"s3://b/out";
	a.master_addr = (char *)"127.0.0.1";
	a.master_port = 29500;
	a.processes_per_host = 1;
	a.infra = *c;
	w.version = 3;
	w.items = &a;
	w.n = 1;
	assert_int_equal(api_work_build(&w, &out), 0);
	return buf_detach(&out, NULL);
}

static void test_work(void **state)
{
	struct api_infra_check c = { 1, 1024, 64, 2000, 1796211299642, 1, 0 };
	struct api_work w;
	struct buf err = BUF_INIT;
	char *text = work_text(&c), *p;

	(void)state;
	assert_non_null(strstr(text, "\"infra_check\":{\"min_disk_mb\":1024,"
				     "\"min_shm_mb\":64,\"max_clock_skew_ms\":"
				     "2000,\"controller_ms\":1796211299642,"
				     "\"hold\":true}"));
	if (api_work_parse(text, strlen(text), &w, &err))
		fail_msg("%s", err.data);
	assert_int_equal(w.n, 1);
	assert_true(w.items[0].infra.enabled);
	assert_int_equal(w.items[0].infra.min_disk_mb, 1024);
	assert_int_equal(w.items[0].infra.min_shm_mb, 64);
	assert_int_equal(w.items[0].infra.max_skew_ms, 2000);
	assert_int_equal(w.items[0].infra.controller_ms, 1796211299642);
	assert_true(w.items[0].infra.hold);
	api_work_release(&w);
	/* A bad hold is refused, naming it. */
	p = strstr(text, "true}");
	memcpy(p, "1   ", 4);
	assert_int_not_equal(api_work_parse(text, strlen(text), &w, &err), 0);
	assert_non_null(strstr(err.data, "infra_check.hold"));
	free(text);
	/* Released, and none at all. */
	c.hold = 0;
	text = work_text(&c);
	assert_null(strstr(text, "hold"));
	assert_int_equal(api_work_parse(text, strlen(text), &w, &err), 0);
	assert_true(w.items[0].infra.enabled);
	assert_false(w.items[0].infra.hold);
	assert_false(w.items[0].infra.network);
	api_work_release(&w);
	free(text);
	c.network = 1;
	text = work_text(&c);
	assert_non_null(strstr(text, "\"network\":true"));
	assert_int_equal(api_work_parse(text, strlen(text), &w, &err), 0);
	assert_true(w.items[0].infra.network);
	api_work_release(&w);
	free(text);
	memset(&c, 0, sizeof(c));
	text = work_text(&c);
	assert_null(strstr(text, "infra_check"));
	assert_int_equal(api_work_parse(text, strlen(text), &w, &err), 0);
	assert_false(w.items[0].infra.enabled);
	api_work_release(&w);
	free(text);
	buf_release(&err);
}

static void test_report(void **state)
{
	struct api_report r;
	struct api_status s, back;
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	memset(&r, 0, sizeof(r));
	memset(&s, 0, sizeof(s));
	r.job = (char *)"j";
	r.attempt = 1;
	r.algo = (char *)"algo-2";
	r.phase = API_PHASE_DOWNLOADING;
	r.check_ms = 13;
	s.boot_id = (char *)"b";
	s.items = &r;
	s.n = 1;
	assert_int_equal(api_status_build(&s, &out), 0);
	assert_non_null(strstr(out.data, "\"check_ms\":13"));
	assert_int_equal(api_status_parse(out.data, out.len, &back, &err), 0);
	assert_int_equal(back.items[0].check_ms, 13);
	api_status_release(&back);
	buf_reset(&out);
	r.check_ms = 0;
	assert_int_equal(api_status_build(&s, &out), 0);
	assert_null(strstr(out.data, "check_ms"));
	assert_int_equal(api_status_parse(out.data, out.len, &back, &err), 0);
	assert_int_equal(back.items[0].check_ms, 0);
	assert_int_equal(back.items[0].net.peers, 0);
	api_status_release(&back);
	buf_release(&out);
	buf_release(&err);
}

static void test_report_net(void **state)
{
	struct api_report r;
	struct api_status s, back;
	struct buf out = BUF_INIT, err = BUF_INIT;
	char *p;

	(void)state;
	memset(&r, 0, sizeof(r));
	memset(&s, 0, sizeof(s));
	r.job = (char *)"j";
	r.attempt = 1;
	r.algo = (char *)"algo-1";
	r.phase = API_PHASE_DOWNLOADING;
	r.check_ms = 410;
	r.net.peers = 2;
	r.net.reached = 1;
	r.net.rtt_us = 84;
	r.net.mbps = 9200;
	s.boot_id = (char *)"b";
	s.items = &r;
	s.n = 1;
	assert_int_equal(api_status_build(&s, &out), 0);
	assert_non_null(strstr(out.data, "\"net\":{\"peers\":2,\"reached\":1,"
					 "\"rtt_us\":84,\"mbps\":9200}"));
	assert_int_equal(api_status_parse(out.data, out.len, &back, &err), 0);
	assert_int_equal(back.items[0].net.peers, 2);
	assert_int_equal(back.items[0].net.reached, 1);
	assert_int_equal(back.items[0].net.rtt_us, 84);
	assert_int_equal(back.items[0].net.mbps, 9200);
	api_status_release(&back);
	/* More peers reached than tried. */
	p = strstr(out.data, "\"reached\":1");
	p[strlen("\"reached\":")] = '3';
	assert_int_not_equal(api_status_parse(out.data, out.len, &back, &err),
			     0);
	assert_non_null(strstr(err.data, "net.reached"));
	buf_release(&out);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_work),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_report_net),
	};

	return cmocka_run_group_tests_name("api/agent_infra", tests, NULL,
					   NULL);
}
