#ifndef CTRL_RULES_H
#define CTRL_RULES_H

/*
 * SageMaker Debugger's and Profiler's built-in rules, evaluated by the
 * controller from what it collects (docs/distributed.md, "Rules"), as
 * pure functions over a table: which rules and parameters are honoured,
 * and each rule's verdict from plain figures. No I/O, no clock, no locks;
 * controller/obs/rulerun.c gathers the figures and keeps the statuses.
 *
 * To add a rule: a row in the table of rules.c (its name, its list, its
 * parameters with their defaults and bounds, its evaluator), an entry in
 * enum ctrl_rule_kind, and a case in tests/controller/test_rules.c for it
 * firing and not firing.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct api_job_spec;
struct bregex;

enum ctrl_rule_kind {
	CTRL_RULE_STALLED,	  /* StalledTrainingRule: the hang watch */
	CTRL_RULE_LOSS,		  /* LossNotDecreasing: metric series */
	CTRL_RULE_OVERFIT,	  /* Overfit: training vs validation loss */
	CTRL_RULE_LOW_GPU,	  /* LowGPUUtilization: telemetry */
	CTRL_RULE_CPU_BOTTLENECK, /* CPUBottleneck: telemetry */
	CTRL_RULE_OVERALL,	  /* OverallSystemUsage: telemetry */
	CTRL_RULE_REPORT,	  /* ProfilerReport: the three above */
};
#define CTRL_RULE_KINDS (CTRL_RULE_REPORT + 1)

/* The rule_to_invoke of a kind ("StalledTrainingRule"). */
const char *ctrl_rule_kind_name(enum ctrl_rule_kind k);

/* RuleEvaluationStatus. */
enum ctrl_rule_status {
	CTRL_RULE_IN_PROGRESS,
	CTRL_RULE_NO_ISSUES,
	CTRL_RULE_ISSUES,
	CTRL_RULE_ERROR,
	CTRL_RULE_STOPPED,
};
#define CTRL_RULE_STATUSES (CTRL_RULE_STOPPED + 1)

/* The wire name ("InProgress", "NoIssuesFound", ...). */
const char *ctrl_rule_status_name(enum ctrl_rule_status s);

/* Parsed parameters of a rule, at most this many. */
#define CTRL_RULE_MAX_PARAMS 6

/* One rule configuration of a job, its parameters checked. */
struct ctrl_rule {
	enum ctrl_rule_kind kind;
	int profiler;
	char *name; /* RuleConfigurationName */
	/* Numbers and booleans by the rule's parameter order (rules.c). */
	double p[CTRL_RULE_MAX_PARAMS];
	struct bregex *re; /* tensor_regex; NULL: not given */
	char *prefix;	   /* training_job_name_prefix; NULL: not given */
};

/*
 * The rules of spec (api_job_spec.rules), checked against the table: a
 * rule_to_invoke that is missing, unknown or that cannot be evaluated
 * here, a rule in the other list, a parameter the rule does not honour or
 * a value out of its bounds, and a metric rule without a MetricDefinition
 * to read, are refused with ERR_INVALID and err naming them. On success
 * *out (ctrl_rules_free()) and *n; none: NULL and 0.
 */
int ctrl_rules_parse(const struct api_job_spec *spec, struct ctrl_rule **out,
		     size_t *n, struct buf *err);
void ctrl_rules_free(struct ctrl_rule *r, size_t n);

/*
 * What StalledTrainingRule asks of the hang watch: its threshold in ms
 * (0: the job has no such rule) and whether a hang stops the job
 * (stop_training_on_fire, and training_job_name_prefix, when given,
 * a prefix of job).
 */
int64_t ctrl_rules_stall_ms(const struct ctrl_rule *r, size_t n,
			    const char *job, int *stop);

/*
 * How often a running job's rules are evaluated, in ms: the smallest
 * scan_interval_us of its profiler rules, else SageMaker's default of a
 * minute.
 */
int64_t ctrl_rules_scan_ms(const struct ctrl_rule *r, size_t n);

/* A point of a metric series (MetricDefinitions). */
struct ctrl_rule_point {
	int64_t ts_ms;
	double v;
};

struct ctrl_rule_series {
	const char *name;
	const struct ctrl_rule_point *p; /* oldest first */
	size_t n;
};

/* A telemetry sample of a host while it ran the job. */
struct ctrl_rule_sample {
	double cpu; /* of all its cores, 0..100 */
	double gpu; /* the average of its GPUs, 0..100 */
	double mem; /* 0..100 */
};

struct ctrl_rule_host {
	const char *algo;		  /* algo-N (host name) */
	int gpus;			  /* 0: it has none */
	const struct ctrl_rule_sample *s; /* oldest first */
	size_t n;
};

/* What the evaluators read. */
struct ctrl_rule_facts {
	const struct ctrl_rule_series *metrics;
	size_t n_metrics;
	const struct ctrl_rule_host *hosts;
	size_t n_hosts;
	int64_t stall_ms; /* the hang watch's threshold, for the message */
};

/*
 * r's verdict on f (while the job runs, only an IssuesFound is kept: the
 * rest may still come; once it has ended, the verdict; a rule that fired
 * keeps its IssuesFound and is not asked again), with
 * what it found or why it could not judge in details (at most about 900
 * bytes). StalledTrainingRule, asked here, did not fire: NoIssuesFound.
 */
enum ctrl_rule_status ctrl_rule_eval(const struct ctrl_rule *r,
				     const struct ctrl_rule_facts *f,
				     struct buf *details);

/* p-th percentile (0..100) of v[0..n) (sorted in place); 0 when n is 0. */
double ctrl_rules_percentile(double *v, size_t n, double p);

#endif
