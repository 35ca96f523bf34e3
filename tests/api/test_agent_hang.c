/*
 * Tests the hang watch's members of the agent protocol (api/agent_work.c,
 * api/agent_status.c): an assignment's "hang_fixed" (a job's own
 * threshold, StalledTrainingRule's) and a report's "hung" (the failure is
 * a hang the agent found), each built, parsed back and refused when not
 * a boolean; absent, each reads as false.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "api/agent_proto.h"
#include "common/buf.h"
#include "common/err.h"

/* An assignment with what the parser requires, then extra members. */
static void assignment(struct buf *b, const char *extra)
{
	(void)buf_addf(
		b,
		"{\"version\": 1, \"assignments\": [{\"job\": \"j\", "
		"\"attempt\": 1, \"action\": \"run\", \"job_arn\": "
		"\"arn:aws:sagemaker:us-east-1:000000000000:training-job/j\", "
		"\"algo\": \"algo-1\", \"host_index\": 0, \"hosts\": "
		"[\"algo-1\"], \"addresses\": {\"algo-1\": \"127.0.0.1\"}, "
		"\"instance_type\": \"ml.c5.xlarge\", \"hyperparameters\": {}, "
		"\"input_data_config\": {}, \"resource_config\": "
		"{\"current_host\": \"algo-1\", \"current_instance_type\": "
		"\"ml.c5.xlarge\", \"current_group_name\": "
		"\"homogeneousCluster\", \"hosts\": [\"algo-1\"], "
		"\"instance_groups\": [], \"network_interface_name\": \"lo\", "
		"\"topology\": null}, \"channels\": [], \"environment\": {}, "
		"\"launch\": {\"mode\": \"exec\", \"argv\": [\"/bin/true\"]}, "
		"\"output_path\": \"s3://models/out\", \"storage\": "
		"{\"blob_url\": \"http://127.0.0.1:8080/v1/blobs\"}, "
		"\"rendezvous\": {\"master_addr\": \"127.0.0.1\", "
		"\"master_port\": 29500}, \"processes_per_host\": 1, "
		"\"grace_ms\": 1000%s}]}",
		extra);
}

static void test_hang_fixed(void **state)
{
	struct buf in = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	struct api_work w;

	(void)state;
	assignment(&in, ", \"hang_ms\": 4000, \"hang_fixed\": true");
	if (api_work_parse(in.data, in.len, &w, &err))
		fail_msg("refused: %s", err.data);
	assert_int_equal(w.items[0].hang_ms, 4000);
	assert_true(w.items[0].hang_fixed);
	assert_int_equal(api_work_build(&w, &out), 0);
	assert_non_null(strstr(out.data, "\"hang_fixed\":true"));
	/* Without a timeout there is nothing fixed to send. */
	w.items[0].hang_ms = 0;
	buf_reset(&out);
	assert_int_equal(api_work_build(&w, &out), 0);
	assert_null(strstr(out.data, "hang_fixed"));
	api_work_release(&w);

	buf_reset(&in);
	assignment(&in, ", \"hang_ms\": 4000");
	assert_int_equal(api_work_parse(in.data, in.len, &w, &err), 0);
	assert_false(w.items[0].hang_fixed);
	api_work_release(&w);

	buf_reset(&in);
	assignment(&in, ", \"hang_fixed\": 1");
	assert_int_equal(api_work_parse(in.data, in.len, &w, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "hang_fixed"));
	buf_release(&in);
	buf_release(&out);
	buf_release(&err);
}

static const char status_fmt[] =
	"{\"boot_id\": \"b\", \"assignments\": [{\"job\": \"j\", "
	"\"attempt\": 1, \"algo\": \"algo-2\", \"phase\": \"exited\", "
	"\"started_ms\": 1, \"processes\": [], \"failure\": \"algo-2 rank 0 "
	"made no progress for 4 s\", \"error\": null%s}]}";

static void test_hung(void **state)
{
	struct buf in = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	struct api_status s;

	(void)state;
	(void)buf_addf(&in, status_fmt, ", \"hung\": true");
	if (api_status_parse(in.data, in.len, &s, &err))
		fail_msg("refused: %s", err.data);
	assert_true(s.items[0].hung);
	assert_int_equal(api_status_build(&s, &out), 0);
	assert_non_null(strstr(out.data, "\"hung\":true"));
	s.items[0].hung = 0;
	buf_reset(&out);
	assert_int_equal(api_status_build(&s, &out), 0);
	assert_null(strstr(out.data, "hung"));
	api_status_release(&s);

	buf_reset(&in);
	(void)buf_addf(&in, status_fmt, "");
	assert_int_equal(api_status_parse(in.data, in.len, &s, &err), 0);
	assert_false(s.items[0].hung);
	api_status_release(&s);

	buf_reset(&in);
	(void)buf_addf(&in, status_fmt, ", \"hung\": \"yes\"");
	assert_int_equal(api_status_parse(in.data, in.len, &s, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "hung"));
	buf_release(&in);
	buf_release(&out);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hang_fixed),
		cmocka_unit_test(test_hung),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
