/*
 * Tests api/algorithm.c: which images run a built-in algorithm, what a job
 * of one must hold (a served version, the documented hyperparameters,
 * num_round), the built-in MetricDefinitions a request without any gets,
 * and a tuning objective on a built-in metric without MetricDefinitions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/algorithm.h"
#include "api/job_spec.h"
#include "api/tuning.h"
#include "common/buf.h"
#include "common/bregex.h"
#include "common/err.h"

#define XGB "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost"
#define KMEANS "382416733822.dkr.ecr.us-east-1.amazonaws.com/kmeans:1"

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

static int check(const char *image, const char *const *pairs, struct buf *err)
{
	const struct api_algo *a = api_algo_find(image, NULL, 0);
	struct api_job_spec spec;
	struct api_kv kv[16];

	assert_non_null(a);
	spec_with(&spec, kv, pairs);
	buf_reset(err);
	return api_algo_check(a, image, &spec, err);
}

static void test_find(void **state)
{
	const struct api_algo *a;

	(void)state;
	a = api_algo_find(XGB ":1.7-1", NULL, 0);
	assert_non_null(a);
	assert_string_equal(api_algo_name(a), "xgboost");
	assert_string_equal(api_algo_argv(a)[2], "trainctl_algorithms.xgb");
	assert_non_null(api_algo_find("sagemaker-xgboost:1.7-1", NULL, 0));
	/* A program of the job's own: XGBoost's script mode. */
	assert_null(api_algo_find(XGB ":1.7-1", "\"train.py\"", 0));
	assert_null(api_algo_find(XGB ":1.7-1", NULL, 1));
	/* Framework images, registries' look-alikes, files. */
	assert_null(api_algo_find("763104351884.dkr.ecr.us-east-1."
				  "amazonaws.com/pytorch-training:1.13",
				  NULL, 0));
	assert_null(
		api_algo_find("reg:5000/team/sagemaker-xgboost-x:1", NULL, 0));
	assert_null(
		api_algo_find("file:///usr/bin/sagemaker-xgboost", NULL, 0));
	assert_null(api_algo_find(NULL, NULL, 0));
	assert_null(api_algo_find("reg:5000/sagemaker-xgboost:1.7-1", NULL, 0));
	a = api_algo_find(KMEANS, NULL, 0);
	assert_non_null(a);
	assert_string_equal(api_algo_name(a), "kmeans");
	assert_non_null(api_algo_find("1.dkr.ecr.cn-north-1.amazonaws.com.cn/"
				      "kmeans:1",
				      NULL, 0));
	/* Images of someone's own that share a name run as containers. */
	assert_null(api_algo_find("kmeans:1", NULL, 0));
	assert_null(api_algo_find("reg:5000/team/kmeans:1", NULL, 0));
	assert_null(api_algo_find("xgboost:latest", NULL, 0));
}

static void test_check(void **state)
{
	static const char *const ok[] = { "num_round",
					  "10",
					  "eta",
					  "0.2",
					  "objective",
					  "reg:squarederror",
					  "sagemaker_region",
					  "\"us-east-1\"",
					  NULL };
	static const char *const unknown[] = { "num_round", "10", "epochs", "3",
					       NULL };
	static const char *const cv[] = { "num_round", "10", "_kfold", "3",
					  NULL };
	static const char *const none[] = { "eta", "0.2", NULL };
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(check(XGB ":1.7-1", ok, &err), 0);
	assert_int_equal(check(XGB ":1.7-1-cpu-py3", ok, &err), 0);
	assert_int_equal(check(XGB ":1.5-1", ok, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "version '1.5-1'"));
	assert_non_null(strstr(err.data, "served: 1.7-1"));
	assert_non_null(strstr(err.data, "--image-map"));
	assert_int_equal(check(XGB ":1.7-10", ok, &err), ERR_INVALID);
	assert_int_equal(check(XGB, ok, &err), ERR_INVALID);
	assert_int_equal(check(XGB ":1.7-1", unknown, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "hyperparameter 'epochs'"));
	assert_int_equal(check(XGB ":1.7-1", cv, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "'_kfold'"));
	assert_non_null(strstr(err.data, "not served"));
	assert_int_equal(check(XGB ":1.7-1", none, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "num_round"));
	assert_int_equal(check("811284229777.dkr.ecr.us-east-1.amazonaws.com/"
			       "xgboost:1",
			       ok, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "'xgboost 0.72'"));
	assert_int_equal(check(KMEANS, ok, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "'kmeans'"));
	assert_non_null(strstr(err.data, "--image-map"));
	buf_release(&err);
}

static const char *metric_regex(const struct api_job_spec *spec,
				const char *name)
{
	size_t i;

	for (i = 0; i < spec->n_metrics; i++)
		if (!strcmp(spec->metrics[i].name, name))
			return spec->metrics[i].regex;
	return NULL;
}

/* The first capture of regex on line, into out ("" when none). */
static void capture(const char *regex, const char *line, char *out, size_t size)
{
	struct bregex_limits lim = BREGEX_LIMITS_INIT;
	struct buf err = BUF_INIT;
	struct bregex *re = NULL;
	size_t off = 0, len = 0;

	assert_int_equal(bregex_compile(regex, 0, &lim, &re, &err), 0);
	out[0] = '\0';
	if (bregex_match(re, line, strlen(line), &off, &len) == 1)
		snprintf(out, size, "%.*s", (int)len, line + off);
	bregex_free(re);
	buf_release(&err);
}

static int parse_request(const char *image, const char *extra_hps,
			 const char *metrics, struct api_job_spec *spec,
			 struct buf *err)
{
	char req[2048];

	snprintf(req, sizeof(req),
		 "{\"TrainingJobName\":\"x1\","
		 "\"AlgorithmSpecification\":{\"TrainingImage\":\"%s\","
		 "\"TrainingInputMode\":\"File\"%s},"
		 "\"HyperParameters\":{\"num_round\":\"5\"%s},"
		 "\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","
		 "\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\"},"
		 "\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\","
		 "\"InstanceCount\":1,\"VolumeSizeInGB\":1},"
		 "\"StoppingCondition\":{\"MaxRuntimeInSeconds\":60}}",
		 image, metrics, extra_hps);
	return api_job_spec_parse(req, strlen(req), spec, err);
}

static void test_metrics(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	const char *re;
	char v[64];

	(void)state;
	assert_int_equal(parse_request(XGB ":1.7-1", "", "", &spec, &err), 0);
	re = metric_regex(&spec, "validation:rmse");
	assert_non_null(re);
	assert_non_null(metric_regex(&spec, "validation:auc"));
	assert_non_null(metric_regex(&spec, "validation:f1_binary"));
	assert_null(metric_regex(&spec, "validation:nope"));
	assert_null(metric_regex(&spec, "train:rmse"));
	capture(re, "[3]#011train-rmse:0.51#011validation-rmse:0.63", v,
		sizeof(v));
	assert_string_equal(v, "0.63");
	/* Not the last on its line; exponents. */
	capture(re, "[12]#011validation-rmse:1.5e-05#011validation-mae:0.25", v,
		sizeof(v));
	assert_string_equal(v, "1.5e-05");
	capture(metric_regex(&spec, "validation:auc"),
		"[12]#011validation-aucpr:0.8#011validation-auc:0.9", v,
		sizeof(v));
	assert_string_equal(v, "0.9");
	/* f1 is not f1_binary's prefix match. */
	capture(metric_regex(&spec, "validation:f1"),
		"[2]#011validation-f1_binary:0.7#011validation-f1:0.6", v,
		sizeof(v));
	assert_string_equal(v, "0.6");
	capture(metric_regex(&spec, "validation:r2"),
		"[2]#011validation-r2:-0.25", v, sizeof(v));
	assert_string_equal(v, "-0.25");
	capture(re, "[3]#011train-rmse:0.51", v, sizeof(v));
	assert_string_equal(v, "");
	api_job_spec_release(&spec);

	/* The request's own definitions stay the only ones. */
	assert_int_equal(parse_request(XGB ":1.7-1", "",
				       ",\"MetricDefinitions\":[{\"Name\":"
				       "\"m\",\"Regex\":\"m=(\\\\S+)\"}]",
				       &spec, &err),
			 0);
	assert_int_equal(spec.n_metrics, 1);
	api_job_spec_release(&spec);
	/* Script mode and other images get none. */
	assert_int_equal(
		parse_request(XGB ":1.7-1",
			      ",\"sagemaker_program\":\"\\\"t.py\\\"\"", "",
			      &spec, &err),
		0);
	assert_int_equal(spec.n_metrics, 0);
	api_job_spec_release(&spec);
	assert_int_equal(parse_request(KMEANS, "", "", &spec, &err), 0);
	assert_int_equal(spec.n_metrics, 0);
	api_job_spec_release(&spec);
	buf_release(&err);
}

static int parse_tuning(const char *image, const char *metric, struct buf *err)
{
	struct api_tuning_spec s;
	char req[2048];
	int ret;

	snprintf(req, sizeof(req),
		 "{\"HyperParameterTuningJobName\":\"t1\","
		 "\"HyperParameterTuningJobConfig\":{\"Strategy\":\"Random\","
		 "\"HyperParameterTuningJobObjective\":{\"Type\":\"Minimize\","
		 "\"MetricName\":\"%s\"},"
		 "\"ResourceLimits\":{\"MaxNumberOfTrainingJobs\":2,"
		 "\"MaxParallelTrainingJobs\":1},"
		 "\"ParameterRanges\":{"
		 "\"ContinuousParameterRanges\":[{\"Name\":\"eta\","
		 "\"MinValue\":\"0.1\",\"MaxValue\":\"0.5\"}]}},"
		 "\"TrainingJobDefinition\":{"
		 "\"StaticHyperParameters\":{\"num_round\":\"5\"},"
		 "\"AlgorithmSpecification\":{\"TrainingImage\":\"%s\","
		 "\"TrainingInputMode\":\"File\"},"
		 "\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","
		 "\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\"},"
		 "\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\","
		 "\"InstanceCount\":1,\"VolumeSizeInGB\":1},"
		 "\"StoppingCondition\":{\"MaxRuntimeInSeconds\":60}}}",
		 metric, image);
	buf_reset(err);
	ret = api_tuning_parse(req, strlen(req), &s, err);
	if (!ret)
		api_tuning_release(&s);
	return ret;
}

static void test_tuning_objective(void **state)
{
	struct buf err = BUF_INIT;

	(void)state;
	assert_true(api_algo_has_metric(XGB ":1.7-1", NULL, "validation:rmse"));
	assert_false(api_algo_has_metric(XGB ":1.7-1", "\"t.py\"",
					 "validation:rmse"));
	assert_false(api_algo_has_metric(XGB ":1.7-1", NULL, "train:rmse"));
	assert_false(api_algo_has_metric(KMEANS, NULL, "validation:rmse"));
	assert_int_equal(parse_tuning(XGB ":1.7-1", "validation:rmse", &err),
			 0);
	assert_int_equal(parse_tuning(XGB ":1.7-1", "validation:nope", &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "validation:nope"));
	assert_int_equal(parse_tuning("file:///bin/true", "validation:rmse",
				      &err),
			 ERR_INVALID);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_tuning_objective),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
