#define LOG_TAG "cwmetrics"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "api/cwmetrics.h"
#include "controller/ctrl.h"
#include "controller/obs/cwmetrics.h"
#include "controller/caller.h"
#include "controller/reply.h"
#include "db/db.h"
#include "db/run.h"
#include "db/telemetry.h"
#include "common/hex.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define LIST_PAGE 500 /* ListMetrics answers 500 metrics a page */
#define TOKEN_PREFIX "cwm1:"
#define FORM_TYPE "application/x-www-form-urlencoded"

int ctrl_cwm_proto(const char *method, const char *url, const char *target,
		   const char *content_type)
{
	if (target)
		return strncmp(target, API_CWM_TARGET_PREFIX,
			       strlen(API_CWM_TARGET_PREFIX)) ?
			       -1 :
			       API_CWM_JSON;
	if (!strncmp(url, API_CWM_CBOR_PREFIX, strlen(API_CWM_CBOR_PREFIX)))
		return API_CWM_CBOR;
	if (!strcmp(method, "POST") && !strcmp(url, "/") && content_type &&
	    !strncasecmp(content_type, FORM_TYPE, strlen(FORM_TYPE)))
		return API_CWM_QUERY;
	return -1;
}

/* ------------------------------------------------------------ replies */

/* A request id in UUID form for the XML's ResponseMetadata. */
static void request_id(char out[37])
{
	unsigned char b[16];

	if (RAND_bytes(b, sizeof(b)) != 1)
		memset(b, 0, sizeof(b));
	hex_uuid(b, out);
}

/* x-amzn-query-error for the codes this service answers (static text). */
static const char *query_error(const char *code, int sender)
{
	static const char *const known[] = {
		"InvalidParameterValue;Sender",
		"MissingParameter;Sender",
		"InvalidParameterCombination;Sender",
		"InvalidNextToken;Sender",
		"InvalidAction;Sender",
		"InternalServiceError;Receiver",
	};
	size_t i, n = strlen(code);

	for (i = 0; i < ARRAY_SIZE(known); i++)
		if (!strncmp(known[i], code, n) && known[i][n] == ';' &&
		    !strcmp(known[i] + n + 1, sender ? "Sender" : "Receiver"))
			return known[i];
	return NULL;
}

static void reply_error(struct ctrl_response *resp, int proto, const char *code,
			int sender, const char *message)
{
	char rid[37];

	if (!code) { /* a parser ran out of memory */
		code = "InternalServiceError";
		sender = 0;
	}
	request_id(rid);
	resp->status = sender ? 400 : 500;
	resp->error_type = code;
	resp->query_error = proto == API_CWM_QUERY ? NULL :
						     query_error(code, sender);
	buf_reset(&resp->body);
	if (api_cwm_error_build(proto, code, sender, message, rid, &resp->body))
		log_warn("error answer cut short");
}

/* A lower layer's failure (the store): InternalServiceError. */
static void reply_internal(struct ctrl_response *resp, int proto,
			   const char *what, const struct buf *err)
{
	log_error("%s: %s", what, err->data);
	reply_error(resp, proto, "InternalServiceError", 0,
		    "The service could not read the metrics; try again.");
}

static void reply_built(struct ctrl_response *resp, int proto, int ret)
{
	if (ret) {
		struct buf e = BUF_INIT;

		(void)buf_adds(&e, "answer too large");
		reply_internal(resp, proto, "answer", &e);
		buf_release(&e);
		return;
	}
	resp->status = 200;
}

void ctrl_cwm_wrap_error(int proto, struct ctrl_response *resp,
			 const char **content_type)
{
	char *msg = api_cwm_json_error_message(resp->body.data, resp->body.len);
	const char *type = resp->error_type ? resp->error_type :
					      "InternalFailure";
	int status = resp->status ? resp->status : 500;

	reply_error(resp, proto, type, status < 500,
		    msg ? msg : "request refused");
	resp->status = status;
	*content_type = api_cwm_content_type(proto);
	free(msg);
}

/* ------------------------------------------------------------- access */

/*
 * Whether the caller may read job's metrics: the job exists under exactly
 * that name and the caller sees it. Like CloudWatch, a metric nobody may
 * read simply has no data.
 */
static int job_readable(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			const char *name)
{
	struct buf err = BUF_INIT;
	struct db_job job;
	int ok = 0;

	if (!db_job_get(ctx->db, name, &job, &err)) {
		ok = !strcmp(job.name, name);
		db_job_release(&job);
	}
	buf_reset(&err);
	if (ok && ctrl_caller_check_job(ctx, who, name, &err))
		ok = 0;
	buf_release(&err);
	return ok;
}

/* The job a metric names, when it is one of ours (NULL: no data). */
static const char *metric_job(const struct api_cwm_metric *m)
{
	if (strcmp(m->ns, CTRL_CWM_NAMESPACE) || m->n_dims != 1 ||
	    strcmp(m->dims[0].name, CTRL_CWM_DIMENSION))
		return NULL;
	return m->dims[0].value;
}

/*
 * SageMaker's host metrics, each a figure of a job row (db/telemetry.h),
 * as SageMaker publishes them: CPU and GPU figures summed over the cores
 * and GPUs (0..100 times their number), the others 0..100.
 */
enum host_metric {
	HM_CPU,
	HM_MEMORY,
	HM_DISK,
	HM_GPU,
	HM_GPU_MEMORY,
	HM_COUNT
};

static const char *const host_metrics[HM_COUNT] = {
	"CPUUtilization", "MemoryUtilization",	  "DiskUtilization",
	"GPUUtilization", "GPUMemoryUtilization",
};

#define HOST_UNIT "Percent"

static double host_value(const struct db_tm_point *p, int which)
{
	switch (which) {
	case HM_CPU:
		return p->cores_percent;
	case HM_MEMORY:
		return p->mem_percent;
	case HM_DISK:
		return p->disk_percent;
	case HM_GPU:
		return p->gpu_percent;
	default:
		return p->gpu_mem_percent;
	}
}

/*
 * Whether m is a host metric of ours: its index, with the job and algo of
 * its Host dimension ("<job>/algo-N") copied into job and algo; else -1.
 */
static int host_metric(const struct api_cwm_metric *m, struct buf *job,
		       struct buf *algo)
{
	const char *slash;
	int i;

	if (strcmp(m->ns, CTRL_CWM_NAMESPACE) || m->n_dims != 1 ||
	    strcmp(m->dims[0].name, CTRL_CWM_HOST_DIMENSION))
		return -1;
	slash = strrchr(m->dims[0].value, '/');
	if (!slash || slash == m->dims[0].value || strncmp(slash, "/algo-", 6))
		return -1;
	for (i = 0; i < HM_COUNT; i++)
		if (!strcmp(m->name, host_metrics[i]))
			break;
	if (i == HM_COUNT)
		return -1;
	buf_reset(job);
	buf_reset(algo);
	if (buf_add(job, m->dims[0].value,
		    (size_t)(slash - m->dims[0].value)) ||
	    buf_adds(algo, slash + 1))
		return -1;
	return i;
}

/* The uid of the job named exactly name (NULL: none; caller frees). */
static char *job_uid(struct ctrl_ctx *ctx, const char *name)
{
	struct buf err = BUF_INIT;
	struct db_job job;
	char *uid = NULL;

	if (!db_job_get(ctx->db, name, &job, &err)) {
		if (job.uid && !strcmp(job.name, name))
			uid = xstrdup(job.uid);
		db_job_release(&job);
	}
	buf_release(&err);
	return uid;
}

/* ------------------------------------------------------------- points */

struct pt {
	int64_t ts_ms;
	double v;
};

/* load_points() for a host metric (none when m is not one). */
static int load_host_points(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			    const struct api_cwm_metric *m, const char *unit,
			    int64_t start_ms, int64_t end_ms, struct pt **out,
			    size_t *n, struct buf *err)
{
	struct buf job = BUF_INIT, algo = BUF_INIT;
	struct db_tm_point *pts = NULL;
	size_t n_pts = 0, i;
	char *uid = NULL;
	int which = host_metric(m, &job, &algo), ret = 0;

	if (which < 0 || !ctx->tm_db || (unit && strcmp(unit, HOST_UNIT)) ||
	    !job_readable(ctx, who, job.data))
		goto out;
	uid = job_uid(ctx, job.data);
	ret = db_tm_job_range(ctx->tm_db, job.data, uid, algo.data, start_ms,
			      end_ms, &pts, &n_pts, err);
	if (ret)
		goto out;
	*out = xcalloc(n_pts + 1, sizeof(**out));
	for (i = 0; i < n_pts; i++) {
		(*out)[i].ts_ms = pts[i].ts_ms;
		(*out)[i].v = host_value(&pts[i], which);
	}
	*n = n_pts;
out:
	db_tm_points_free(pts, n_pts);
	free(uid);
	buf_release(&job);
	buf_release(&algo);
	return ret;
}

/* The unit of m's datapoints (static text). */
static const char *unit_of(const struct api_cwm_metric *m)
{
	return strcmp(m->n_dims == 1 ? m->dims[0].name : "",
		      CTRL_CWM_HOST_DIMENSION) ?
		       "None" :
		       HOST_UNIT;
}

/*
 * The points of metric m in [start, end) in time order into *out (caller
 * frees), none when the metric is not ours, not readable or has another
 * unit. Returns 0 or ERR_DB (err set).
 */
static int load_points(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const struct api_cwm_metric *m, const char *unit,
		       int64_t start_ms, int64_t end_ms, struct pt **out,
		       size_t *n, struct buf *err)
{
	const char *job = metric_job(m);
	struct db_metric *pts = NULL;
	size_t n_pts = 0, i;
	int ret;

	*out = NULL;
	*n = 0;
	if (!job)
		return load_host_points(ctx, who, m, unit, start_ms, end_ms,
					out, n, err);
	/* Training metrics carry no unit: they are Unit None. */
	if ((unit && strcmp(unit, "None")) || !job_readable(ctx, who, job))
		return 0;
	ret = db_metric_range(ctx->db, job, m->name, start_ms, end_ms, &pts,
			      &n_pts, err);
	if (ret)
		return ret;
	*out = xcalloc(n_pts + 1, sizeof(**out));
	for (i = 0; i < n_pts; i++) {
		if (isfinite(pts[i].value)) {
			(*out)[*n].ts_ms = pts[i].timestamp_ms;
			(*out)[*n].v = pts[i].value;
			(*n)++;
		}
	}
	free(pts);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The percentile pct of sorted v[0..n) (nearest rank). */
static double percentile(const double *v, size_t n, double pct)
{
	double rank = ceil(pct / 100.0 * (double)n);
	size_t i = rank < 1.0 ? 0 : (size_t)rank - 1;

	return v[i < n ? i : n - 1];
}

/* Statistic stat (or percentile pct when stat < 0) of sorted v[0..n). */
static double stat_of(const double *v, size_t n, int stat, double pct)
{
	double sum = 0.0;
	size_t i;

	switch (stat) {
	case API_CWM_SAMPLE_COUNT:
		return (double)n;
	case API_CWM_MINIMUM:
		return v[0];
	case API_CWM_MAXIMUM:
		return v[n - 1];
	case API_CWM_SUM:
	case API_CWM_AVERAGE:
		for (i = 0; i < n; i++)
			sum += v[i];
		return stat == API_CWM_SUM ? sum : sum / (double)n;
	default:
		return percentile(v, n, pct);
	}
}

/*
 * Calls fn for each period (epoch-aligned, period_s long) holding points,
 * in time order, with the period's start and its values sorted.
 */
typedef void period_fn(void *arg, int64_t ts_ms, const double *v, size_t n);

static void each_period(const struct pt *p, size_t n, int period_s,
			period_fn *fn, void *arg)
{
	int64_t len = (int64_t)period_s * 1000;
	double *v = xcalloc(n + 1, sizeof(*v));
	size_t i = 0, k;

	while (i < n) {
		int64_t start = p[i].ts_ms - ((p[i].ts_ms % len) + len) % len;

		for (k = 0; i < n && p[i].ts_ms < start + len; i++)
			v[k++] = p[i].v;
		qsort(v, k, sizeof(*v), cmp_double);
		fn(arg, start, v, k);
	}
	free(v);
}

/*
 * StartTime as CloudWatch uses it: rounded down to the minute when less
 * than 15 days ago (to the period's division of a minute for periods
 * under 60 seconds), to 5 minutes up to 63 days, to the hour beyond.
 */
static int64_t round_start(int64_t start_ms, int period, int64_t now_ms)
{
	int64_t age = now_ms - start_ms;
	int64_t unit = period < 60 ? (int64_t)period * 1000 : 60000;

	if (age > 63LL * 86400000)
		unit = 3600000;
	else if (age > 15LL * 86400000)
		unit = 300000;
	return start_ms - ((start_ms % unit) + unit) % unit;
}

/* Parses a pagination token: 0 and *off, or -1. */
static int token_offset(const char *tok, size_t *off)
{
	char *end;
	unsigned long long x;

	if (strncmp(tok, TOKEN_PREFIX, strlen(TOKEN_PREFIX)))
		return -1;
	tok += strlen(TOKEN_PREFIX);
	if (*tok < '0' || *tok > '9')
		return -1;
	x = strtoull(tok, &end, 10);
	if (*end || x > (1ULL << 40))
		return -1;
	*off = (size_t)x;
	return 0;
}

static char *token_make(size_t off)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, TOKEN_PREFIX "%zu", off);
	return buf_detach(&b, NULL);
}

/* --------------------------------------------------------- ListMetrics */

struct listed {
	char *job; /* the dimension's value */
	char *name;
	const char *dim; /* static text */
};

struct listed_list {
	struct listed *items;
	size_t n, cap;
};

static int by_job_name(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;
	int c = strcmp(x->job, y->job);

	c = c ? c : strcmp(x->dim, y->dim);
	return c ? c : strcmp(x->name, y->name);
}

/*
 * Which dimensions a ListMetrics filter admits: bit 0 TrainingJobName,
 * bit 1 Host; *job and *host are the values asked for, if any.
 */
static unsigned dims_wanted(const struct api_cwm_list_req *r, const char **job,
			    const char **host)
{
	unsigned want = 3;
	size_t i;

	*job = NULL;
	*host = NULL;
	for (i = 0; i < r->n_dims; i++) {
		if (!strcmp(r->dims[i].name, CTRL_CWM_DIMENSION)) {
			want &= 1;
			if (r->dims[i].value)
				*job = r->dims[i].value;
		} else if (!strcmp(r->dims[i].name, CTRL_CWM_HOST_DIMENSION)) {
			want &= 2;
			if (r->dims[i].value)
				*host = r->dims[i].value;
		} else {
			want = 0; /* no metric has that dimension */
		}
	}
	return want;
}

/*
 * Adds the host metrics of job that pass the request's filters; uid NULL:
 * the job's, looked up when it has rows.
 */
static int add_host_metrics(struct ctrl_ctx *ctx, const char *job,
			    const char *uid, const struct api_cwm_list_req *r,
			    int64_t now_ms, struct listed_list *l,
			    struct buf *err)
{
	const char *want_job, *want_host;
	int64_t *last = NULL;
	char **algos = NULL;
	struct buf value = BUF_INIT;
	size_t n = 0, i;
	int k, ret;

	if (!ctx->tm_db || !(dims_wanted(r, &want_job, &want_host) & 2))
		return 0;
	ret = db_tm_job_algos(ctx->tm_db, job, uid, &algos, &last, &n, err);
	if (!ret && n && !uid) {
		/* Rows of this name: only the current job's count, not
		 * those of a deleted one of the same name. */
		char *cur = job_uid(ctx, job);

		for (i = 0; i < n; i++)
			free(algos[i]);
		free(algos);
		free(last);
		ret = db_tm_job_algos(ctx->tm_db, job, cur ? cur : "", &algos,
				      &last, &n, err);
		free(cur);
	}
	for (i = 0; !ret && i < n; i++) {
		if (r->recently_active && last[i] < now_ms - 3 * 3600 * 1000)
			continue;
		buf_reset(&value);
		(void)buf_addf(&value, "%s/%s", job, algos[i]);
		if (want_host && strcmp(want_host, value.data))
			continue;
		for (k = 0; k < HM_COUNT; k++) {
			if (r->metric && strcmp(r->metric, host_metrics[k]))
				continue;
			ALLOC_GROW(l->items, l->n + 1, l->cap);
			l->items[l->n].job = xstrdup(value.data);
			l->items[l->n].name = xstrdup(host_metrics[k]);
			l->items[l->n].dim = CTRL_CWM_HOST_DIMENSION;
			l->n++;
		}
	}
	for (i = 0; i < n; i++)
		free(algos[i]);
	free(algos);
	free(last);
	buf_release(&value);
	return ret;
}

/* Adds the metrics of job (of uid) that pass the request's filters. */
static int add_job_metrics(struct ctrl_ctx *ctx, const char *job,
			   const char *uid, const struct api_cwm_list_req *r,
			   int64_t now_ms, struct listed_list *l,
			   struct buf *err)
{
	const char *want_job, *want_host;
	struct db_metric *pts = NULL;
	size_t n = 0, i;
	int ret;

	if (!(dims_wanted(r, &want_job, &want_host) & 1))
		return add_host_metrics(ctx, job, uid, r, now_ms, l, err);
	ret = db_metric_names(ctx->db, job, r->metric, &pts, &n, err);

	/* One entry per series, with the time of its newest point. */
	for (i = 0; !ret && i < n; i++) {
		if (r->recently_active &&
		    pts[i].timestamp_ms < now_ms - 3 * 3600 * 1000)
			continue;
		ALLOC_GROW(l->items, l->n + 1, l->cap);
		l->items[l->n].job = xstrdup(job);
		l->items[l->n].name = xstrdup(pts[i].name);
		l->items[l->n].dim = CTRL_CWM_DIMENSION;
		l->n++;
	}
	for (i = 0; i < n; i++)
		free(pts[i].name);
	free(pts);
	return ret ? ret : add_host_metrics(ctx, job, uid, r, now_ms, l, err);
}

/* Every metric the caller may read that passes the filters, sorted. */
static int collect_metrics(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const struct api_cwm_list_req *r,
			   struct listed_list *l, struct buf *err)
{
	struct db_list_query q = { 0 };
	const char *job = NULL, *host = NULL;
	struct buf host_job = BUF_INIT;
	int64_t now = time_now_ms();
	char *token = NULL;
	size_t i;
	int ret = 0;

	if (r->ns && strcmp(r->ns, CTRL_CWM_NAMESPACE))
		return 0;
	if (!dims_wanted(r, &job, &host))
		return 0;
	/* A Host value names its job: "<job>/algo-N". */
	if (!job && host && strrchr(host, '/')) {
		(void)buf_add(&host_job, host,
			      (size_t)(strrchr(host, '/') - host));
		job = host_job.data;
	}
	if (job) {
		if (job_readable(ctx, who, job)) {
			char *uid = job_uid(ctx, job);

			ret = add_job_metrics(ctx, job, uid, r, now, l, err);
			free(uid);
		}
		goto out;
	}
	q.limit = 1000;
	q.owner = who->admin ? NULL : who->owner;
	do {
		struct db_job *jobs = NULL;
		char *next = NULL;
		size_t n = 0;

		q.token = token;
		ret = db_job_list(ctx->db, &q, &jobs, &n, &next, err);
		for (i = 0; i < n; i++) {
			if (!ret)
				ret = add_job_metrics(ctx, jobs[i].name,
						      jobs[i].uid, r, now, l,
						      err);
			db_job_release(&jobs[i]);
		}
		free(jobs);
		free(token);
		token = next;
	} while (token && !ret);
	free(token);
out:
	if (!ret && l->n > 1)
		qsort(l->items, l->n, sizeof(*l->items), by_job_name);
	buf_release(&host_job);
	return ret;
}

static void op_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    int proto, const char *body, size_t len,
		    struct ctrl_response *resp)
{
	struct api_cwm_list_req r;
	struct listed_list l = { 0 };
	struct api_cwm_listed *out = NULL;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	char *next = NULL;
	size_t off = 0, i, n;
	char rid[37];

	if (api_cwm_list_req_parse(proto, body, len, &r, &code, &err)) {
		reply_error(resp, proto, code, 1, err.data);
		buf_release(&err);
		return;
	}
	if (r.next_token && token_offset(r.next_token, &off)) {
		reply_error(resp, proto, "InvalidNextToken", 1,
			    "The service cannot use the given NextToken.");
		goto out;
	}
	if (collect_metrics(ctx, who, &r, &l, &err)) {
		reply_internal(resp, proto, "ListMetrics", &err);
		goto out;
	}
	if (off > l.n) {
		reply_error(resp, proto, "InvalidNextToken", 1,
			    "The service cannot use the given NextToken.");
		goto out;
	}
	n = l.n - off < LIST_PAGE ? l.n - off : LIST_PAGE;
	out = xcalloc(n + 1, sizeof(*out));
	for (i = 0; i < n; i++) {
		out[i].ns = CTRL_CWM_NAMESPACE;
		out[i].name = l.items[off + i].name;
		out[i].dim_name = l.items[off + i].dim;
		out[i].dim_value = l.items[off + i].job;
	}
	if (off + n < l.n)
		next = token_make(off + n);
	request_id(rid);
	reply_built(resp, proto,
		    api_cwm_list_build(proto, out, n, next, rid, &resp->body));
out:
	for (i = 0; i < l.n; i++) {
		free(l.items[i].job);
		free(l.items[i].name);
	}
	free(l.items);
	free(out);
	free(next);
	api_cwm_list_req_release(&r);
	buf_release(&err);
}

/* ------------------------------------------------- GetMetricStatistics */

struct stats_acc {
	const struct api_cwm_stats_req *r;
	struct api_cwm_datapoint *dp;
	size_t n;
};

static void stats_period(void *arg, int64_t ts_ms, const double *v, size_t n)
{
	struct stats_acc *a = arg;
	struct api_cwm_datapoint *d = &a->dp[a->n++];
	size_t i;

	d->ts_ms = ts_ms;
	d->unit = unit_of(&a->r->m);
	for (i = 0; i < API_CWM_N_STATS; i++)
		d->v[i] = stat_of(v, n, (int)i, 0.0);
	for (i = 0; i < a->r->n_ext; i++)
		d->ext[i] = percentile(v, n, a->r->pct[i]);
}

static void op_stats(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     int proto, const char *body, size_t len,
		     struct ctrl_response *resp)
{
	struct api_cwm_stats_req r;
	struct stats_acc acc = { 0 };
	struct buf err = BUF_INIT;
	const char *code = NULL;
	struct pt *pts = NULL;
	size_t n = 0;
	char rid[37];

	if (api_cwm_stats_req_parse(proto, body, len, &r, &code, &err)) {
		reply_error(resp, proto, code, 1, err.data);
		buf_release(&err);
		return;
	}
	if (load_points(ctx, who, &r.m, r.unit,
			round_start(r.start_ms, r.period, time_now_ms()),
			r.end_ms, &pts, &n, &err)) {
		reply_internal(resp, proto, "GetMetricStatistics", &err);
		goto out;
	}
	acc.r = &r;
	acc.dp = xcalloc(n + 1, sizeof(*acc.dp));
	each_period(pts, n, r.period, stats_period, &acc);
	request_id(rid);
	reply_built(resp, proto,
		    api_cwm_stats_build(proto, &r, acc.dp, acc.n, rid,
					&resp->body));
out:
	free(acc.dp);
	free(pts);
	api_cwm_stats_req_release(&r);
	buf_release(&err);
}

/* ------------------------------------------------------- GetMetricData */

/* One query's answer before paging, in the order asked for. */
struct series {
	int64_t *ts;
	double *v;
	size_t n;
};

struct series_acc {
	const struct api_cwm_query *q;
	struct series *s;
};

static void data_period(void *arg, int64_t ts_ms, const double *v, size_t n)
{
	struct series_acc *a = arg;

	a->s->ts[a->s->n] = ts_ms;
	a->s->v[a->s->n] = stat_of(v, n, a->q->stat, a->q->pct);
	a->s->n++;
}

static int query_series(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			const struct api_cwm_data_req *r,
			const struct api_cwm_query *q, struct series *s,
			struct buf *err)
{
	struct series_acc acc = { q, s };
	struct pt *pts = NULL;
	size_t n = 0, i;
	int ret;

	ret = load_points(ctx, who, &q->m, q->unit,
			  round_start(r->start_ms, q->period, time_now_ms()),
			  r->end_ms, &pts, &n, err);
	s->ts = xcalloc(n + 1, sizeof(*s->ts));
	s->v = xcalloc(n + 1, sizeof(*s->v));
	s->n = 0;
	if (!ret)
		each_period(pts, n, q->period, data_period, &acc);
	free(pts);
	if (!r->ascending) {
		for (i = 0; i < s->n / 2; i++) {
			int64_t t = s->ts[i];
			double v = s->v[i];

			s->ts[i] = s->ts[s->n - 1 - i];
			s->v[i] = s->v[s->n - 1 - i];
			s->ts[s->n - 1 - i] = t;
			s->v[s->n - 1 - i] = v;
		}
	}
	return ret;
}

static void op_data(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    int proto, const char *body, size_t len,
		    struct ctrl_response *resp)
{
	struct api_cwm_data_req r;
	struct api_cwm_result *res = NULL;
	struct series *s = NULL;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	size_t off = 0, total = 0, pos = 0, end, i, nres = 0;
	char *next = NULL;
	char rid[37];
	int ret = 0;

	if (api_cwm_data_req_parse(proto, body, len, &r, &code, &err)) {
		reply_error(resp, proto, code, 1, err.data);
		buf_release(&err);
		return;
	}
	if (r.next_token && token_offset(r.next_token, &off)) {
		reply_error(resp, proto, "InvalidNextToken", 1,
			    "The service cannot use the given NextToken.");
		goto out;
	}
	s = xcalloc(r.n, sizeof(*s));
	for (i = 0; !ret && i < r.n; i++) {
		if (!r.q[i].return_data)
			continue;
		ret = query_series(ctx, who, &r, &r.q[i], &s[i], &err);
		total += s[i].n;
	}
	if (ret) {
		reply_internal(resp, proto, "GetMetricData", &err);
		goto out;
	}
	if (off > total) {
		reply_error(resp, proto, "InvalidNextToken", 1,
			    "The service cannot use the given NextToken.");
		goto out;
	}
	/* A page holds the points off .. off+MaxDatapoints of all the
	 * queries' points laid end to end. */
	end = total - off < (size_t)r.max_datapoints ?
		      total :
		      off + (size_t)r.max_datapoints;
	res = xcalloc(r.n, sizeof(*res));
	for (i = 0; i < r.n; i++) {
		size_t a, b;

		if (!r.q[i].return_data)
			continue;
		a = pos > off ? pos : off;
		b = pos + s[i].n < end ? pos + s[i].n : end;
		if (b < a)
			b = a;
		res[nres].id = r.q[i].id;
		res[nres].label = r.q[i].label ? r.q[i].label : r.q[i].m.name;
		res[nres].ts_ms = s[i].ts + (a - pos < s[i].n ? a - pos : 0);
		res[nres].values = s[i].v + (a - pos < s[i].n ? a - pos : 0);
		res[nres].n = a < pos + s[i].n ? b - a : 0;
		res[nres].partial = pos + s[i].n > end;
		nres++;
		pos += s[i].n;
	}
	if (end < total)
		next = token_make(end);
	request_id(rid);
	reply_built(resp, proto,
		    api_cwm_data_build(proto, res, nres, next, rid,
				       &resp->body));
out:
	for (i = 0; s && i < r.n; i++) {
		free(s[i].ts);
		free(s[i].v);
	}
	free(s);
	free(res);
	free(next);
	api_cwm_data_req_release(&r);
	buf_release(&err);
}

/* ------------------------------------------------------------ serving */

void ctrl_cwm_serve(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    int proto, const char *method, const char *url,
		    const char *target, const char *body, size_t len,
		    struct ctrl_response *resp, const char **content_type)
{
	enum api_cwm_op op = API_CWM_OP_UNKNOWN;
	struct buf err = BUF_INIT;
	const char *code = NULL;
	const char *name;

	*content_type = api_cwm_content_type(proto);
	if (strcmp(method, "POST")) {
		reply_error(resp, proto, "InvalidAction", 1,
			    "CloudWatch requests must be POST.");
		return;
	}
	switch (proto) {
	case API_CWM_QUERY:
		if (api_cwm_action(proto, body, len, &op, &code, &err)) {
			reply_error(resp, proto, code, 1, err.data);
			buf_release(&err);
			return;
		}
		break;
	case API_CWM_CBOR:
		name = url + strlen(API_CWM_CBOR_PREFIX);
		op = api_cwm_op_of(name, strlen(name));
		break;
	default:
		name = target + strlen(API_CWM_TARGET_PREFIX);
		op = api_cwm_op_of(name, strlen(name));
		break;
	}
	switch (op) {
	case API_CWM_LIST_METRICS:
		op_list(ctx, who, proto, body, len, resp);
		break;
	case API_CWM_GET_STATISTICS:
		op_stats(ctx, who, proto, body, len, resp);
		break;
	case API_CWM_GET_DATA:
		op_data(ctx, who, proto, body, len, resp);
		break;
	default:
		buf_reset(&err);
		(void)buf_adds(&err, "This service supports the CloudWatch "
				     "operations ListMetrics, "
				     "GetMetricStatistics and GetMetricData "
				     "only.");
		reply_error(resp, proto, "InvalidAction", 1, err.data);
		break;
	}
	buf_release(&err);
}
