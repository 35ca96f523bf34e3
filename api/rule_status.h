#ifndef API_RULE_STATUS_H
#define API_RULE_STATUS_H

/*
 * The statuses of a job's Debugger and Profiler rules as
 * DescribeTrainingJob shows them: {"DebugRuleEvaluationStatuses": [...],
 * "ProfilerRuleEvaluationStatuses": [...]}, each element
 * {RuleConfigurationName, RuleEvaluationStatus, StatusDetails,
 * LastModifiedTime}. The controller keeps that text with the job
 * (db_job.rule_statuses) and Describe merges it into its answer. There is
 * no RuleEvaluationJobArn: no processing job evaluates the rule.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct api_rule_status {
	int profiler;  /* in ProfilerRuleEvaluationStatuses */
	char *name;    /* RuleConfigurationName */
	char *status;  /* RuleEvaluationStatus */
	char *details; /* StatusDetails (at most 1024 bytes); may be NULL */
	int64_t modified_ms; /* LastModifiedTime */
};

/* Appends the JSON object of s[0..n) to out (a list only when it has
 * elements). Returns 0 or ERR_TOOBIG. */
int api_rule_statuses_build(const struct api_rule_status *s, size_t n,
			    struct buf *out);

/*
 * Parses what api_rule_statuses_build() wrote into *out (free with
 * api_rule_statuses_free()) and *n. Returns 0 or ERR_INVALID with err.
 */
int api_rule_statuses_parse(const char *json, struct api_rule_status **out,
			    size_t *n, struct buf *err);

void api_rule_statuses_free(struct api_rule_status *s, size_t n);

#endif
