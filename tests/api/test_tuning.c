/*
 * Tests api/tuning.c: a CreateHyperParameterTuningJob request becomes the
 * right ranges, strategy and limits; each of SageMaker's rules broken once
 * is refused with a message naming the member; a training job's request
 * merges the static and tuned hyperparameters; values and points convert
 * both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/tuning.h"
#include "common/buf.h"
#include "common/err.h"

/* A valid request: Bayesian over the three kinds of range. */
static json_t *base(void)
{
	json_error_t jerr;
	json_t *root = json_loads(
		"{\"HyperParameterTuningJobName\":\"t1\","
		"\"HyperParameterTuningJobConfig\":{\"Strategy\":\"Bayesian\","
		"\"HyperParameterTuningJobObjective\":{\"Type\":\"Maximize\","
		"\"MetricName\":\"acc\"},"
		"\"ResourceLimits\":{\"MaxNumberOfTrainingJobs\":12,"
		"\"MaxParallelTrainingJobs\":3},"
		"\"ParameterRanges\":{"
		"\"ContinuousParameterRanges\":[{\"Name\":\"lr\","
		"\"MinValue\":\"0.0001\",\"MaxValue\":\"1\","
		"\"ScalingType\":\"Logarithmic\"}],"
		"\"IntegerParameterRanges\":[{\"Name\":\"hidden\","
		"\"MinValue\":\"4\",\"MaxValue\":\"128\"}],"
		"\"CategoricalParameterRanges\":[{\"Name\":\"act\","
		"\"Values\":[\"relu\",\"tanh\"]}]}},"
		"\"TrainingJobDefinition\":{"
		"\"StaticHyperParameters\":{\"epochs\":\"5\"},"
		"\"AlgorithmSpecification\":{\"TrainingImage\":\"file:///bin/true\","
		"\"TrainingInputMode\":\"File\",\"MetricDefinitions\":[{"
		"\"Name\":\"acc\",\"Regex\":\"acc=(.*?);\"}]},"
		"\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","
		"\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\"},"
		"\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\","
		"\"InstanceCount\":1,\"VolumeSizeInGB\":1},"
		"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":60}},"
		"\"Tags\":[{\"Key\":\"team\",\"Value\":\"a\"}]}",
		0, &jerr);

	if (!root)
		fail_msg("base request: %s", jerr.text);
	return root;
}

static int parse(json_t *req, struct api_tuning_spec *s, struct buf *err)
{
	char *text = json_dumps(req, JSON_COMPACT);
	int ret;

	json_decref(req);
	assert_non_null(text);
	ret = api_tuning_parse(text, strlen(text), s, err);
	free(text);
	return ret;
}

static json_t *cfg(json_t *root)
{
	return json_object_get(root, "HyperParameterTuningJobConfig");
}

static json_t *ranges(json_t *root, const char *kind)
{
	return json_array_get(json_object_get(json_object_get(cfg(root),
							      "ParameterRanges"),
					      kind),
			      0);
}

static void test_parse(void **state)
{
	struct api_tuning_spec s;
	struct buf err = BUF_INIT;
	const struct api_tuning_def *d;

	(void)state;
	assert_int_equal(parse(base(), &s, &err), 0);
	assert_string_equal(s.name, "t1");
	assert_int_equal(s.strategy, TUNE_BAYESIAN);
	assert_int_equal(s.max_jobs, 12);
	assert_int_equal(s.max_parallel, 3);
	assert_int_equal(s.n_defs, 1);
	assert_int_equal(s.n_tags, 1);
	d = &s.defs[0];
	assert_string_equal(d->metric, "acc");
	assert_true(d->maximize);
	assert_int_equal(d->n_ranges, 3);
	/* Integer, then continuous, then categorical ranges. */
	assert_string_equal(d->ranges[0].name, "hidden");
	assert_int_equal(d->ranges[0].p.kind, TUNE_INTEGER);
	/* Auto: a range of 32x stays linear. */
	assert_int_equal(d->ranges[0].p.scale, TUNE_SCALE_LINEAR);
	assert_string_equal(d->ranges[1].name, "lr");
	assert_int_equal(d->ranges[1].p.scale, TUNE_SCALE_LOG);
	assert_int_equal(d->ranges[2].p.n_values, 2);
	/* The service adds the objective to the static hyperparameters. */
	assert_non_null(strstr(s.request_json,
			       "\"_tuning_objective_metric\":\"acc\""));
	assert_null(strstr(s.request_json, "\"Tags\""));
	api_tuning_release(&s);
	buf_release(&err);
}

/* Applies edit to the base request; expects a refusal naming want. */
static void refused(void (*edit)(json_t *), const char *want)
{
	struct api_tuning_spec s;
	struct buf err = BUF_INIT;
	json_t *root = base();

	edit(root);
	assert_int_equal(parse(root, &s, &err), ERR_INVALID);
	if (!strstr(err.data, want))
		fail_msg("'%s' lacks '%s'", err.data, want);
	buf_release(&err);
}

static void min_above_max(json_t *r)
{
	json_object_set_new(ranges(r, "ContinuousParameterRanges"), "MinValue",
			    json_string("2"));
}

static void log_from_zero(json_t *r)
{
	json_object_set_new(ranges(r, "ContinuousParameterRanges"), "MinValue",
			    json_string("0"));
}

static void revlog_out(json_t *r)
{
	json_t *c = ranges(r, "ContinuousParameterRanges");

	json_object_set_new(c, "ScalingType",
			    json_string("ReverseLogarithmic"));
}

static void revlog_int(json_t *r)
{
	json_object_set_new(ranges(r, "IntegerParameterRanges"), "ScalingType",
			    json_string("ReverseLogarithmic"));
}

static void int_not_whole(json_t *r)
{
	json_object_set_new(ranges(r, "IntegerParameterRanges"), "MaxValue",
			    json_string("12.5"));
}

static void cat_twice(json_t *r)
{
	json_array_append_new(json_object_get(ranges(r,
						     "CategoricalParameterRanges"),
					      "Values"),
			      json_string("relu"));
}

static void name_twice(json_t *r)
{
	json_object_set_new(ranges(r, "IntegerParameterRanges"), "Name",
			    json_string("lr"));
}

static void tuned_and_static(json_t *r)
{
	json_object_set_new(
		json_object_get(json_object_get(r, "TrainingJobDefinition"),
				"StaticHyperParameters"),
		"lr", json_string("0.1"));
}

static void grid_numeric(json_t *r)
{
	json_object_set_new(cfg(r), "Strategy", json_string("Grid"));
}

static void hyperband_no_max(json_t *r)
{
	json_object_set_new(cfg(r), "Strategy", json_string("Hyperband"));
	json_object_del(json_object_get(json_object_get(r,
							"TrainingJobDefinition"),
					"StaticHyperParameters"),
			"epochs");
}

static void hyperband_auto(json_t *r)
{
	json_object_set_new(cfg(r), "Strategy", json_string("Hyperband"));
	json_object_set_new(cfg(r), "TrainingJobEarlyStoppingType",
			    json_string("Auto"));
}

static void no_budget(json_t *r)
{
	json_object_del(json_object_get(cfg(r), "ResourceLimits"),
			"MaxNumberOfTrainingJobs");
}

static void unknown_metric(json_t *r)
{
	json_object_set_new(json_object_get(cfg(r),
					    "HyperParameterTuningJobObjective"),
			    "MetricName", json_string("loss"));
}

static void autotune(json_t *r)
{
	json_object_set_new(r, "Autotune",
			    json_pack("{s:s}", "Mode", "Enabled"));
}

static void unknown_member(json_t *r)
{
	json_object_set_new(cfg(r), "Fancy", json_true());
}

static void both_resources(json_t *r)
{
	json_object_set_new(json_object_get(r, "TrainingJobDefinition"),
			    "HyperParameterTuningResourceConfig",
			    json_pack("{s:s,s:i}", "InstanceType",
				      "ml.m5.large", "InstanceCount", 1));
}

static void own_parent(json_t *r)
{
	json_object_set_new(
		r, "WarmStartConfig",
		json_pack("{s:[{s:s}],s:s}", "ParentHyperParameterTuningJobs",
			  "HyperParameterTuningJobName", "t1", "WarmStartType",
			  "TransferLearning"));
}

static void test_rules(void **state)
{
	(void)state;
	refused(min_above_max, "ContinuousParameterRanges[0]: MinValue 2");
	refused(log_from_zero, "Logarithmic needs MinValue > 0");
	refused(revlog_out, "ReverseLogarithmic needs 0 <= MinValue");
	refused(revlog_int, "ReverseLogarithmic is only for continuous");
	refused(int_not_whole, "IntegerParameterRanges[0]: MaxValue '12.5'");
	refused(cat_twice, "value 'relu' is given twice");
	refused(name_twice, "'lr' has more than one range");
	refused(tuned_and_static, "'lr' is also in StaticHyperParameters");
	refused(grid_numeric, "Grid takes only CategoricalParameterRanges");
	refused(hyperband_no_max, "MaxResource");
	refused(hyperband_auto, "TrainingJobEarlyStoppingType must be Off");
	refused(no_budget, "MaxNumberOfTrainingJobs is required");
	refused(unknown_metric, "'loss' is not among the MetricDefinitions");
	refused(autotune, "Autotune is not supported");
	refused(unknown_member, "Unknown member 'Fancy'");
	refused(both_resources, "not both");
	refused(own_parent, "cannot be its own parent");
}

static void test_child_body(void **state)
{
	struct api_tuning_spec s;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	double x[3] = { 64, 0.01, 1 };
	char **vals;
	json_t *body;
	json_t *hp;
	size_t i;

	(void)state;
	assert_int_equal(parse(base(), &s, &err), 0);
	vals = api_tuning_values(&s.defs[0], x);
	assert_string_equal(vals[0], "64");
	assert_string_equal(vals[1], "0.01");
	assert_string_equal(vals[2], "tanh");
	assert_int_equal(api_tuning_child_body(&s, &s.defs[0], "t1-001-abc",
					       vals, &out),
			 0);
	body = json_loads(out.data, 0, NULL);
	assert_non_null(body);
	assert_string_equal(json_string_value(json_object_get(body,
							      "TrainingJobName")),
			    "t1-001-abc");
	hp = json_object_get(body, "HyperParameters");
	assert_string_equal(json_string_value(json_object_get(hp, "epochs")),
			    "5");
	assert_string_equal(json_string_value(json_object_get(hp, "act")),
			    "tanh");
	assert_string_equal(json_string_value(json_object_get(
				    hp, "_tuning_objective_metric")),
			    "acc");
	assert_int_equal(json_array_size(json_object_get(body, "Tags")), 1);
	assert_non_null(json_object_get(body, "ResourceConfig"));
	json_decref(body);
	/* And back: the values give the point. */
	{
		char n0[] = "hidden", n1[] = "lr", n2[] = "act";
		char other[] = "other";
		char *names[] = { n0, n1, n2 };
		double y[3];

		assert_int_equal(api_tuning_point(&s.defs[0], names, vals, 3,
						  y),
				 0);
		assert_true(y[0] == 64 && y[1] == 0.01 && y[2] == 1);
		names[2] = other;
		assert_int_equal(api_tuning_point(&s.defs[0], names, vals, 3,
						  y),
				 ERR_INVALID);
	}
	for (i = 0; vals[i]; i++)
		free(vals[i]);
	free(vals);
	api_tuning_release(&s);
	buf_release(&err);
	buf_release(&out);
}

/* The SDK's HyperParameterTuningResourceConfig stands for ResourceConfig. */
static void test_tuning_resources(void **state)
{
	struct api_tuning_spec s;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	json_t *root = base();
	json_t *def = json_object_get(root, "TrainingJobDefinition");
	double x[3] = { 8, 0.1, 0 };
	char **vals;
	json_t *body;
	json_t *rc;
	size_t i;

	(void)state;
	json_object_del(def, "ResourceConfig");
	json_object_set_new(def, "HyperParameterTuningResourceConfig",
			    json_pack("{s:s,s:i,s:i}", "InstanceType",
				      "ml.m5.large", "InstanceCount", 2,
				      "VolumeSizeInGB", 30));
	assert_int_equal(parse(root, &s, &err), 0);
	vals = api_tuning_values(&s.defs[0], x);
	assert_int_equal(api_tuning_child_body(&s, &s.defs[0], "t1-002-abc",
					       vals, &out),
			 0);
	body = json_loads(out.data, 0, NULL);
	rc = json_object_get(body, "ResourceConfig");
	assert_int_equal(json_integer_value(json_object_get(rc,
							    "InstanceCount")),
			 2);
	assert_int_equal(json_integer_value(json_object_get(rc,
							    "VolumeSizeInGB")),
			 30);
	assert_null(json_object_get(body, "HyperParameterTuningResourceConfig"));
	json_decref(body);
	for (i = 0; vals[i]; i++)
		free(vals[i]);
	free(vals);
	api_tuning_release(&s);
	buf_release(&err);
	buf_release(&out);
}

/* The stored request loads again, whatever the rules say of it then. */
static void test_load(void **state)
{
	struct api_tuning_spec s, t;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(parse(base(), &s, &err), 0);
	assert_int_equal(api_tuning_load(s.request_json, &t, &err), 0);
	assert_int_equal(t.n_defs, 1);
	assert_int_equal(t.defs[0].n_ranges, 3);
	assert_int_equal(t.n_tags, 0);
	api_tuning_release(&t);
	api_tuning_release(&s);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_child_body),
		cmocka_unit_test(test_tuning_resources),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
