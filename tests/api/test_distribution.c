/*
 * Tests api/distribution.c: modes from hyperparameters as the SageMaker SDK
 * encodes them, the refusals, and TF_CONFIG as the TensorFlow toolkit
 * writes it (with addresses for names).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/distribution.h"
#include "common/buf.h"
#include "common/err.h"

/* A spec holding only hyperparameters (key, value, key, value, NULL). */
static void spec_with(struct api_job_spec *spec, struct api_kv *kv,
		      const char *const *pairs)
{
	size_t n = 0;

	memset(spec, 0, sizeof(*spec));
	while (pairs[2 * n]) {
		kv[n].key = (char *)pairs[2 * n];
		kv[n].value = (char *)pairs[2 * n + 1];
		n++;
	}
	spec->hyperparameters = kv;
	spec->n_hyperparameters = n;
}

static int parse(const char *const *pairs, struct api_distribution *d,
		 struct buf *err)
{
	struct api_job_spec spec;
	struct api_kv kv[16];

	spec_with(&spec, kv, pairs);
	return api_distribution_parse(&spec, d, err);
}

static void test_modes(void **state)
{
	static const char *const none[] = { "epochs", "3", NULL };
	static const char *const torch[] = {
		"sagemaker_torch_distributed_enabled", "true",
		"sagemaker_trainctl_processes_per_host", "\"4\"", NULL
	};
	static const char *const mpi[] = {
		"sagemaker_mpi_enabled",
		"true",
		"sagemaker_mpi_num_of_processes_per_host",
		"2",
		"sagemaker_mpi_custom_mpi_options",
		"\"-x FOO=1\"",
		NULL
	};
	static const char *const ps[] = {
		"sagemaker_parameter_server_enabled", "\"true\"",
		"sagemaker_trainctl_parameter_servers", "1", NULL
	};
	static const char *const off[] = { "sagemaker_mpi_enabled", "false",
					   NULL };
	struct api_distribution d;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(parse(none, &d, &err), 0);
	assert_int_equal(d.mode, API_DIST_NONE);
	assert_int_equal(parse(torch, &d, &err), 0);
	assert_int_equal(d.mode, API_DIST_TORCH);
	assert_int_equal(d.processes_per_host, 4);
	assert_int_equal(parse(mpi, &d, &err), 0);
	assert_int_equal(d.mode, API_DIST_MPI);
	assert_int_equal(d.processes_per_host, 2);
	assert_string_equal(d.mpi_options, "-x FOO=1");
	api_distribution_release(&d);
	assert_int_equal(parse(ps, &d, &err), 0);
	assert_int_equal(d.mode, API_DIST_PARAMETER_SERVER);
	assert_int_equal(d.ps_servers, 1);
	assert_int_equal(parse(off, &d, &err), 0);
	assert_int_equal(d.mode, API_DIST_NONE);
	buf_release(&err);
}

static void test_refused(void **state)
{
	static const char *const two[] = {
		"sagemaker_mpi_enabled", "true",
		"sagemaker_torch_distributed_enabled", "true", NULL
	};
	static const char *const zero[] = {
		"sagemaker_mpi_enabled", "true",
		"sagemaker_mpi_num_of_processes_per_host", "0", NULL
	};
	static const char *const word[] = {
		"sagemaker_torch_distributed_enabled", "true",
		"sagemaker_trainctl_processes_per_host", "many", NULL
	};
	static const char *const smddp[] = {
		"sagemaker_distributed_dataparallel_enabled", "true", NULL
	};
	struct api_distribution d;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(parse(two, &d, &err), ERR_INVALID);
	assert_non_null(
		strstr(err.data, "sagemaker_torch_distributed_enabled"));
	buf_reset(&err);
	assert_int_equal(parse(zero, &d, &err), ERR_INVALID);
	assert_non_null(
		strstr(err.data, "sagemaker_mpi_num_of_processes_per_host"));
	buf_reset(&err);
	assert_int_equal(parse(word, &d, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "'many'"));
	buf_reset(&err);
	assert_int_equal(parse(smddp, &d, &err), ERR_INVALID);
	assert_non_null(
		strstr(err.data, "sagemaker_distributed_dataparallel_enabled"));
	buf_release(&err);
}

static void test_tf_config(void **state)
{
	static const char *const addrs[] = { "10.0.0.1", "10.0.0.2",
					     "10.0.0.3" };
	struct buf b = BUF_INIT;

	(void)state;
	assert_int_equal(api_tf_config_build(API_DIST_PARAMETER_SERVER, addrs,
					     3, 2, 31000, "ps", 1, &b),
			 0);
	assert_string_equal(
		b.data,
		"{\"cluster\":{\"master\":[\"10.0.0.1:31000\"],\"ps\":"
		"[\"10.0.0.1:31001\",\"10.0.0.2:31003\"],\"worker\":"
		"[\"10.0.0.2:31002\",\"10.0.0.3:31004\"]},\"environment\":"
		"\"cloud\",\"task\":{\"type\":\"ps\",\"index\":1}}");
	buf_reset(&b);
	assert_int_equal(api_tf_config_build(API_DIST_MULTI_WORKER_MIRRORED,
					     addrs, 2, 0, 31000, "worker", 1,
					     &b),
			 0);
	assert_string_equal(b.data,
			    "{\"cluster\":{\"worker\":[\"10.0.0.1:31000\","
			    "\"10.0.0.2:31002\"]},\"environment\":\"cloud\","
			    "\"task\":{\"type\":\"worker\",\"index\":1}}");
	buf_release(&b);
}

static void test_hp_true(void **state)
{
	(void)state;
	assert_true(api_hp_true("true"));
	assert_true(api_hp_true("\"true\""));
	assert_true(api_hp_true("True"));
	assert_false(api_hp_true("false"));
	assert_false(api_hp_true(NULL));
	assert_false(api_hp_true("\"yes please\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_tf_config),
		cmocka_unit_test(test_hp_true),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
