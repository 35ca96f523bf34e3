/*
 * Tests controller/obs/rules.c: which Debugger and Profiler rule
 * configurations are accepted (as the SageMaker Python SDK sends them)
 * and which are refused by name, and each rule's verdict firing and not
 * firing on plain figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_spec.h"
#include "common/err.h"
#include "controller/obs/rules.h"

/* A request with the given MetricDefinitions and rule members. */
static int parse_rules(const char *metrics, const char *rules,
		       struct ctrl_rule **out, size_t *n, struct buf *err)
{
	struct api_job_spec spec;
	struct buf req = BUF_INIT;
	int ret;

	(void)buf_addf(
		&req,
		"{\"TrainingJobName\":\"job-1\","
		"\"AlgorithmSpecification\":{\"TrainingImage\":\"img\","
		"\"TrainingInputMode\":\"File\",\"MetricDefinitions\":[%s]},"
		"\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","
		"\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/o\"},"
		"\"ResourceConfig\":{\"InstanceType\":\"ml.c5.xlarge\","
		"\"InstanceCount\":1,\"VolumeSizeInGB\":1},"
		"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":60}%s%s}",
		metrics, *rules ? "," : "", rules);
	ret = api_job_spec_parse(req.data, req.len, &spec, err);
	buf_release(&req);
	if (ret)
		return ret;
	ret = ctrl_rules_parse(&spec, out, n, err);
	api_job_spec_release(&spec);
	return ret;
}

#define LOSS_METRICS                                             \
	"{\"Name\":\"train:loss\",\"Regex\":\"loss=(\\\\S+)\"}," \
	"{\"Name\":\"validation:loss\",\"Regex\":\"vloss=(\\\\S+)\"}"

/* What Rule.sagemaker(rule_configs.stalled_training_rule()) sends, with
 * parameters added as rule_parameters={...} adds them. */
#define STALLED(params)                                                         \
	"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"              \
	"\"StalledTrainingRule\",\"RuleEvaluatorImage\":\"503895931360.dkr."    \
	"ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest\","        \
	"\"RuleParameters\":{\"rule_to_invoke\":\"StalledTrainingRule\"" params \
	"}}]"

static void test_sdk_stalled_accepted(void **state)
{
	struct buf err = BUF_INIT;
	struct ctrl_rule *r;
	size_t n;
	int stop;

	(void)state;
	assert_int_equal(parse_rules("", STALLED(""), &r, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].kind, CTRL_RULE_STALLED);
	assert_string_equal(r[0].name, "StalledTrainingRule");
	assert_int_equal(ctrl_rules_stall_ms(r, n, "job-1", &stop), 1800000);
	assert_int_equal(stop, 0);
	ctrl_rules_free(r, n);

	assert_int_equal(parse_rules("",
				     STALLED(",\"threshold\":\"4\","
					     "\"stop_training_on_fire\":"
					     "\"True\","
					     "\"training_job_name_prefix\":"
					     "\"job-\""),
				     &r, &n, &err),
			 0);
	assert_int_equal(ctrl_rules_stall_ms(r, n, "job-1", &stop), 4000);
	assert_int_equal(stop, 1);
	/* A prefix that is not the job's: the job is not stopped. */
	assert_int_equal(ctrl_rules_stall_ms(r, n, "other", &stop), 4000);
	assert_int_equal(stop, 0);
	ctrl_rules_free(r, n);
	buf_release(&err);
}

/* What ProfilerRule.sagemaker(rule_configs.X()) sends (values str()'d). */
static void test_sdk_profiler_accepted(void **state)
{
	struct buf err = BUF_INIT;
	struct ctrl_rule *r;
	size_t n;

	(void)state;
	assert_int_equal(
		parse_rules(
			"",
			"\"ProfilerRuleConfigurations\":["
			"{\"RuleConfigurationName\":\"ProfilerReport-1\","
			"\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
			"\"opt_out_telemetry\":\"False\","
			"\"custom_rule_parameters\":\"{}\","
			"\"rule_to_invoke\":\"ProfilerReport\"}},"
			"{\"RuleConfigurationName\":\"LowGPUUtilization\","
			"\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
			"\"threshold_p95\":\"70\",\"threshold_p5\":\"10\","
			"\"window\":\"500\",\"patience\":\"1000\","
			"\"scan_interval_us\":\"60000000\","
			"\"rule_to_invoke\":\"LowGPUUtilization\"}},"
			"{\"RuleConfigurationName\":\"CPUBottleneck\","
			"\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
			"\"threshold\":\"50\",\"gpu_threshold\":\"10\","
			"\"cpu_threshold\":\"90\",\"patience\":\"1000\","
			"\"scan_interval_us\":\"60000000\","
			"\"rule_to_invoke\":\"CPUBottleneck\"}},"
			"{\"RuleConfigurationName\":\"OverallSystemUsage\","
			"\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
			"\"scan_interval_us\":\"60000000\","
			"\"rule_to_invoke\":\"OverallSystemUsage\"}}]",
			&r, &n, &err),
		0);
	assert_int_equal(n, 4);
	/* The SDK's default scan interval: a minute. */
	assert_int_equal(ctrl_rules_scan_ms(r, n), 60000);
	assert_int_equal(r[0].kind, CTRL_RULE_REPORT);
	assert_int_equal(r[1].kind, CTRL_RULE_LOW_GPU);
	assert_int_equal(r[2].kind, CTRL_RULE_CPU_BOTTLENECK);
	assert_int_equal(r[3].kind, CTRL_RULE_OVERALL);
	assert_true(r[3].profiler);
	ctrl_rules_free(r, n);
	buf_release(&err);
}

/* Each refusal names what is refused. */
static void refused(const char *metrics, const char *rules, const char *want)
{
	struct buf err = BUF_INIT;
	struct ctrl_rule *r = NULL;
	size_t n = 0;

	assert_int_equal(parse_rules(metrics, rules, &r, &n, &err),
			 ERR_INVALID);
	assert_null(r);
	if (!strstr(err.data, want))
		fail_msg("'%s' does not say '%s'", err.data, want);
	buf_release(&err);
}

#define PROF(invoke, params)                                                \
	"\"ProfilerRuleConfigurations\":[{\"RuleConfigurationName\":\"p\"," \
	"\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"               \
	"\"rule_to_invoke\":\"" invoke "\"" params "}}]"

static void test_refusals(void **state)
{
	(void)state;
	refused("", PROF("IOBottleneck", ""), "IOBottleneck");
	refused("", PROF("StepOutlier", ",\"mode\":\"None\""), "StepOutlier");
	refused("", PROF("Dataloader", ""), "Dataloader");
	refused("", PROF("StalledTrainingRule", ""),
		"give it in DebugRuleConfigurations");
	refused("", STALLED(",\"threshold\":\"soon\""), "threshold 'soon'");
	refused("", STALLED(",\"threshold\":\"0\""), "threshold '0'");
	refused("", STALLED(",\"stop_training_on_fire\":\"maybe\""),
		"stop_training_on_fire");
	refused("", STALLED(",\"action_json\":\"{}\""),
		"action_json (the SDK's rule actions");
	refused("", PROF("LowGPUUtilization", ",\"threshold_p99\":\"5\""),
		"threshold_p99");
	refused("", PROF("OverallSystemUsage", ",\"scan_interval_us\":\"10\""),
		"scan_interval_us '10'");
	refused("",
		PROF("ProfilerReport",
		     ",\"custom_rule_parameters\":"
		     "\"{'LowGPUUtilization_threshold_p95': 50}\""),
		"custom_rule_parameters");
	refused("",
		"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"
		"\"mine\",\"RuleEvaluatorImage\":\"img\",\"InstanceType\":"
		"\"ml.t3.medium\",\"VolumeSizeInGB\":1}]",
		"custom rules");
	refused("",
		"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"
		"\"LossNotDecreasing\",\"RuleEvaluatorImage\":\"img\","
		"\"RuleParameters\":{\"rule_to_invoke\":"
		"\"LossNotDecreasing\"}}]",
		"give one whose Name holds 'loss'");
	refused("{\"Name\":\"train:loss\",\"Regex\":\"l=(\\\\S+)\"}",
		"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"
		"\"Overfit\",\"RuleEvaluatorImage\":\"img\","
		"\"RuleParameters\":{\"rule_to_invoke\":\"Overfit\"}}]",
		"validation loss");
	refused(LOSS_METRICS,
		"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"
		"\"l\",\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
		"\"rule_to_invoke\":\"LossNotDecreasing\",\"mode\":"
		"\"TRAIN\"}}]",
		"RuleParameters mode");
	/* A name used twice, across the lists. */
	refused("",
		"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"
		"\"x\",\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
		"\"rule_to_invoke\":\"StalledTrainingRule\"}}],"
		"\"ProfilerRuleConfigurations\":[{\"RuleConfigurationName\":"
		"\"x\",\"RuleEvaluatorImage\":\"img\",\"RuleParameters\":{"
		"\"rule_to_invoke\":\"OverallSystemUsage\"}}]",
		"'x' is used more than once");
}

/* n OverallSystemUsage rules o0..o(n-1) into b. */
static void overall_list(struct buf *b, int n)
{
	int i;

	buf_reset(b);
	(void)buf_adds(b, "\"ProfilerRuleConfigurations\":[");
	for (i = 0; i < n; i++)
		(void)buf_addf(b,
			       "%s{\"RuleConfigurationName\":\"o%d\","
			       "\"RuleEvaluatorImage\":\"img\","
			       "\"RuleParameters\":{\"rule_to_invoke\":"
			       "\"OverallSystemUsage\"}}",
			       i ? "," : "", i);
	(void)buf_adds(b, "]");
}

/* The service model's limits: at most 20 rules a list, values of at most
 * 256 characters (api/validate.c). */
static void test_limits(void **state)
{
	struct buf rules = BUF_INIT, err = BUF_INIT, big = BUF_INIT;
	struct ctrl_rule *r;
	size_t n;
	int i;

	(void)state;
	overall_list(&rules, 21);
	refused("", rules.data, "profilerRuleConfigurations");
	overall_list(&rules, 20);
	if (parse_rules("", rules.data, &r, &n, &err))
		fail_msg("twenty rules refused: %s", err.data);
	assert_int_equal(n, 20);
	ctrl_rules_free(r, n);
	for (i = 0; i < 257; i++)
		(void)buf_addch(&big, '7');
	buf_reset(&rules);
	(void)buf_addf(&rules, STALLED(",\"threshold\":\"%s\""), big.data);
	refused("", rules.data, "256");
	buf_release(&rules);
	buf_release(&big);
	buf_release(&err);
}

/* One rule of kind with its defaults, parameters set by index. */
static struct ctrl_rule *one_rule(const char *metrics, const char *rules)
{
	struct buf err = BUF_INIT;
	struct ctrl_rule *r;
	size_t n;

	if (parse_rules(metrics, rules, &r, &n, &err))
		fail_msg("%s", err.data);
	assert_int_equal(n, 1);
	buf_release(&err);
	return r;
}

static enum ctrl_rule_status eval(const struct ctrl_rule *r,
				  const struct ctrl_rule_facts *f,
				  const char *want)
{
	struct buf d = BUF_INIT;
	enum ctrl_rule_status st = ctrl_rule_eval(r, f, &d);

	if (want && !strstr(d.data, want))
		fail_msg("details '%s' do not say '%s'", d.data, want);
	assert_true(d.len <= 1024);
	buf_release(&d);
	return st;
}

static void test_stalled_not_fired(void **state)
{
	struct ctrl_rule *r = one_rule("", STALLED(",\"threshold\":\"5\""));
	struct ctrl_rule_facts f = { 0 };

	(void)state;
	assert_int_equal(eval(r, &f, "for 5 s"), CTRL_RULE_NO_ISSUES);
	ctrl_rules_free(r, 1);
}

#define LOSS_RULE(params)                                                     \
	"\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"            \
	"\"LossNotDecreasing\",\"RuleEvaluatorImage\":\"img\","               \
	"\"RuleParameters\":{\"rule_to_invoke\":\"LossNotDecreasing\"" params \
	"}}]"

static void test_loss_not_decreasing(void **state)
{
	struct ctrl_rule_point down[6], flat[6];
	struct ctrl_rule_series s[2];
	struct ctrl_rule_facts f = { 0 };
	struct ctrl_rule *r;
	size_t i;

	(void)state;
	for (i = 0; i < 6; i++) {
		down[i].ts_ms = flat[i].ts_ms = (int64_t)i * 1000;
		down[i].v = 2.0 / (double)(i + 1);
		flat[i].v = i < 3 ? 2.0 / (double)(i + 1) : 0.66;
	}
	s[0].name = "train:loss";
	s[0].p = down;
	s[0].n = 6;
	s[1].name = "accuracy";
	s[1].p = flat;
	s[1].n = 6;
	f.metrics = s;
	f.n_metrics = 2;
	r = one_rule(LOSS_METRICS, LOSS_RULE(",\"num_steps\":\"2\","
					     "\"diff_percent\":\"5\""));
	/* Decreasing: fine; "accuracy" is no loss and is not read. */
	assert_int_equal(eval(r, &f, "decreased by at least 5"),
			 CTRL_RULE_NO_ISSUES);
	/* Flat after the third point: fires, naming the series. */
	s[0].p = flat;
	assert_int_equal(eval(r, &f, "train:loss did not decrease"),
			 CTRL_RULE_ISSUES);
	/* Nothing reported: no verdict. */
	s[0].n = 0;
	assert_int_equal(eval(r, &f, "no loss was reported"), CTRL_RULE_ERROR);
	ctrl_rules_free(r, 1);

	/* tensor_regex picks the series instead of the name "loss". */
	r = one_rule("{\"Name\":\"ce\",\"Regex\":\"ce=(\\\\S+)\"}",
		     LOSS_RULE(",\"tensor_regex\":\"^ce$\",\"num_steps\":"
			       "\"1\""));
	s[0].name = "ce";
	s[0].p = flat;
	s[0].n = 6;
	assert_int_equal(eval(r, &f, "ce did not decrease"), CTRL_RULE_ISSUES);
	ctrl_rules_free(r, 1);
}

static void test_overfit(void **state)
{
	struct ctrl_rule_point tr[4], va[4];
	struct ctrl_rule_series s[2] = { { "train:loss", tr, 4 },
					 { "validation:loss", va, 4 } };
	struct ctrl_rule_facts f = { s, 2, NULL, 0, 0 };
	struct ctrl_rule *r;
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++) {
		tr[i].ts_ms = va[i].ts_ms = (int64_t)i * 1000;
		tr[i].v = 1.0 - 0.2 * (double)i;
		va[i].v = tr[i].v * 1.05;
	}
	r = one_rule(LOSS_METRICS,
		     "\"DebugRuleConfigurations\":[{\"RuleConfigurationName\":"
		     "\"Overfit\",\"RuleEvaluatorImage\":\"img\","
		     "\"RuleParameters\":{\"rule_to_invoke\":\"Overfit\","
		     "\"patience\":\"2\"}}]");
	assert_int_equal(eval(r, &f, "stayed within 0.1"), CTRL_RULE_NO_ISSUES);
	/* Validation loss rises away from training loss for two points. */
	va[2].v = tr[2].v * 1.5;
	assert_int_equal(eval(r, &f, NULL), CTRL_RULE_NO_ISSUES);
	va[3].v = tr[3].v * 2;
	assert_int_equal(eval(r, &f, "validation point 4"), CTRL_RULE_ISSUES);
	ctrl_rules_free(r, 1);
}

/* n samples of one host, cpu/gpu/mem constant. */
static void fill(struct ctrl_rule_sample *s, size_t n, double cpu, double gpu)
{
	size_t i;

	for (i = 0; i < n; i++) {
		s[i].cpu = cpu;
		s[i].gpu = gpu;
		s[i].mem = 40;
	}
}

static void test_low_gpu(void **state)
{
	struct ctrl_rule_sample s[20];
	struct ctrl_rule_host h = { "algo-2", 1, s, 20 };
	struct ctrl_rule_facts f = { NULL, 0, &h, 1, 0 };
	struct ctrl_rule *r =
		one_rule("", PROF("LowGPUUtilization",
				  ",\"patience\":\"0\",\"window\":\"10\""));

	(void)state;
	fill(s, 20, 50, 90);
	assert_int_equal(eval(r, &f, "neither low nor fluctuating"),
			 CTRL_RULE_NO_ISSUES);
	fill(s, 20, 50, 20);
	assert_int_equal(eval(r, &f, "algo-2: GPU utilization is low"),
			 CTRL_RULE_ISSUES);
	/* Spikes: high 95th percentile, idle 5th. */
	fill(s, 20, 50, 95);
	s[15].gpu = s[16].gpu = 0;
	assert_int_equal(eval(r, &f, "fluctuates"), CTRL_RULE_ISSUES);
	/* Only the last window counts: the low start is past. */
	fill(s, 20, 50, 95);
	fill(s, 10, 50, 0);
	assert_int_equal(eval(r, &f, NULL), CTRL_RULE_NO_ISSUES);
	/* No GPU on the hosts: no verdict. */
	h.gpus = 0;
	assert_int_equal(eval(r, &f, "no GPU"), CTRL_RULE_ERROR);
	ctrl_rules_free(r, 1);
}

static void test_cpu_bottleneck(void **state)
{
	struct ctrl_rule_sample s[10];
	struct ctrl_rule_host h = { "algo-1", 2, s, 10 };
	struct ctrl_rule_facts f = { NULL, 0, &h, 1, 0 };
	struct ctrl_rule *r =
		one_rule("", PROF("CPUBottleneck", ",\"patience\":\"2\""));

	(void)state;
	fill(s, 10, 95, 80);
	assert_int_equal(eval(r, &f, "in 0 of 8 samples"), CTRL_RULE_NO_ISSUES);
	fill(s, 10, 95, 5);
	assert_int_equal(eval(r, &f, "in 8 of 8 samples"), CTRL_RULE_ISSUES);
	h.gpus = 0;
	assert_int_equal(eval(r, &f, "no GPU"), CTRL_RULE_ERROR);
	ctrl_rules_free(r, 1);
}

static void test_overall_and_report(void **state)
{
	/* Past the default patience of the report's rules (1000). */
	static struct ctrl_rule_sample s[1100];
	struct ctrl_rule_host h[2] = { { "algo-1", 0, s, 10 },
				       { "algo-2", 0, s, 0 } };
	struct ctrl_rule_facts f = { NULL, 0, h, 2, 0 };
	struct ctrl_rule *r =
		one_rule("", PROF("OverallSystemUsage",
				  ",\"scan_interval_us\":\"2000000\""));

	(void)state;
	assert_int_equal(ctrl_rules_scan_ms(r, 1), 2000);
	fill(s, 10, 30, 0);
	s[9].cpu = 100;
	assert_int_equal(eval(r, &f,
			      "algo-1 (10 samples): CPU p50/p95/p99 "
			      "30/"),
			 CTRL_RULE_NO_ISSUES);
	h[0].n = 0;
	assert_int_equal(eval(r, &f, "no telemetry"), CTRL_RULE_ERROR);
	ctrl_rules_free(r, 1);

	/* ProfilerReport: its rules evaluated here, the others named. */
	r = one_rule("", PROF("ProfilerReport", ""));
	h[0].n = 1100;
	h[0].gpus = 1;
	fill(s, 1100, 95, 2);
	assert_int_equal(eval(r, &f, "LowGPUUtilization: IssuesFound"),
			 CTRL_RULE_ISSUES);
	h[0].gpus = 0;
	assert_int_equal(eval(r, &f, "Not evaluated here: BatchSize"),
			 CTRL_RULE_NO_ISSUES);
	ctrl_rules_free(r, 1);
}

static void test_percentile(void **state)
{
	double v[] = { 5, 1, 4, 2, 3 };

	(void)state;
	assert_true(ctrl_rules_percentile(v, 5, 50) == 3);
	assert_true(ctrl_rules_percentile(v, 5, 100) == 5);
	assert_true(ctrl_rules_percentile(v, 5, 0) == 1);
	assert_true(ctrl_rules_percentile(v, 0, 50) == 0);
	assert_string_equal(ctrl_rule_status_name(CTRL_RULE_ISSUES),
			    "IssuesFound");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sdk_stalled_accepted),
		cmocka_unit_test(test_sdk_profiler_accepted),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_stalled_not_fired),
		cmocka_unit_test(test_loss_not_decreasing),
		cmocka_unit_test(test_overfit),
		cmocka_unit_test(test_low_gpu),
		cmocka_unit_test(test_cpu_bottleneck),
		cmocka_unit_test(test_overall_and_report),
		cmocka_unit_test(test_percentile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
