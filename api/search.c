#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/search.h"
#include "api/validate.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Filters, nested filters and subexpressions in one request, in all. */
#define SEARCH_MAX_TERMS 50

/* The members of the service's TrainingJob shape. */
static const char *const job_properties[] = {
	"TrainingJobName",
	"TrainingJobArn",
	"TuningJobArn",
	"LabelingJobArn",
	"AutoMLJobArn",
	"ModelArtifacts",
	"TrainingJobStatus",
	"SecondaryStatus",
	"FailureReason",
	"HyperParameters",
	"AlgorithmSpecification",
	"RoleArn",
	"InputDataConfig",
	"OutputDataConfig",
	"ResourceConfig",
	"WarmPoolStatus",
	"VpcConfig",
	"StoppingCondition",
	"CreationTime",
	"TrainingStartTime",
	"TrainingEndTime",
	"LastModifiedTime",
	"SecondaryStatusTransitions",
	"FinalMetricDataList",
	"EnableNetworkIsolation",
	"EnableInterContainerTrafficEncryption",
	"EnableManagedSpotTraining",
	"CheckpointConfig",
	"TrainingTimeInSeconds",
	"BillableTimeInSeconds",
	"DebugHookConfig",
	"ExperimentConfig",
	"DebugRuleConfigurations",
	"TensorBoardOutputConfig",
	"DebugRuleEvaluationStatuses",
	"OutputModelPackageArn",
	"ModelPackageConfig",
	"ProfilerConfig",
	"Environment",
	"RetryStrategy",
	"Tags",
	"Metrics", /* Metrics.NAME: a final metric's value */
};

/* Properties whose next segment is a key of a map (any text). */
static const char *const keyed_properties[] = {
	"Tags", "HyperParameters", "Metrics", "Environment"
};

static const struct {
	const char *name;
	enum search_op op;
} operators[] = {
	{ "Equals", SEARCH_EQ },
	{ "NotEquals", SEARCH_NE },
	{ "GreaterThan", SEARCH_GT },
	{ "GreaterThanOrEqualTo", SEARCH_GE },
	{ "LessThan", SEARCH_LT },
	{ "LessThanOrEqualTo", SEARCH_LE },
	{ "Contains", SEARCH_CONTAINS },
	{ "Exists", SEARCH_EXISTS },
	{ "NotExists", SEARCH_NOT_EXISTS },
	{ "In", SEARCH_IN },
};

static int known_top(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(job_properties); i++)
		if (strlen(job_properties[i]) == len &&
		    !strncmp(job_properties[i], name, len))
			return 1;
	return 0;
}

static int keyed(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keyed_properties); i++)
		if (strlen(keyed_properties[i]) == len &&
		    !strncmp(keyed_properties[i], name, len))
			return 1;
	return 0;
}

static int segment_ok(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

/*
 * Whether name is a property of a TrainingJob: a member, a dotted path of
 * member names below one, or KEYED.KEY.
 */
static int property_ok(const char *name)
{
	const char *dot = strchr(name, '.');
	size_t top = dot ? (size_t)(dot - name) : strlen(name);
	const char *p;

	if (!known_top(name, top))
		return 0;
	if (keyed(name, top))
		return dot && dot[1]; /* the key itself is any text */
	if (!strncmp(name, "Metrics", top))
		return 0;
	for (p = dot; p; p = dot) {
		p++;
		dot = strchr(p, '.');
		if (!segment_ok(p, dot ? (size_t)(dot - p) : strlen(p)))
			return 0;
	}
	return 1;
}

struct parse {
	int terms;
	struct buf *err;
};

static int bad(struct parse *ps, const char *what, const char *name)
{
	(void)buf_addf(ps->err, "%s '%.255s'", what, name);
	return ERR_INVALID;
}

/* Whether a property holds a time (compared as epoch milliseconds). */
static int is_time(const char *name)
{
	const char *last = strrchr(name, '.');
	size_t n;

	last = last ? last + 1 : name;
	if (!strncmp(name, "Tags.", 5) || !strncmp(name, "Metrics.", 8) ||
	    !strncmp(name, "HyperParameters.", 16) ||
	    !strncmp(name, "Environment.", 12))
		return 0;
	n = strlen(last);
	return !strcmp(last, "Timestamp") ||
	       (n > 4 && !strcmp(last + n - 4, "Time"));
}

/*
 * Rewrites a time filter's value, ISO 8601 or epoch seconds, as epoch
 * milliseconds in decimal, the form db/ compares.
 */
static int time_value(struct parse *ps, struct search_filter *f)
{
	json_t *v;
	char *end;
	double secs = strtod(f->value, &end);
	int64_t ms;

	if (end != f->value && !*end) {
		v = json_real(secs);
	} else {
		v = json_string(f->value);
	}
	ms = v ? api__json_time_ms(v) : 0;
	json_decref(v);
	if (ms <= 0)
		return bad(ps,
			   "Value must be a time (ISO 8601 or epoch seconds) "
			   "for the filter on",
			   f->name);
	free(f->value);
	f->value = xmalloc(24);
	(void)snprintf(f->value, 24, "%lld", (long long)ms);
	return 0;
}

static int parse_filter(struct parse *ps, const json_t *f, const char *under,
			struct search_filter *out)
{
	const char *name = json_string_value(json_object_get(f, "Name"));
	const char *op = json_string_value(json_object_get(f, "Operator"));
	const json_t *value = json_object_get(f, "Value");
	size_t i;

	out->name = xstrdup(name);
	out->op = SEARCH_EQ;
	if (op) {
		for (i = 0; i < ARRAY_SIZE(operators); i++)
			if (!strcmp(op, operators[i].name))
				break;
		if (i == ARRAY_SIZE(operators))
			return bad(ps, "Unsupported search operator", op);
		out->op = operators[i].op;
	}
	if (!property_ok(name))
		return bad(ps,
			   "Invalid property name for resource TrainingJob:",
			   name);
	if (under && (strncmp(name, under, strlen(under)) ||
		      name[strlen(under)] != '.' || !name[strlen(under) + 1]))
		return bad(ps,
			   "A nested filter's property must be below its "
			   "NestedPropertyName:",
			   name);
	if (out->op == SEARCH_EXISTS || out->op == SEARCH_NOT_EXISTS) {
		if (value)
			return bad(ps,
				   "Operator Exists / NotExists takes no Value; "
				   "property",
				   name);
		return 0;
	}
	if (!value)
		return bad(ps, "A Value is required for the filter on", name);
	out->value = xstrdup(json_string_value(value));
	if (is_time(name) && out->op != SEARCH_IN && out->op != SEARCH_CONTAINS)
		return time_value(ps, out);
	return 0;
}

static int parse_filters(struct parse *ps, const json_t *arr, const char *under,
			 struct search_filter **out, size_t *n)
{
	size_t i;
	int ret = 0;

	if (!json_array_size(arr))
		return 0;
	*out = xcalloc(json_array_size(arr), sizeof(**out));
	for (i = 0; i < json_array_size(arr) && !ret; i++) {
		ret = parse_filter(ps, json_array_get(arr, i), under,
				   &(*out)[i]);
		*n = i + 1;
		ps->terms++;
	}
	return ret;
}

static int parse_expr(struct parse *ps, const json_t *e,
		      struct search_expr *out)
{
	const json_t *arr;
	const char *op = json_string_value(json_object_get(e, "Operator"));
	size_t i;
	int ret;

	out->any = op && !strcmp(op, "Or");
	ret = parse_filters(ps, json_object_get(e, "Filters"), NULL,
			    &out->filters, &out->n_filters);
	arr = json_object_get(e, "NestedFilters");
	if (!ret && json_array_size(arr)) {
		out->nested = xcalloc(json_array_size(arr),
				      sizeof(*out->nested));
		for (i = 0; i < json_array_size(arr) && !ret; i++) {
			const json_t *nf = json_array_get(arr, i);
			struct search_nested *n = &out->nested[i];
			const char *prop = json_string_value(
				json_object_get(nf, "NestedPropertyName"));

			out->n_nested = i + 1;
			ps->terms++;
			n->property = xstrdup(prop);
			if (!known_top(prop, strlen(prop)) ||
			    !strcmp(prop, "Metrics"))
				ret = bad(ps,
					  "Invalid NestedPropertyName for "
					  "resource TrainingJob:",
					  prop);
			if (!ret)
				ret = parse_filters(
					ps, json_object_get(nf, "Filters"),
					prop, &n->filters, &n->n_filters);
		}
	}
	arr = json_object_get(e, "SubExpressions");
	if (!ret && json_array_size(arr)) {
		out->subs = xcalloc(json_array_size(arr), sizeof(*out->subs));
		for (i = 0; i < json_array_size(arr) && !ret; i++) {
			out->n_subs = i + 1;
			ps->terms++;
			ret = parse_expr(ps, json_array_get(arr, i),
					 &out->subs[i]);
		}
	}
	if (!ret && !out->n_filters && !out->n_nested && !out->n_subs) {
		(void)buf_adds(ps->err,
			       "A SearchExpression needs at least one filter, "
			       "nested filter or subexpression");
		ret = ERR_INVALID;
	}
	if (!ret && ps->terms > SEARCH_MAX_TERMS) {
		(void)buf_addf(ps->err,
			       "A SearchExpression may hold at most %d "
			       "filters, nested filters and subexpressions "
			       "in all",
			       SEARCH_MAX_TERMS);
		ret = ERR_INVALID;
	}
	return ret;
}

int api_search_request_parse(const char *json, size_t len,
			     struct api_search_request *req, struct buf *err)
{
	struct parse ps = { 0, err };
	const char *s;
	json_t *root;
	json_t *v;
	int ret;

	memset(req, 0, sizeof(*req));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate("SearchRequest", root, err);
	if (ret)
		goto out;
	s = json_string_value(json_object_get(root, "Resource"));
	if (strcmp(s, "TrainingJob")) {
		(void)buf_addf(err,
			       "Search of resource %s is not supported by "
			       "this controller; only TrainingJob is",
			       s);
		ret = ERR_INVALID;
		goto out;
	}
	v = json_object_get(root, "VisibilityConditions");
	s = json_string_value(json_object_get(root, "CrossAccountFilterOption"));
	if (json_array_size(v) || (s && strcmp(s, "SameAccount"))) {
		(void)buf_adds(err,
			       "VisibilityConditions and cross-account "
			       "search are not supported: this controller "
			       "serves one account");
		ret = ERR_INVALID;
		goto out;
	}
	v = json_object_get(root, "SearchExpression");
	if (v) {
		req->expr = xcalloc(1, sizeof(*req->expr));
		ret = parse_expr(&ps, v, req->expr);
		if (ret)
			goto out;
	}
	s = json_string_value(json_object_get(root, "SortBy"));
	if (s && !property_ok(s)) {
		(void)buf_addf(err,
			       "Invalid SortBy property for resource "
			       "TrainingJob: '%.255s'",
			       s);
		ret = ERR_INVALID;
		goto out;
	}
	req->sort_by = xstrdup(s ? s : "LastModifiedTime");
	s = json_string_value(json_object_get(root, "SortOrder"));
	req->descending = !s || !strcmp(s, "Descending");
	v = json_object_get(root, "MaxResults");
	req->max_results = v ? (int)json_integer_value(v) : 10;
	s = json_string_value(json_object_get(root, "NextToken"));
	if (s)
		req->next_token = xstrdup(s);
out:
	json_decref(root);
	if (ret)
		api_search_request_release(req);
	return ret;
}

static void filters_free(struct search_filter *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].value);
	}
	free(f);
}

static void expr_release(struct search_expr *e)
{
	size_t i;

	filters_free(e->filters, e->n_filters);
	for (i = 0; i < e->n_nested; i++) {
		free(e->nested[i].property);
		filters_free(e->nested[i].filters, e->nested[i].n_filters);
	}
	free(e->nested);
	for (i = 0; i < e->n_subs; i++)
		expr_release(&e->subs[i]);
	free(e->subs);
}

void api_search_request_release(struct api_search_request *req)
{
	if (req->expr) {
		expr_release(req->expr);
		free(req->expr);
	}
	free(req->sort_by);
	free(req->next_token);
	memset(req, 0, sizeof(*req));
}

int api_search_record(const char *describe, size_t len, const char *tags_json,
		      struct buf *out)
{
	size_t start = out->len;
	int ret;

	if (len < 2 || describe[0] != '{' || describe[len - 1] != '}')
		return ERR_INVALID;
	ret = buf_adds(out, "{\"TrainingJob\":");
	if (!ret)
		ret = buf_add(out, describe, len - 1);
	if (!ret)
		ret = buf_addf(out, "%s\"Tags\":%s}}", len > 2 ? "," : "",
			       tags_json);
	if (ret) {
		out->len = start;
		out->data[start] = '\0';
	}
	return ret;
}
