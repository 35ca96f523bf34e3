/*
 * Tests api/batch_*.c: AWS Batch requests refused by the member they get
 * wrong, the canonical form an object is stored in, Update's merge, the
 * service job's payload and the status of a training job's state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/batch.h"
#include "common/buf.h"
#include "common/err.h"

#define ENVS \
	"\"serviceEnvironmentOrder\":[{\"order\":1,\"serviceEnvironment\":\"e\"}]"

/* A request of kind k that must be refused with a message holding want. */
static void refuse(enum api_batch_kind k, const char *json, const char *want)
{
	struct api_batch_object o;
	struct buf err = BUF_INIT;
	int ret = api_batch_object_parse(k, json, strlen(json), &o, &err);

	assert_int_equal(ret, ERR_INVALID);
	if (!strstr(err.data, want))
		fail_msg("'%s' does not name '%s'", err.data, want);
	assert_null(o.name);
	buf_release(&err);
}

static void test_object_refusals(void **state)
{
	(void)state;
	refuse(API_BATCH_ENV, "{\"serviceEnvironmentName\":\"e\"}",
	       "serviceEnvironmentType is required");
	refuse(API_BATCH_ENV,
	       "{\"serviceEnvironmentName\":\"e\",\"serviceEnvironmentType\":"
	       "\"ECS\",\"capacityLimits\":[]}",
	       "serviceEnvironmentType must be one of");
	refuse(API_BATCH_ENV,
	       "{\"serviceEnvironmentName\":\"e\",\"serviceEnvironmentType\":"
	       "\"SAGEMAKER_TRAINING\",\"capacityLimits\":[{\"maxCapacity\":0,"
	       "\"capacityUnit\":\"NUM_INSTANCES\"}]}",
	       "capacityLimits[0].maxCapacity must be 1..");
	refuse(API_BATCH_ENV,
	       "{\"serviceEnvironmentName\":\"bad name\","
	       "\"serviceEnvironmentType\":\"SAGEMAKER_TRAINING\","
	       "\"capacityLimits\":[{\"maxCapacity\":1,\"capacityUnit\":\"x\"}]}",
	       "serviceEnvironmentName must be");
	refuse(API_BATCH_QUEUE,
	       "{\"jobQueueName\":\"q\",\"priority\":1,\"jobQueueType\":\"EKS\","
	       "" ENVS "}",
	       "jobQueueType must be SAGEMAKER_TRAINING");
	refuse(API_BATCH_QUEUE,
	       "{\"jobQueueName\":\"q\",\"priority\":1,\"jobQueueType\":"
	       "\"SAGEMAKER_TRAINING\"," ENVS ",\"computeEnvironmentOrder\":"
	       "[{\"order\":1,\"computeEnvironment\":\"c\"}]}",
	       "computeEnvironmentOrder is not supported");
	refuse(API_BATCH_QUEUE,
	       "{\"jobQueueName\":\"q\",\"priority\":1,\"jobQueueType\":"
	       "\"SAGEMAKER_TRAINING\"," ENVS ",\"jobStateTimeLimitActions\":"
	       "[{\"reason\":\"r\",\"state\":\"RUNNABLE\",\"maxTimeSeconds\":"
	       "600,\"action\":\"CANCEL\"}]}",
	       "jobStateTimeLimitActions is not supported");
	refuse(API_BATCH_QUEUE,
	       "{\"jobQueueName\":\"q\",\"priority\":\"1\",\"jobQueueType\":"
	       "\"SAGEMAKER_TRAINING\"," ENVS "}",
	       "priority must be an integer");
	refuse(API_BATCH_QUEUE,
	       "{\"jobQueueName\":\"q\",\"priority\":1,\"jobQueueType\":"
	       "\"SAGEMAKER_TRAINING\"," ENVS ",\"extra\":1}",
	       "extra is not a member");
	refuse(API_BATCH_POLICY,
	       "{\"name\":\"p\",\"fairsharePolicy\":{\"computeReservation\":"
	       "100}}",
	       "fairsharePolicy.computeReservation must be 0..99");
	refuse(API_BATCH_POLICY,
	       "{\"name\":\"p\",\"fairsharePolicy\":{},\"quotaSharePolicy\":"
	       "{\"idleResourceAssignmentStrategy\":\"FIFO\"}}",
	       "not both");
	refuse(API_BATCH_POLICY,
	       "{\"name\":\"p\",\"quotaSharePolicy\":"
	       "{\"idleResourceAssignmentStrategy\":\"LIFO\"}}",
	       "quotaSharePolicy.idleResourceAssignmentStrategy");
	refuse(API_BATCH_SHARE,
	       "{\"quotaShareName\":\"s\",\"jobQueue\":\"q\",\"capacityLimits\":"
	       "[{\"maxCapacity\":1,\"capacityUnit\":\"NUM_INSTANCES\"}],"
	       "\"resourceSharingConfiguration\":{\"strategy\":\"LEND\","
	       "\"borrowLimit\":3},\"preemptionConfiguration\":"
	       "{\"inSharePreemption\":\"ENABLED\"}}",
	       "borrowLimit is only for strategy LEND_AND_BORROW");
	refuse(API_BATCH_SHARE,
	       "{\"quotaShareName\":\"s\",\"jobQueue\":\"q\",\"capacityLimits\":"
	       "[{\"maxCapacity\":1,\"capacityUnit\":\"NUM_INSTANCES\"}],"
	       "\"resourceSharingConfiguration\":{\"strategy\":"
	       "\"LEND_AND_BORROW\",\"borrowLimit\":-2},"
	       "\"preemptionConfiguration\":{\"inSharePreemption\":\"ENABLED\"}}",
	       "borrowLimit must be -1..");
}

static void test_canonical_and_merge(void **state)
{
	static const char req[] =
		"{\"jobQueueName\":\"q\",\"priority\":4,\"jobQueueType\":"
		"\"SAGEMAKER_TRAINING\",\"serviceEnvironmentOrder\":["
		"{\"order\":2,\"serviceEnvironment\":\"a\"}],\"tags\":{\"t\":"
		"\"v\"}}";
	/* Every queue draws on the one pool: one environment. */
	static const char two[] =
		"{\"jobQueueName\":\"q\",\"priority\":4,\"jobQueueType\":"
		"\"SAGEMAKER_TRAINING\",\"serviceEnvironmentOrder\":["
		"{\"order\":9,\"serviceEnvironment\":\"b\"},"
		"{\"order\":2,\"serviceEnvironment\":\"a\"}]}";
	static const char upd[] = "{\"jobQueue\":\"q\",\"priority\":7}";
	static const char bad_upd[] =
		"{\"jobQueue\":\"q\",\"jobQueueName\":\"z\"}";
	struct api_batch_object o, o2, o3;
	struct buf err = BUF_INIT, canon = BUF_INIT;
	char *ident = NULL, *merged = NULL;

	(void)state;
	assert_int_equal(api_batch_object_parse(API_BATCH_QUEUE, req,
						strlen(req), &o, &err),
			 0);
	assert_int_equal(o.n_envs, 1);
	assert_string_equal(o.envs[0], "a");
	assert_string_equal(o.state, "ENABLED");
	assert_int_equal(api_batch_object_request(&o, &canon), 0);
	assert_int_equal(api_batch_update_merge(API_BATCH_QUEUE, upd,
						strlen(upd), canon.data, &ident,
						&merged, &err),
			 0);
	assert_string_equal(ident, "q");
	assert_int_equal(api_batch_object_parse(API_BATCH_QUEUE, merged,
						strlen(merged), &o2, &err),
			 0);
	assert_int_equal(o2.priority, 7);
	assert_int_equal(o2.n_envs, 1);
	assert_string_equal(o2.tags_json, "{\"t\":\"v\"}");
	free(ident);
	free(merged);
	/* Update takes no name or tags. */
	assert_int_equal(api_batch_update_merge(API_BATCH_QUEUE, bad_upd,
						strlen(bad_upd), canon.data,
						&ident, &merged, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "jobQueueName"));
	buf_reset(&err);
	assert_int_equal(api_batch_object_parse(API_BATCH_QUEUE, two,
						strlen(two), &o3, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "one here"));
	api_batch_object_release(&o3);
	api_batch_object_release(&o);
	api_batch_object_release(&o2);
	buf_release(&err);
	buf_release(&canon);
}

static int submit(const char *json, struct api_batch_submit *s, struct buf *err)
{
	return api_batch_submit_parse(json, strlen(json), s, err);
}

#define SUB \
	"\"jobName\":\"j\",\"jobQueue\":\"q\",\"serviceJobType\":\"SAGEMAKER_TRAINING\""

static void test_submit(void **state)
{
	struct api_batch_submit s;
	struct buf err = BUF_INIT;
	char *out = NULL, *name = NULL;

	(void)state;
	assert_int_equal(submit("{\"jobName\":\"j\",\"serviceJobType\":"
				"\"SAGEMAKER_TRAINING\","
				"\"serviceRequestPayload\":\"{}\"}",
				&s, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "jobQueue is required"));
	assert_int_equal(submit("{" SUB ",\"serviceRequestPayload\":\"{}\","
				"\"retryStrategy\":{\"attempts\":2,"
				"\"evaluateOnExit\":[{\"action\":\"EXIT\"}]}}",
				&s, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "evaluateOnExit"));
	assert_int_equal(submit("{" SUB ",\"serviceRequestPayload\":\"{}\","
				"\"retryStrategy\":{\"attempts\":11}}",
				&s, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "retryStrategy.attempts"));
	/* The payload gets the retry budget and the runtime limit. */
	assert_int_equal(
		submit("{" SUB ",\"serviceRequestPayload\":"
		       "\"{\\\"StoppingCondition\\\":{\\\"MaxRuntimeInSeconds\\\""
		       ":600}}\",\"retryStrategy\":{\"attempts\":3},"
		       "\"timeoutConfig\":{\"attemptDurationSeconds\":600}}",
		       &s, &err),
		0);
	assert_int_equal(api_batch_payload(&s, "j-1", &out, &name, &err), 0);
	assert_string_equal(name, "j-1");
	assert_non_null(strstr(out, "\"MaximumRetryAttempts\":2"));
	assert_non_null(strstr(out, "\"MaxRuntimeInSeconds\":600"));
	free(out);
	free(name);
	s.timeout_s = 300; /* differs from the payload's 600 */
	assert_int_equal(api_batch_payload(&s, "j-1", &out, &name, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "attemptDurationSeconds"));
	api_batch_submit_release(&s);
	buf_release(&err);
}

static void test_list_filters(void **state)
{
	static const char bad[] =
		"{\"filters\":[{\"name\":\"JOB_DEFINITION\",\"values\":[\"x\"]}]}";
	static const char ok[] =
		"{\"filters\":[{\"name\":\"AFTER_CREATED_AT\",\"values\":"
		"[\"1000\"]},{\"name\":\"JOB_NAME\",\"values\":[\"a*\"]}]}";
	struct api_batch_jobs_list r;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_batch_jobs_list_parse(bad, strlen(bad), &r, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "JOB_DEFINITION"));
	assert_int_equal(api_batch_jobs_list_parse(ok, strlen(ok), &r, &err),
			 0);
	assert_int_equal(r.after_ms, 1000);
	assert_string_equal(r.name, "a*");
	assert_int_equal(r.max_results, 100);
	api_batch_jobs_list_release(&r);
	buf_release(&err);
}

static void test_status(void **state)
{
	(void)state;
	assert_string_equal(api_batch_job_status("InProgress", "Starting"),
			    "RUNNABLE");
	assert_string_equal(api_batch_job_status("InProgress", "Pending"),
			    "RUNNABLE");
	assert_string_equal(api_batch_job_status("InProgress", "Downloading"),
			    "STARTING");
	assert_string_equal(api_batch_job_status("InProgress", "Training"),
			    "RUNNING");
	assert_string_equal(api_batch_job_status("Stopping", "Stopping"),
			    "RUNNING");
	assert_string_equal(api_batch_job_status("Completed", "Completed"),
			    "SUCCEEDED");
	assert_string_equal(api_batch_job_status("Failed", "Failed"), "FAILED");
	assert_string_equal(api_batch_job_status("Stopped", "Stopped"),
			    "FAILED");
	assert_string_equal(api_batch_job_status(NULL, NULL), "FAILED");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_refusals),
		cmocka_unit_test(test_canonical_and_merge),
		cmocka_unit_test(test_submit),
		cmocka_unit_test(test_list_filters),
		cmocka_unit_test(test_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
