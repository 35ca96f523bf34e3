/*
 * The AWS Batch requests' shapes (botocore's batch model, the members of
 * the operations docs/batch.md lists) and the walk that checks a request
 * against one.
 */
#include <math.h>
#include <string.h>

#include "api/batch_check.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define STRMAX 1024
#define STR(n, req)                                   \
	{                                             \
		n, BM_STR, req, NULL, 1, STRMAX, NULL \
	}
#define INT(n, req, lo, hi)                        \
	{                                          \
		n, BM_INT, req, NULL, lo, hi, NULL \
	}
#define ENUM(n, req, v)                        \
	{                                      \
		n, BM_ENUM, req, v, 0, 0, NULL \
	}
#define SUB(n, t, req, c)                 \
	{                                 \
		n, t, req, NULL, 0, 0, &c \
	}
#define TAGS                                         \
	{                                            \
		"tags", BM_MAP, 0, NULL, 0, 50, NULL \
	}
#define SHAPE(a)                            \
	{                                   \
		a, sizeof(a) / sizeof(a[0]) \
	}

static const char *const states[] = { "ENABLED", "DISABLED", NULL };
static const char *const sm_training[] = { "SAGEMAKER_TRAINING", NULL };
static const char *const queue_types[] = { "EKS", "ECS", "ECS_FARGATE",
					   "SAGEMAKER_TRAINING", NULL };
static const char *const strategies[] = { "RESERVE", "LEND", "LEND_AND_BORROW",
					  NULL };
static const char *const fifo[] = { "FIFO", NULL };
static const char *const job_statuses[] = { "SUBMITTED", "PENDING",  "RUNNABLE",
					    "SCHEDULED", "STARTING", "RUNNING",
					    "SUCCEEDED", "FAILED",   NULL };
static const char *const tl_states[] = { "RUNNABLE", NULL };
static const char *const tl_actions[] = { "CANCEL", "TERMINATE", NULL };
static const char *const exit_actions[] = { "RETRY", "EXIT", NULL };

static const struct api__bmember limit_m[] = {
	INT("maxCapacity", 1, 1, 1000000),
	STR("capacityUnit", 1),
};
static const struct api__bshape limit = SHAPE(limit_m);

static const struct api__bmember env_order_m[] = {
	INT("order", 1, 0, 1000000),
	STR("serviceEnvironment", 1),
};
static const struct api__bshape env_order = SHAPE(env_order_m);

static const struct api__bmember ce_order_m[] = {
	INT("order", 1, 0, 1000000),
	STR("computeEnvironment", 1),
};
static const struct api__bshape ce_order = SHAPE(ce_order_m);

static const struct api__bmember tl_m[] = {
	STR("reason", 1),
	ENUM("state", 1, tl_states),
	INT("maxTimeSeconds", 1, 600, 86400),
	ENUM("action", 1, tl_actions),
};
static const struct api__bshape tl = SHAPE(tl_m);

static const struct api__bmember weight_m[] = {
	STR("shareIdentifier", 1),
	{ "weightFactor", BM_NUM, 0, NULL, 0, 1000, NULL },
};
static const struct api__bshape weight = SHAPE(weight_m);

static const struct api__bmember fair_m[] = {
	INT("shareDecaySeconds", 0, 0, 604800),
	INT("computeReservation", 0, 0, 99),
	SUB("shareDistribution", BM_LIST, 0, weight),
};
static const struct api__bshape fair = SHAPE(fair_m);

static const struct api__bmember quota_policy_m[] = {
	ENUM("idleResourceAssignmentStrategy", 1, fifo),
};
static const struct api__bshape quota_policy = SHAPE(quota_policy_m);

static const struct api__bmember sharing_m[] = {
	ENUM("strategy", 1, strategies),
	INT("borrowLimit", 0, -1, 1000000),
};
static const struct api__bshape sharing = SHAPE(sharing_m);

static const struct api__bmember preempt_m[] = {
	ENUM("inSharePreemption", 1, states),
};
static const struct api__bshape preempt = SHAPE(preempt_m);

static const struct api__bmember create_env_m[] = {
	STR("serviceEnvironmentName", 1),
	ENUM("serviceEnvironmentType", 1, sm_training),
	ENUM("state", 0, states),
	SUB("capacityLimits", BM_LIST, 1, limit),
	TAGS,
};

static const struct api__bmember update_env_m[] = {
	STR("serviceEnvironment", 1),
	ENUM("state", 0, states),
	SUB("capacityLimits", BM_LIST, 0, limit),
};

static const struct api__bmember create_queue_m[] = {
	STR("jobQueueName", 1),
	ENUM("state", 0, states),
	STR("schedulingPolicyArn", 0),
	INT("priority", 1, 0, 1000),
	SUB("computeEnvironmentOrder", BM_LIST, 0, ce_order),
	SUB("serviceEnvironmentOrder", BM_LIST, 0, env_order),
	ENUM("jobQueueType", 0, queue_types),
	TAGS,
	SUB("jobStateTimeLimitActions", BM_LIST, 0, tl),
};

static const struct api__bmember update_queue_m[] = {
	STR("jobQueue", 1),
	ENUM("state", 0, states),
	STR("schedulingPolicyArn", 0),
	INT("priority", 0, 0, 1000),
	SUB("computeEnvironmentOrder", BM_LIST, 0, ce_order),
	SUB("serviceEnvironmentOrder", BM_LIST, 0, env_order),
	SUB("jobStateTimeLimitActions", BM_LIST, 0, tl),
};

static const struct api__bmember create_policy_m[] = {
	STR("name", 1),
	SUB("quotaSharePolicy", BM_STRUCT, 0, quota_policy),
	SUB("fairsharePolicy", BM_STRUCT, 0, fair),
	TAGS,
};

static const struct api__bmember update_policy_m[] = {
	STR("arn", 1),
	SUB("quotaSharePolicy", BM_STRUCT, 0, quota_policy),
	SUB("fairsharePolicy", BM_STRUCT, 0, fair),
};

static const struct api__bmember create_share_m[] = {
	STR("quotaShareName", 1),
	STR("jobQueue", 1),
	SUB("capacityLimits", BM_LIST, 1, limit),
	SUB("resourceSharingConfiguration", BM_STRUCT, 1, sharing),
	SUB("preemptionConfiguration", BM_STRUCT, 1, preempt),
	ENUM("state", 0, states),
	TAGS,
};

static const struct api__bmember update_share_m[] = {
	STR("quotaShareArn", 1),
	SUB("capacityLimits", BM_LIST, 0, limit),
	SUB("resourceSharingConfiguration", BM_STRUCT, 0, sharing),
	SUB("preemptionConfiguration", BM_STRUCT, 0, preempt),
	ENUM("state", 0, states),
};

static const struct api__bmember exit_m[] = {
	ENUM("action", 0, exit_actions),
	STR("onStatusReason", 0),
};
static const struct api__bshape exit_s = SHAPE(exit_m);

static const struct api__bmember retry_m[] = {
	INT("attempts", 1, 1, 10),
	SUB("evaluateOnExit", BM_LIST, 0, exit_s),
};
static const struct api__bshape retry = SHAPE(retry_m);

static const struct api__bmember job_preempt_m[] = {
	INT("preemptionRetriesBeforeTermination", 0, 0, 99),
};
static const struct api__bshape job_preempt = SHAPE(job_preempt_m);

static const struct api__bmember timeout_m[] = {
	INT("attemptDurationSeconds", 0, 60, 2419200),
};
static const struct api__bshape timeout = SHAPE(timeout_m);

static const struct api__bmember submit_m[] = {
	STR("jobName", 1),
	STR("jobQueue", 1),
	SUB("retryStrategy", BM_STRUCT, 0, retry),
	INT("schedulingPriority", 0, 0, 9999),
	{ "serviceRequestPayload", BM_STR, 1, NULL, 1, 10 << 20, NULL },
	ENUM("serviceJobType", 1, sm_training),
	STR("shareIdentifier", 0),
	STR("quotaShareName", 0),
	SUB("preemptionConfiguration", BM_STRUCT, 0, job_preempt),
	SUB("timeoutConfig", BM_STRUCT, 0, timeout),
	TAGS,
	{ "clientToken", BM_STR, 0, NULL, 1, 64, NULL },
};

static const struct api__bmember filter_m[] = {
	STR("name", 0),
	{ "values", BM_STR_LIST, 0, NULL, 0, 0, NULL },
};
static const struct api__bshape filter = SHAPE(filter_m);

static const struct api__bmember list_jobs_m[] = {
	STR("jobQueue", 0),
	ENUM("jobStatus", 0, job_statuses),
	INT("maxResults", 0, 1, 1000),
	STR("nextToken", 0),
	SUB("filters", BM_LIST, 0, filter),
};

static const struct api__bmember job_id_m[] = { STR("jobId", 1) };
static const struct api__bmember update_job_m[] = {
	STR("jobId", 1),
	INT("schedulingPriority", 1, 0, 9999),
};
static const struct api__bmember terminate_m[] = {
	STR("jobId", 1),
	STR("reason", 1),
};

static const struct api__bmember del_env_m[] = { STR("serviceEnvironment", 1) };
static const struct api__bmember del_queue_m[] = { STR("jobQueue", 1) };
static const struct api__bmember arn_m[] = { STR("arn", 1) };
static const struct api__bmember share_arn_m[] = { STR("quotaShareArn", 1) };

static const struct api__bmember desc_envs_m[] = {
	{ "serviceEnvironments", BM_STR_LIST, 0, NULL, 0, 0, NULL },
	INT("maxResults", 0, 1, 100),
	STR("nextToken", 0),
};
static const struct api__bmember desc_queues_m[] = {
	{ "jobQueues", BM_STR_LIST, 0, NULL, 0, 0, NULL },
	INT("maxResults", 0, 1, 100),
	STR("nextToken", 0),
};
static const struct api__bmember desc_policies_m[] = {
	{ "arns", BM_STR_LIST, 1, NULL, 0, 0, NULL },
};
static const struct api__bmember list_policies_m[] = {
	INT("maxResults", 0, 1, 1000),
	STR("nextToken", 0),
};
static const struct api__bmember list_shares_m[] = {
	STR("jobQueue", 1),
	INT("maxResults", 0, 1, 1000),
	STR("nextToken", 0),
};

static const struct {
	const char *op;
	struct api__bshape s;
} shapes[] = {
	{ "CreateServiceEnvironment", SHAPE(create_env_m) },
	{ "UpdateServiceEnvironment", SHAPE(update_env_m) },
	{ "DeleteServiceEnvironment", SHAPE(del_env_m) },
	{ "DescribeServiceEnvironments", SHAPE(desc_envs_m) },
	{ "CreateJobQueue", SHAPE(create_queue_m) },
	{ "UpdateJobQueue", SHAPE(update_queue_m) },
	{ "DeleteJobQueue", SHAPE(del_queue_m) },
	{ "DescribeJobQueues", SHAPE(desc_queues_m) },
	{ "CreateSchedulingPolicy", SHAPE(create_policy_m) },
	{ "UpdateSchedulingPolicy", SHAPE(update_policy_m) },
	{ "DeleteSchedulingPolicy", SHAPE(arn_m) },
	{ "DescribeSchedulingPolicies", SHAPE(desc_policies_m) },
	{ "ListSchedulingPolicies", SHAPE(list_policies_m) },
	{ "CreateQuotaShare", SHAPE(create_share_m) },
	{ "UpdateQuotaShare", SHAPE(update_share_m) },
	{ "DeleteQuotaShare", SHAPE(share_arn_m) },
	{ "DescribeQuotaShare", SHAPE(share_arn_m) },
	{ "ListQuotaShares", SHAPE(list_shares_m) },
	{ "SubmitServiceJob", SHAPE(submit_m) },
	{ "DescribeServiceJob", SHAPE(job_id_m) },
	{ "ListServiceJobs", SHAPE(list_jobs_m) },
	{ "UpdateServiceJob", SHAPE(update_job_m) },
	{ "TerminateServiceJob", SHAPE(terminate_m) },
};

const struct api__bshape *api__batch_shape(const char *op)
{
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (!strcmp(shapes[i].op, op))
			return &shapes[i].s;
	return NULL;
}

static int bad(struct buf *err, const char *path, const char *name,
	       const char *what)
{
	buf_reset(err);
	(void)buf_addf(err, "%s%s%s %s", path, *path ? "." : "", name, what);
	return ERR_INVALID;
}

static int check_enum(const json_t *v, const struct api__bmember *m,
		      const char *path, struct buf *err)
{
	size_t i;

	if (!json_is_string(v))
		return bad(err, path, m->name, "must be a string");
	for (i = 0; m->values[i]; i++)
		if (!strcmp(json_string_value(v), m->values[i]))
			return 0;
	(void)bad(err, path, m->name, "must be one of");
	for (i = 0; m->values[i]; i++)
		(void)buf_addf(err, "%s %s", i ? "," : "", m->values[i]);
	(void)buf_addf(err, " (got '%.64s')", json_string_value(v));
	return ERR_INVALID;
}

static int check_scalar(const json_t *v, const struct api__bmember *m,
			const char *path, struct buf *err)
{
	size_t len;

	switch (m->type) {
	case BM_STR:
		if (!json_is_string(v))
			return bad(err, path, m->name, "must be a string");
		len = json_string_length(v);
		if ((int64_t)len < m->min || (int64_t)len > m->max ||
		    strlen(json_string_value(v)) != len)
			return bad(err, path, m->name,
				   "has a length outside its bounds");
		return 0;
	case BM_INT:
		if (!json_is_integer(v))
			return bad(err, path, m->name, "must be an integer");
		if (json_integer_value(v) < m->min ||
		    json_integer_value(v) > m->max) {
			(void)bad(err, path, m->name, "must be");
			(void)buf_addf(err, " %lld..%lld", (long long)m->min,
				       (long long)m->max);
			return ERR_INVALID;
		}
		return 0;
	case BM_NUM:
		if (!json_is_number(v) || json_number_value(v) < m->min ||
		    json_number_value(v) > m->max ||
		    !isfinite(json_number_value(v)))
			return bad(err, path, m->name,
				   "must be a number within its bounds");
		return 0;
	default:
		return check_enum(v, m, path, err);
	}
}

static int check_list(const json_t *v, const struct api__bmember *m,
		      const char *path, struct buf *err)
{
	struct buf sub = BUF_INIT;
	json_t *e;
	size_t i;
	int ret = 0;

	if (!json_is_array(v))
		return bad(err, path, m->name, "must be a list");
	json_array_foreach(v, i, e)
	{
		buf_reset(&sub);
		(void)buf_addf(&sub, "%s%s%s[%zu]", path, *path ? "." : "",
			       m->name, i);
		if (m->type == BM_STR_LIST) {
			if (!json_is_string(e)) {
				ret = bad(err, sub.data, "",
					  "must be a string");
				break;
			}
			continue;
		}
		ret = api__batch_check(e, m->child, sub.data, err);
		if (ret)
			break;
	}
	buf_release(&sub);
	return ret;
}

static int check_map(const json_t *v, const struct api__bmember *m,
		     const char *path, struct buf *err)
{
	const char *k;
	json_t *e;

	if (!json_is_object(v))
		return bad(err, path, m->name, "must be a map");
	if ((int64_t)json_object_size(v) > m->max)
		return bad(err, path, m->name, "has more than 50 entries");
	json_object_foreach((json_t *)v, k, e)
	{
		if (!json_is_string(e) || !*k || strlen(k) > 128 ||
		    json_string_length(e) > 256)
			return bad(err, path, m->name,
				   "must map keys of 1..128 characters to "
				   "strings of at most 256");
		if (!strncmp(k, "aws:", 4))
			return bad(err, path, m->name,
				   "may not use keys starting with aws:");
	}
	return 0;
}

static int check_member(const json_t *v, const struct api__bmember *m,
			const char *path, struct buf *err)
{
	struct buf sub = BUF_INIT;
	int ret;

	switch (m->type) {
	case BM_STRUCT:
		if (!json_is_object(v))
			return bad(err, path, m->name, "must be a structure");
		(void)buf_addf(&sub, "%s%s%s", path, *path ? "." : "", m->name);
		ret = api__batch_check(v, m->child, sub.data, err);
		buf_release(&sub);
		return ret;
	case BM_LIST:
	case BM_STR_LIST:
		return check_list(v, m, path, err);
	case BM_MAP:
		return check_map(v, m, path, err);
	default:
		return check_scalar(v, m, path, err);
	}
}

int api__batch_check(const json_t *v, const struct api__bshape *s,
		     const char *path, struct buf *err)
{
	const char *key;
	json_t *e;
	size_t i;
	int ret;

	if (!json_is_object(v))
		return bad(err, path, "", "must be a structure");
	json_object_foreach((json_t *)v, key, e)
	{
		for (i = 0; i < s->n && strcmp(s->m[i].name, key); i++)
			;
		if (i == s->n)
			return bad(err, path, key,
				   "is not a member of this request");
		if (json_is_null(e))
			continue;
		ret = check_member(e, &s->m[i], path, err);
		if (ret)
			return ret;
	}
	for (i = 0; i < s->n; i++) {
		e = json_object_get(v, s->m[i].name);
		if (s->m[i].required && (!e || json_is_null(e)))
			return bad(err, path, s->m[i].name, "is required");
	}
	return 0;
}
