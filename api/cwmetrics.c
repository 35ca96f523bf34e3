#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/cwmetrics.h"
#include "api/names.h"
#include "api/cwmetrics_wire.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define NAME_MAX_LEN 255
#define VALUE_MAX_LEN 1024
#define TOKEN_MAX_LEN 1024
#define LABEL_MAX_LEN 1024

#define E_VALUE "InvalidParameterValue"
#define E_MISSING "MissingParameter"
#define E_COMBINATION "InvalidParameterCombination"

static const char *const op_names[] = {
	[API_CWM_LIST_METRICS] = "ListMetrics",
	[API_CWM_GET_STATISTICS] = "GetMetricStatistics",
	[API_CWM_GET_DATA] = "GetMetricData",
};

static const char *const stat_names[API_CWM_N_STATS] = {
	[API_CWM_SAMPLE_COUNT] = "SampleCount",
	[API_CWM_AVERAGE] = "Average",
	[API_CWM_SUM] = "Sum",
	[API_CWM_MINIMUM] = "Minimum",
	[API_CWM_MAXIMUM] = "Maximum",
};

/* StandardUnit of the service model. */
static const char *const units[] = {
	"Seconds",
	"Microseconds",
	"Milliseconds",
	"Bytes",
	"Kilobytes",
	"Megabytes",
	"Gigabytes",
	"Terabytes",
	"Bits",
	"Kilobits",
	"Megabits",
	"Gigabits",
	"Terabits",
	"Percent",
	"Count",
	"Bytes/Second",
	"Kilobytes/Second",
	"Megabytes/Second",
	"Gigabytes/Second",
	"Terabytes/Second",
	"Bits/Second",
	"Kilobits/Second",
	"Megabits/Second",
	"Gigabits/Second",
	"Terabits/Second",
	"Count/Second",
	"None",
};

enum api_cwm_op api_cwm_op_of(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < API_CWM_OP_UNKNOWN; i++)
		if (strlen(op_names[i]) == len &&
		    !memcmp(op_names[i], name, len))
			return (enum api_cwm_op)i;
	return API_CWM_OP_UNKNOWN;
}

const char *api_cwm_op_name(enum api_cwm_op op)
{
	return op < API_CWM_OP_UNKNOWN ? op_names[op] : "unknown";
}

/* ------------------------------------------------------------- fields */

/* A parse in progress: the error code and message go here. */
struct parse {
	const char **code;
	struct buf *err;
};

static int fail(struct parse *p, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse *p, const char *code, const char *fmt, ...)
{
	va_list ap;

	*p->code = code;
	buf_reset(p->err);
	va_start(ap, fmt);
	(void)buf_vaddf(p->err, fmt, ap);
	va_end(ap);
	return ERR_INVALID;
}

/*
 * String member key of o into *out (a copy; NULL when absent and not
 * required), 1..max characters. what names it in messages.
 */
static int get_str(struct parse *p, json_t *o, const char *key,
		   const char *what, size_t max, int required, char **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	size_t n;

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return fail(p, E_MISSING,
				    "The parameter %s is required.", what);
		return 0;
	}
	if (!json_is_string(v))
		return fail(p, E_VALUE, "The parameter %s must be a string.",
			    what);
	n = json_string_length(v);
	if (n < 1 || n > max)
		return fail(p, E_VALUE,
			    "The parameter %s must be between 1 and %zu "
			    "characters long.",
			    what, max);
	if (memchr(json_string_value(v), '\0', n))
		return fail(p, E_VALUE,
			    "The parameter %s must not contain NUL.", what);
	*out = strdup(json_string_value(v));
	return *out ? 0 : ERR_NOMEM;
}

/* An integer member: a JSON integer, or digits (the query protocol). */
static int get_int(struct parse *p, json_t *o, const char *key,
		   const char *what, long long lo, long long hi, int required,
		   long long *out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	long long x;

	if (!v || json_is_null(v)) {
		if (required)
			return fail(p, E_MISSING,
				    "The parameter %s is required.", what);
		return 1; /* absent */
	}
	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;

		x = strtoll(s, &end, 10);
		if (!*s || *end || json_string_length(v) > 20)
			return fail(p, E_VALUE,
				    "The parameter %s must be an integer.",
				    what);
	} else {
		return fail(p, E_VALUE, "The parameter %s must be an integer.",
			    what);
	}
	if (x < lo || x > hi)
		return fail(p, E_VALUE,
			    "The parameter %s must be between %lld and %lld.",
			    what, lo, hi);
	*out = x;
	return 0;
}

/* A boolean member (true/false, or "true"/"false" from a form). */
static int get_bool(struct parse *p, json_t *o, const char *key,
		    const char *what, int dflt, int *out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (json_is_string(v) && !strcmp(json_string_value(v), "true")) {
		*out = 1;
		return 0;
	}
	if (json_is_string(v) && !strcmp(json_string_value(v), "false")) {
		*out = 0;
		return 0;
	}
	return fail(p, E_VALUE, "The parameter %s must be true or false.",
		    what);
}

/* A required timestamp: epoch seconds or ISO 8601. */
static int get_time(struct parse *p, json_t *o, const char *key, int64_t *out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	int64_t ms;

	if (!v || json_is_null(v))
		return fail(p, E_MISSING, "The parameter %s is required.", key);
	if (json_is_string(v) && json_string_length(v) > 64)
		return fail(p, E_VALUE, "The parameter %s is not a timestamp.",
			    key);
	ms = api__json_time_ms(v);
	if (ms == 0)
		return fail(p, E_VALUE,
			    "The parameter %s must be a timestamp (epoch "
			    "seconds or ISO 8601).",
			    key);
	*out = ms;
	return 0;
}

/* A list member (JSON array) of at most max items; NULL when absent. */
static int get_list(struct parse *p, json_t *o, const char *key,
		    const char *what, size_t max, json_t **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	/* The query protocol sends an empty list as "Name=". */
	if (!v || json_is_null(v) ||
	    (json_is_string(v) && !json_string_length(v)))
		return 0;
	if (!json_is_array(v))
		return fail(p, E_VALUE, "The parameter %s must be a list.",
			    what);
	if (json_array_size(v) > max)
		return fail(p, E_VALUE,
			    "The collection %s must not have a size greater "
			    "than %zu.",
			    what, max);
	*out = v;
	return 0;
}

static int is_unit(const char *s)
{
	return api__name_find(units, ARRAY_SIZE(units), s) >= 0;
}

static int get_unit(struct parse *p, json_t *o, const char *what, char **out)
{
	int ret = get_str(p, o, "Unit", what, 64, 0, out);

	if (!ret && *out && !is_unit(*out)) {
		ret = fail(p, E_VALUE,
			   "The parameter %s must be a standard unit "
			   "(Seconds, Count, Percent, None, ...).",
			   what);
		free(*out);
		*out = NULL;
	}
	return ret;
}

static int stat_of(const char *s)
{
	return (int)api__name_find(stat_names, API_CWM_N_STATS, s);
}

/*
 * A percentile statistic "pNN" or "pNN.NN" (0..100); 0 or ERR_INVALID.
 * The trimmed means and the other extended statistics are refused.
 */
static int percentile_of(struct parse *p, const char *s, double *out)
{
	char *end;
	double x;

	if (s[0] != 'p' || !isdigit((unsigned char)s[1]))
		return fail(p, E_VALUE,
			    "The statistic '%.64s' is not supported: use "
			    "SampleCount, Average, Sum, Minimum, Maximum or a "
			    "percentile pNN.NN.",
			    s);
	x = strtod(s + 1, &end);
	if (*end || !(x >= 0.0 && x <= 100.0) || strlen(s) > 7)
		return fail(p, E_VALUE,
			    "The percentile '%.64s' must be p0 .. p100 with at "
			    "most two decimals.",
			    s);
	*out = x;
	return 0;
}

static void dims_release(struct api_cwm_dim *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(d[i].name);
		free(d[i].value);
	}
}

/* Dimensions: a list of {Name, Value}; value_required for metrics. */
static int get_dims(struct parse *p, json_t *o, const char *what, size_t max,
		    int value_required, struct api_cwm_dim *out, size_t *n)
{
	json_t *list, *d;
	size_t i, j;
	int ret;

	*n = 0;
	ret = get_list(p, o, "Dimensions", what, max, &list);
	if (ret || !list)
		return ret;
	json_array_foreach(list, i, d)
	{
		if (!json_is_object(d)) {
			ret = fail(p, E_VALUE,
				   "The parameter %s.member.%zu must be a "
				   "structure.",
				   what, i + 1);
			break;
		}
		ret = get_str(p, d, "Name", "Dimensions.member.Name",
			      NAME_MAX_LEN, 1, &out[i].name);
		if (ret)
			break;
		ret = get_str(p, d, "Value", "Dimensions.member.Value",
			      VALUE_MAX_LEN, value_required, &out[i].value);
		if (ret) {
			free(out[i].name);
			break;
		}
		*n = i + 1;
		for (j = 0; j < i; j++)
			if (!strcmp(out[j].name, out[i].name)) {
				ret = fail(p, E_VALUE,
					   "No Metric may specify the same "
					   "dimension twice ('%.255s').",
					   out[i].name);
				break;
			}
		if (ret)
			break;
	}
	if (ret) {
		dims_release(out, *n);
		*n = 0;
	}
	return ret;
}

static void metric_release(struct api_cwm_metric *m)
{
	free(m->ns);
	free(m->name);
	dims_release(m->dims, m->n_dims);
	memset(m, 0, sizeof(*m));
}

static int get_metric(struct parse *p, json_t *o, struct api_cwm_metric *m)
{
	int ret;

	memset(m, 0, sizeof(*m));
	ret = get_str(p, o, "Namespace", "Namespace", NAME_MAX_LEN, 1, &m->ns);
	if (!ret)
		ret = get_str(p, o, "MetricName", "MetricName", NAME_MAX_LEN, 1,
			      &m->name);
	if (!ret)
		ret = get_dims(p, o, "Dimensions", API_CWM_MAX_DIMS, 1, m->dims,
			       &m->n_dims);
	if (ret)
		metric_release(m);
	return ret;
}

/*
 * The period: at least 1 second; the service takes 1, 5, 10, 20, 30 (high
 * resolution) or any multiple of 60.
 */
static int get_period(struct parse *p, json_t *o, const char *what, int *out)
{
	long long x = 0;
	int ret = get_int(p, o, "Period", what, -(1LL << 40), 1LL << 40, 1, &x);

	if (ret)
		return ret;
	if (x < 1)
		return fail(p, E_VALUE,
			    "The parameter %s must be greater than 0.", what);
	if (x != 1 && x != 5 && x != 10 && x != 20 && x != 30 && x % 60)
		return fail(p, E_VALUE,
			    "The parameter %s must be 1, 5, 10, 20, 30 or a "
			    "multiple of 60.",
			    what);
	if (x > 1LL << 31)
		return fail(p, E_VALUE, "The parameter %s is too large.", what);
	*out = (int)x;
	return 0;
}

/* The request as a JSON object, whichever protocol brought it. */
static int decode(enum api_cwm_proto proto, const char *body, size_t len,
		  json_t **out, struct parse *p)
{
	int ret;

	switch (proto) {
	case API_CWM_QUERY:
		ret = api__cwm_form_decode(body, len, out, p->err);
		break;
	case API_CWM_CBOR:
		ret = api__cwm_cbor_decode(body, len, out, p->err);
		break;
	default:
		ret = api__json_load_object(body, len, out, p->err);
		break;
	}
	if (ret)
		*p->code = E_VALUE;
	return ret;
}

int api_cwm_action(enum api_cwm_proto proto, const char *body, size_t len,
		   enum api_cwm_op *op, const char **code, struct buf *err)
{
	struct parse p = { code, err };
	json_t *root = NULL;
	char *action = NULL, *version = NULL;
	int ret;

	*op = API_CWM_OP_UNKNOWN;
	ret = decode(proto, body, len, &root, &p);
	if (!ret)
		ret = get_str(&p, root, "Action", "Action", 64, 1, &action);
	if (!ret)
		ret = get_str(&p, root, "Version", "Version", 64, 0, &version);
	if (!ret && version && strcmp(version, "2010-08-01"))
		ret = fail(&p, "InvalidAction",
			   "Version '%.64s' is not supported: use 2010-08-01.",
			   version);
	if (!ret) {
		*op = api_cwm_op_of(action, strlen(action));
		if (*op == API_CWM_OP_UNKNOWN)
			ret = fail(&p, "InvalidAction",
				   "The action %.64s is not valid for this "
				   "endpoint.",
				   action);
	}
	free(action);
	free(version);
	json_decref(root);
	return ret;
}

/* --------------------------------------------------------- ListMetrics */

void api_cwm_list_req_release(struct api_cwm_list_req *r)
{
	free(r->ns);
	free(r->metric);
	dims_release(r->dims, r->n_dims);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

/* Cross-account observability is not served: refused, never ignored. */
static int one_account(struct parse *p, const json_t *root)
{
	const json_t *v =
		root ? json_object_get(root, "IncludeLinkedAccounts") : NULL;

	if (v && (json_is_true(v) ||
		  (json_is_string(v) && !strcmp(json_string_value(v), "true"))))
		return fail(
			p, E_VALUE,
			"The parameter IncludeLinkedAccounts must be false: "
			"this controller serves one account.");
	if (root && json_object_get(root, "OwningAccount"))
		return fail(p, E_VALUE,
			    "The parameter OwningAccount is not supported: "
			    "this controller serves one account.");
	return 0;
}

int api_cwm_list_req_parse(enum api_cwm_proto proto, const char *body,
			   size_t len, struct api_cwm_list_req *r,
			   const char **code, struct buf *err)
{
	struct parse p = { code, err };
	json_t *root = NULL;
	char *active = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = decode(proto, body, len, &root, &p);
	if (!ret)
		ret = get_str(&p, root, "Namespace", "Namespace", NAME_MAX_LEN,
			      0, &r->ns);
	if (!ret)
		ret = get_str(&p, root, "MetricName", "MetricName",
			      NAME_MAX_LEN, 0, &r->metric);
	if (!ret)
		ret = get_dims(&p, root, "Dimensions", API_CWM_MAX_FILTERS, 0,
			       r->dims, &r->n_dims);
	if (!ret)
		ret = get_str(&p, root, "NextToken", "NextToken", TOKEN_MAX_LEN,
			      0, &r->next_token);
	if (!ret)
		ret = get_str(&p, root, "RecentlyActive", "RecentlyActive", 16,
			      0, &active);
	if (!ret && active) {
		if (strcmp(active, "PT3H"))
			ret = fail(&p, E_VALUE,
				   "The parameter RecentlyActive must be "
				   "PT3H.");
		r->recently_active = 1;
	}
	if (!ret)
		ret = one_account(&p, root);
	free(active);
	json_decref(root);
	if (ret)
		api_cwm_list_req_release(r);
	return ret;
}

/* ------------------------------------------------- GetMetricStatistics */

void api_cwm_stats_req_release(struct api_cwm_stats_req *r)
{
	size_t i;

	metric_release(&r->m);
	for (i = 0; i < r->n_ext; i++)
		free(r->ext[i]);
	free(r->unit);
	memset(r, 0, sizeof(*r));
}

static int get_stats(struct parse *p, json_t *root, struct api_cwm_stats_req *r)
{
	json_t *stats, *ext, *v;
	size_t i;
	int ret;

	ret = get_list(p, root, "Statistics", "Statistics", API_CWM_MAX_STATS,
		       &stats);
	if (!ret)
		ret = get_list(p, root, "ExtendedStatistics",
			       "ExtendedStatistics", API_CWM_MAX_EXT_STATS,
			       &ext);
	if (ret)
		return ret;
	if (stats && ext && json_array_size(stats) && json_array_size(ext))
		return fail(p, E_COMBINATION,
			    "The parameters Statistics and ExtendedStatistics "
			    "are mutually exclusive.");
	if (!json_array_size(stats) && !json_array_size(ext))
		return fail(p, E_MISSING,
			    "The parameter Statistics or ExtendedStatistics "
			    "must be specified.");
	json_array_foreach(stats, i, v)
	{
		int s = json_is_string(v) ? stat_of(json_string_value(v)) : -1;

		if (s < 0)
			return fail(p, E_VALUE,
				    "The parameter Statistics.member.%zu must "
				    "be one of SampleCount, Average, Sum, "
				    "Minimum, Maximum.",
				    i + 1);
		r->stats |= 1u << s;
	}
	json_array_foreach(ext, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) > 16)
			return fail(p, E_VALUE,
				    "The parameter ExtendedStatistics.member."
				    "%zu must be a percentile such as p90.",
				    i + 1);
		ret = percentile_of(p, json_string_value(v), &r->pct[i]);
		if (ret)
			return ret;
		r->ext[i] = strdup(json_string_value(v));
		if (!r->ext[i])
			return ERR_NOMEM;
		r->n_ext = i + 1;
	}
	return 0;
}

int api_cwm_stats_req_parse(enum api_cwm_proto proto, const char *body,
			    size_t len, struct api_cwm_stats_req *r,
			    const char **code, struct buf *err)
{
	struct parse p = { code, err };
	json_t *root = NULL;
	int64_t points;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = decode(proto, body, len, &root, &p);
	if (!ret)
		ret = get_metric(&p, root, &r->m);
	if (!ret)
		ret = get_time(&p, root, "StartTime", &r->start_ms);
	if (!ret)
		ret = get_time(&p, root, "EndTime", &r->end_ms);
	if (!ret)
		ret = get_period(&p, root, "Period", &r->period);
	if (!ret)
		ret = get_stats(&p, root, r);
	if (!ret)
		ret = get_unit(&p, root, "Unit", &r->unit);
	if (!ret && r->start_ms >= r->end_ms)
		ret = fail(&p, E_VALUE,
			   "The parameter StartTime must be less than the "
			   "parameter EndTime.");
	if (!ret) {
		points = (r->end_ms - r->start_ms + (int64_t)r->period * 1000 -
			  1) /
			 ((int64_t)r->period * 1000);
		if (points > API_CWM_MAX_DATAPOINTS)
			ret = fail(&p, E_COMBINATION,
				   "You have requested up to %lld datapoints, "
				   "which exceeds the limit of %d. You may "
				   "reduce the datapoints requested by "
				   "increasing Period, or decreasing the time "
				   "range.",
				   (long long)points, API_CWM_MAX_DATAPOINTS);
	}
	json_decref(root);
	if (ret)
		api_cwm_stats_req_release(r);
	return ret;
}

/* ------------------------------------------------------- GetMetricData */

static void query_release(struct api_cwm_query *q)
{
	free(q->id);
	free(q->label);
	metric_release(&q->m);
	free(q->unit);
}

void api_cwm_data_req_release(struct api_cwm_data_req *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		query_release(&r->q[i]);
	free(r->q);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

static int id_ok(const char *s)
{
	if (!(*s >= 'a' && *s <= 'z'))
		return 0;
	for (s++; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

static int get_query(struct parse *p, json_t *o, size_t idx,
		     struct api_cwm_query *q)
{
	json_t *ms, *metric;
	char *stat = NULL;
	int ret;

	if (!json_is_object(o))
		return fail(p, E_VALUE,
			    "The parameter MetricDataQueries.member.%zu must "
			    "be a structure.",
			    idx);
	ret = get_str(p, o, "Id", "MetricDataQueries.member.Id", NAME_MAX_LEN,
		      1, &q->id);
	if (!ret && !id_ok(q->id))
		ret = fail(p, E_VALUE,
			   "The value %.255s for parameter "
			   "MetricDataQueries.member.%zu.Id is not valid: it "
			   "must start with a lower-case letter and hold only "
			   "letters, digits and underscores.",
			   q->id, idx);
	if (!ret)
		ret = get_str(p, o, "Label", "MetricDataQueries.member.Label",
			      LABEL_MAX_LEN, 0, &q->label);
	if (!ret)
		ret = get_bool(p, o, "ReturnData",
			       "MetricDataQueries.member.ReturnData", 1,
			       &q->return_data);
	if (ret)
		return ret;
	ms = json_object_get(o, "MetricStat");
	if (json_object_get(o, "Expression")) {
		if (ms)
			return fail(p, E_COMBINATION,
				    "The parameters MetricDataQueries.member."
				    "%zu.MetricStat and MetricDataQueries."
				    "member.%zu.Expression are mutually "
				    "exclusive.",
				    idx, idx);
		return fail(p, E_VALUE,
			    "MetricDataQueries.member.%zu.Expression: metric "
			    "math and Metrics Insights expressions are not "
			    "supported by this service; use MetricStat.",
			    idx);
	}
	if (!ms)
		return fail(p, E_MISSING,
			    "The parameter MetricDataQueries.member.%zu."
			    "MetricStat is required.",
			    idx);
	if (!json_is_object(ms))
		return fail(p, E_VALUE,
			    "The parameter MetricDataQueries.member.%zu."
			    "MetricStat must be a structure.",
			    idx);
	metric = json_object_get(ms, "Metric");
	if (!metric)
		return fail(p, E_MISSING,
			    "The parameter MetricDataQueries.member.%zu."
			    "MetricStat.Metric is required.",
			    idx);
	ret = get_metric(p, metric, &q->m);
	if (!ret)
		ret = get_period(p, ms, "MetricStat.Period", &q->period);
	if (!ret)
		ret = get_str(p, ms, "Stat", "MetricStat.Stat", 64, 1, &stat);
	if (!ret) {
		q->stat = stat_of(stat);
		if (q->stat < 0)
			ret = percentile_of(p, stat, &q->pct);
	}
	if (!ret)
		ret = get_unit(p, ms, "MetricStat.Unit", &q->unit);
	free(stat);
	return ret;
}

static int get_queries(struct parse *p, json_t *root,
		       struct api_cwm_data_req *r)
{
	json_t *list, *o;
	size_t i, j;
	int ret;

	ret = get_list(p, root, "MetricDataQueries", "MetricDataQueries",
		       API_CWM_MAX_QUERIES, &list);
	if (ret)
		return ret;
	if (!json_array_size(list))
		return fail(p, E_MISSING,
			    "The parameter MetricDataQueries is required.");
	r->q = calloc(json_array_size(list), sizeof(*r->q));
	if (!r->q)
		return ERR_NOMEM;
	json_array_foreach(list, i, o)
	{
		r->n = i + 1;
		ret = get_query(p, o, i + 1, &r->q[i]);
		if (ret)
			return ret;
		for (j = 0; j < i; j++)
			if (!strcmp(r->q[j].id, r->q[i].id))
				return fail(p, E_VALUE,
					    "The values for parameter id in "
					    "MetricDataQueries are not "
					    "unique.");
	}
	return 0;
}

int api_cwm_data_req_parse(enum api_cwm_proto proto, const char *body,
			   size_t len, struct api_cwm_data_req *r,
			   const char **code, struct buf *err)
{
	struct parse p = { code, err };
	json_t *root = NULL, *opts;
	char *scan = NULL;
	long long maxdp = 100800;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = decode(proto, body, len, &root, &p);
	if (!ret)
		ret = get_queries(&p, root, r);
	if (!ret)
		ret = get_time(&p, root, "StartTime", &r->start_ms);
	if (!ret)
		ret = get_time(&p, root, "EndTime", &r->end_ms);
	if (!ret)
		ret = get_str(&p, root, "NextToken", "NextToken", TOKEN_MAX_LEN,
			      0, &r->next_token);
	if (!ret)
		ret = get_str(&p, root, "ScanBy", "ScanBy", 32, 0, &scan);
	if (!ret && scan && strcmp(scan, "TimestampDescending") &&
	    strcmp(scan, "TimestampAscending"))
		ret = fail(&p, E_VALUE,
			   "The parameter ScanBy must be TimestampDescending "
			   "or TimestampAscending.");
	r->ascending = scan && !strcmp(scan, "TimestampAscending");
	if (!ret && get_int(&p, root, "MaxDatapoints", "MaxDatapoints", 1,
			    100800, 0, &maxdp) < 0)
		ret = ERR_INVALID;
	r->max_datapoints = (long)maxdp;
	opts = root ? json_object_get(root, "LabelOptions") : NULL;
	if (!ret && opts && !json_is_object(opts))
		ret = fail(&p, E_VALUE,
			   "The parameter LabelOptions must be a structure.");
	if (!ret && opts && json_object_get(opts, "Timezone") &&
	    (!json_is_string(json_object_get(opts, "Timezone")) ||
	     strcmp(json_string_value(json_object_get(opts, "Timezone")),
		    "+0000")))
		ret = fail(&p, E_VALUE,
			   "The parameter LabelOptions.Timezone must be +0000: "
			   "labels carry no times here.");
	if (!ret && r->start_ms >= r->end_ms)
		ret = fail(&p, E_VALUE,
			   "The parameter StartTime must be less than the "
			   "parameter EndTime.");
	free(scan);
	json_decref(root);
	if (ret)
		api_cwm_data_req_release(r);
	return ret;
}

/* ------------------------------------------------------------ answers */

static json_t *metric_json(const struct api_cwm_listed *m)
{
	json_t *o = json_object(), *dims = json_array(), *d = json_object();

	json_object_set_new(o, "Namespace", json_string(m->ns));
	json_object_set_new(o, "MetricName", json_string(m->name));
	json_object_set_new(d, "Name", json_string(m->dim_name));
	json_object_set_new(d, "Value", json_string(m->dim_value));
	json_array_append_new(dims, d);
	json_object_set_new(o, "Dimensions", dims);
	return o;
}

static int emit(enum api_cwm_proto proto, enum api_cwm_op op, json_t *v,
		const char *rid, struct buf *out)
{
	int ret;

	switch (proto) {
	case API_CWM_QUERY:
		ret = api__cwm_xml_emit(api_cwm_op_name(op), v, rid, out);
		break;
	case API_CWM_CBOR:
		ret = api__cwm_cbor_emit(v, out);
		break;
	default:
		ret = api__json_dump_to(v, out);
		break;
	}
	json_decref(v);
	return ret;
}

int api_cwm_list_build(enum api_cwm_proto proto, const struct api_cwm_listed *m,
		       size_t n, const char *next_token, const char *rid,
		       struct buf *out)
{
	json_t *o = json_object(), *list = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(list, metric_json(&m[i]));
	json_object_set_new(o, "Metrics", list);
	if (next_token)
		json_object_set_new(o, "NextToken", json_string(next_token));
	return emit(proto, API_CWM_LIST_METRICS, o, rid, out);
}

int api_cwm_stats_build(enum api_cwm_proto proto,
			const struct api_cwm_stats_req *req,
			const struct api_cwm_datapoint *dp, size_t n,
			const char *rid, struct buf *out)
{
	json_t *o = json_object(), *list = json_array();
	size_t i, j;

	for (i = 0; i < n; i++) {
		json_t *d = json_object();

		json_object_set_new(d, "Timestamp",
				    api__json_time(dp[i].ts_ms));
		for (j = 0; j < API_CWM_N_STATS; j++)
			if (req->stats & (1u << j))
				json_object_set_new(d, stat_names[j],
						    json_real(dp[i].v[j]));
		if (req->n_ext) {
			json_t *ext = json_object();

			for (j = 0; j < req->n_ext; j++)
				json_object_set_new(ext, req->ext[j],
						    json_real(dp[i].ext[j]));
			json_object_set_new(d, "ExtendedStatistics", ext);
		}
		json_object_set_new(d, "Unit",
				    json_string(dp[i].unit ? dp[i].unit :
							     "None"));
		json_array_append_new(list, d);
	}
	json_object_set_new(o, "Label", json_string(req->m.name));
	json_object_set_new(o, "Datapoints", list);
	return emit(proto, API_CWM_GET_STATISTICS, o, rid, out);
}

int api_cwm_data_build(enum api_cwm_proto proto, const struct api_cwm_result *r,
		       size_t n, const char *next_token, const char *rid,
		       struct buf *out)
{
	json_t *o = json_object(), *list = json_array();
	size_t i, j;

	for (i = 0; i < n; i++) {
		json_t *q = json_object(), *ts = json_array(),
		       *vals = json_array();

		for (j = 0; j < r[i].n; j++) {
			json_array_append_new(ts,
					      api__json_time(r[i].ts_ms[j]));
			json_array_append_new(vals, json_real(r[i].values[j]));
		}
		json_object_set_new(q, "Id", json_string(r[i].id));
		json_object_set_new(q, "Label", json_string(r[i].label));
		json_object_set_new(q, "Timestamps", ts);
		json_object_set_new(q, "Values", vals);
		json_object_set_new(q, "StatusCode",
				    json_string(r[i].partial ? "PartialData" :
							       "Complete"));
		json_array_append_new(list, q);
	}
	json_object_set_new(o, "MetricDataResults", list);
	if (next_token)
		json_object_set_new(o, "NextToken", json_string(next_token));
	json_object_set_new(o, "Messages", json_array());
	return emit(proto, API_CWM_GET_DATA, o, rid, out);
}

/* The model's shape for an error code (awsQueryCompatible's __type). */
static const char *error_shape(const char *code)
{
	static const struct {
		const char *code, *shape;
	} shapes[] = {
		{ E_VALUE, "InvalidParameterValueException" },
		{ E_MISSING, "MissingRequiredParameterException" },
		{ E_COMBINATION, "InvalidParameterCombinationException" },
		{ "InvalidNextToken", "InvalidNextToken" },
		{ "InternalServiceError", "InternalServiceFault" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(shapes); i++)
		if (!strcmp(shapes[i].code, code))
			return shapes[i].shape;
	return code;
}

int api_cwm_error_build(enum api_cwm_proto proto, const char *code, int sender,
			const char *message, const char *rid, struct buf *out)
{
	json_t *o;
	int ret;

	if (proto == API_CWM_QUERY)
		return api__cwm_xml_error(code, sender, message, rid, out);
	o = json_object();
	if (proto == API_CWM_JSON) {
		struct buf t = BUF_INIT;

		(void)buf_addf(&t, "com.amazonaws.cloudwatch#%s",
			       error_shape(code));
		json_object_set_new(o, "__type", json_string(t.data));
		buf_release(&t);
	} else {
		json_object_set_new(o, "__type",
				    json_string(error_shape(code)));
	}
	json_object_set_new(o, "message",
			    json_stringn(message, strnlen(message, 4096)));
	if (proto == API_CWM_CBOR)
		ret = api__cwm_cbor_emit(o, out);
	else
		ret = api__json_dump_to(o, out);
	json_decref(o);
	return ret;
}

char *api_cwm_json_error_message(const char *json, size_t len)
{
	json_t *root = json_loadb(json, len, 0, NULL);
	json_t *m = root ? json_object_get(root, "message") : NULL;
	char *out = json_is_string(m) ? strdup(json_string_value(m)) : NULL;

	json_decref(root);
	return out;
}

const char *api_cwm_content_type(enum api_cwm_proto proto)
{
	switch (proto) {
	case API_CWM_QUERY:
		return "text/xml";
	case API_CWM_CBOR:
		return "application/cbor";
	default:
		return "application/x-amz-json-1.0";
	}
}
