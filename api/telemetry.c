/*
 * Telemetry samples on the wire (api/telemetry.h). The parser checks every
 * member's type and range and every list's length, so the controller
 * stores nothing it did not validate; the builders write the same members
 * back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "api/json_util.h"
#include "api/telemetry.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_BYTES (1LL << 60) /* any byte count or counter */
#define MAX_MS (1LL << 53)
#define MAX_CPUS 65536
#define MAX_CORES_PERCENT (100.0 * MAX_CPUS)
#define MAX_ATTEMPT 1000000
#define MAX_SCHED_NS (1LL << 62) /* nanoseconds of CPU or wait */
#define MAX_NAME 256

/* ---- parsing ---- */

static int bad(struct buf *err, const char *where, const char *key,
	       const char *what)
{
	(void)buf_addf(err, "member '%s.%s' %s", where, key, what);
	return ERR_INVALID;
}

static int get_i64(const json_t *o, const char *where, const char *key,
		   long long min, long long max, int64_t *out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	char what[96];

	if (!v)
		return bad(err, where, key, "is missing");
	if (!json_is_integer(v))
		return bad(err, where, key, "must be an integer");
	if (json_integer_value(v) < min || json_integer_value(v) > max) {
		(void)snprintf(what, sizeof(what), "must be %lld..%lld", min,
			       max);
		return bad(err, where, key, what);
	}
	*out = json_integer_value(v);
	return 0;
}

static int get_int(const json_t *o, const char *where, const char *key,
		   long long min, long long max, int *out, struct buf *err)
{
	int64_t v = 0;
	int ret = get_i64(o, where, key, min, max, &v, err);

	*out = (int)v;
	return ret;
}

static int get_num(const json_t *o, const char *where, const char *key,
		   double max, double *out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	char what[96];
	double d;

	if (!v)
		return bad(err, where, key, "is missing");
	if (!json_is_number(v))
		return bad(err, where, key, "must be a number");
	d = json_number_value(v);
	if (!isfinite(d) || d < 0.0 || d > max) {
		(void)snprintf(what, sizeof(what), "must be 0..%g", max);
		return bad(err, where, key, what);
	}
	*out = d;
	return 0;
}

static int get_name(const json_t *o, const char *where, const char *key,
		    int opt, char **out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	size_t n;

	*out = NULL;
	if (opt && (!v || json_is_null(v)))
		return 0;
	if (!json_is_string(v))
		return bad(err, where, key,
			   v ? "must be a string" : "is missing");
	n = json_string_length(v);
	if (!n || n > MAX_NAME)
		return bad(err, where, key, "must be 1..256 characters");
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int get_list(const json_t *o, const char *where, const char *key,
		    size_t max, const json_t **out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	char what[96];

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return bad(err, where, key, "must be an array or null");
	if (json_array_size(v) > max) {
		(void)snprintf(what, sizeof(what),
			       "must hold at most %zu entries", max);
		return bad(err, where, key, what);
	}
	*out = v;
	return 0;
}

static int parse_gpu(const json_t *o, const char *where,
		     struct tm_gpu_sample *g, struct buf *err)
{
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = get_int(o, where, "index", 0, API_TELEMETRY_MAX_GPUS - 1,
		      &g->index, err);
	ret = ret ? ret :
		    get_num(o, where, "util_percent", 100.0, &g->util_percent,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "mem_used", 0, MAX_BYTES, &g->mem_used,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "mem_total", 0, MAX_BYTES, &g->mem_total,
			    err);
	return ret;
}

/* An optional integer member: *out is left as it is when absent. */
static int get_opt_i64(const json_t *o, const char *where, const char *key,
		       long long min, long long max, int64_t *out,
		       struct buf *err)
{
	if (!json_object_get(o, key))
		return 0;
	return get_i64(o, where, key, min, max, out, err);
}

/* The scheduler's figures of a rank entry: optional (older agents). */
static int parse_sched(const json_t *o, const char *where,
		       struct tm_rank_sample *r, struct buf *err)
{
	int64_t top = -1;
	int ret;

	r->run_ns = -1;
	r->wait_ns = -1;
	ret = get_opt_i64(o, where, "run_ns", 0, MAX_SCHED_NS, &r->run_ns, err);
	ret = ret ? ret :
		    get_opt_i64(o, where, "wait_ns", 0, MAX_SCHED_NS,
				&r->wait_ns, err);
	ret = ret ? ret :
		    get_opt_i64(o, where, "top_rank", 0, 1 << 20, &top, err);
	r->top_rank = (int)top;
	return ret;
}

static int parse_rank(const json_t *o, const char *where,
		      struct tm_rank_sample *r, struct buf *err)
{
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = get_name(o, where, "job", 0, &r->job, err);
	ret = ret ? ret : get_name(o, where, "job_uid", 1, &r->job_uid, err);
	if (!ret && r->job_uid &&
	    (strlen(r->job_uid) > API_PROTO_UID_MAX ||
	     strspn(r->job_uid, "0123456789abcdef") != strlen(r->job_uid)))
		ret = bad(err, where, "job_uid",
			  "must be 1..32 lower-case hex digits");
	ret = ret ? ret :
		    get_int(o, where, "attempt", 1, MAX_ATTEMPT, &r->attempt,
			    err);
	ret = ret ? ret : get_name(o, where, "algo", 0, &r->algo, err);
	ret = ret ? ret :
		    get_num(o, where, "cpu_percent", MAX_CORES_PERCENT,
			    &r->cpu_percent, err);
	ret = ret ? ret :
		    get_i64(o, where, "rss_bytes", 0, MAX_BYTES, &r->rss_bytes,
			    err);
	ret = ret ? ret :
		    get_int(o, where, "procs", 0, 1 << 22, &r->procs, err);
	ret = ret ? ret : parse_sched(o, where, r, err);
	return ret;
}

static int parse_sample(const json_t *o, const char *where,
			struct tm_host_sample *s, struct buf *err)
{
	const json_t *gpus = NULL, *ranks = NULL;
	char m[96];
	size_t i;
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = get_i64(o, where, "ts_ms", 0, MAX_MS, &s->ts_ms, err);
	ret = ret ? ret :
		    get_num(o, where, "cpu_percent", 100.0, &s->cpu_percent,
			    err);
	ret = ret ? ret : get_int(o, where, "cpus", 1, MAX_CPUS, &s->cpus, err);
	ret = ret ? ret :
		    get_i64(o, where, "mem_used", 0, MAX_BYTES, &s->mem_used,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "mem_total", 0, MAX_BYTES, &s->mem_total,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "mem_limit", -1, MAX_BYTES, &s->mem_limit,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "disk_read", 0, MAX_BYTES, &s->disk_read,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "disk_write", 0, MAX_BYTES,
			    &s->disk_write, err);
	ret = ret ? ret :
		    get_i64(o, where, "net_rx", 0, MAX_BYTES, &s->net_rx, err);
	ret = ret ? ret :
		    get_i64(o, where, "net_tx", 0, MAX_BYTES, &s->net_tx, err);
	ret = ret ? ret :
		    get_i64(o, where, "fs_used", 0, MAX_BYTES, &s->fs_used,
			    err);
	ret = ret ? ret :
		    get_i64(o, where, "fs_total", 0, MAX_BYTES, &s->fs_total,
			    err);
	ret = ret ? ret :
		    get_list(o, where, "gpus", API_TELEMETRY_MAX_GPUS, &gpus,
			     err);
	ret = ret ? ret :
		    get_list(o, where, "ranks", API_TELEMETRY_MAX_RANKS, &ranks,
			     err);
	if (ret)
		return ret;
	s->n_gpus = gpus ? json_array_size(gpus) : 0;
	s->gpus = xcalloc(s->n_gpus + 1, sizeof(*s->gpus));
	for (i = 0; !ret && i < s->n_gpus; i++) {
		(void)snprintf(m, sizeof(m), "%s.gpus[%zu]", where, i);
		ret = parse_gpu(json_array_get(gpus, i), m, &s->gpus[i], err);
	}
	s->n_ranks = ranks ? json_array_size(ranks) : 0;
	s->ranks = xcalloc(s->n_ranks + 1, sizeof(*s->ranks));
	for (i = 0; !ret && i < s->n_ranks; i++) {
		(void)snprintf(m, sizeof(m), "%s.ranks[%zu]", where, i);
		ret = parse_rank(json_array_get(ranks, i), m, &s->ranks[i],
				 err);
	}
	return ret;
}

int api__telemetry_parse(const json_t *root, struct tm_host_sample **out,
			 size_t *n, struct buf *err)
{
	const json_t *arr = json_object_get(root, "telemetry");
	struct tm_host_sample *s;
	char m[64];
	size_t i, k;
	int ret = 0;

	*out = NULL;
	*n = 0;
	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr)) {
		(void)buf_adds(err, "member 'telemetry' must be an array or "
				    "null");
		return ERR_INVALID;
	}
	if (json_array_size(arr) > API_TELEMETRY_MAX_SAMPLES) {
		(void)buf_addf(err,
			       "member 'telemetry' must hold at most %d "
			       "samples",
			       API_TELEMETRY_MAX_SAMPLES);
		return ERR_INVALID;
	}
	k = json_array_size(arr);
	s = xcalloc(k + 1, sizeof(*s));
	for (i = 0; !ret && i < k; i++) {
		(void)snprintf(m, sizeof(m), "telemetry[%zu]", i);
		ret = parse_sample(json_array_get(arr, i), m, &s[i], err);
	}
	if (ret) {
		for (i = 0; i < k; i++)
			tm_host_sample_release(&s[i]);
		free(s);
		return ret;
	}
	*out = s;
	*n = k;
	return 0;
}

/* ---- building ---- */

/*
 * A sticky failure flag: the first failed step is remembered and the
 * builder checks once at the end, as the agent messages' builders do.
 */
static void set(int *bad_, json_t *o, const char *key, json_t *v)
{
	if (!o || !v || json_object_set_new(o, key, v))
		*bad_ = 1;
}

static void push(int *bad_, json_t *arr, json_t *v)
{
	if (!arr || !v || json_array_append_new(arr, v))
		*bad_ = 1;
}

/* A percentage rounded to 0.1, enough for any graph. */
static json_t *jpct(double v)
{
	return json_real(round(v * 10.0) / 10.0);
}

static json_t *sample_json(const struct tm_host_sample *s, int derived)
{
	json_t *o = json_object(), *gpus = json_array(), *ranks = json_array();
	int b = 0;
	size_t i;

	set(&b, o, "ts_ms", json_integer(s->ts_ms));
	set(&b, o, "cpu_percent", jpct(s->cpu_percent));
	set(&b, o, "cpus", json_integer(s->cpus));
	set(&b, o, "mem_used", json_integer(s->mem_used));
	set(&b, o, "mem_total", json_integer(s->mem_total));
	set(&b, o, "mem_limit", json_integer(s->mem_limit));
	set(&b, o, "disk_read", json_integer(s->disk_read));
	set(&b, o, "disk_write", json_integer(s->disk_write));
	set(&b, o, "net_rx", json_integer(s->net_rx));
	set(&b, o, "net_tx", json_integer(s->net_tx));
	set(&b, o, "fs_used", json_integer(s->fs_used));
	set(&b, o, "fs_total", json_integer(s->fs_total));
	for (i = 0; i < s->n_gpus; i++) {
		const struct tm_gpu_sample *g = &s->gpus[i];
		json_t *j = json_object();

		set(&b, j, "index", json_integer(g->index));
		set(&b, j, "util_percent", jpct(g->util_percent));
		set(&b, j, "mem_used", json_integer(g->mem_used));
		set(&b, j, "mem_total", json_integer(g->mem_total));
		push(&b, gpus, j);
	}
	set(&b, o, "gpus", gpus);
	for (i = 0; i < s->n_ranks; i++) {
		const struct tm_rank_sample *r = &s->ranks[i];
		json_t *j = json_object();

		set(&b, j, "job", json_string(r->job));
		if (r->job_uid)
			set(&b, j, "job_uid", json_string(r->job_uid));
		set(&b, j, "attempt", json_integer(r->attempt));
		set(&b, j, "algo", json_string(r->algo));
		set(&b, j, "cpu_percent", jpct(r->cpu_percent));
		set(&b, j, "rss_bytes", json_integer(r->rss_bytes));
		set(&b, j, "procs", json_integer(r->procs));
		if (r->run_ns >= 0 && r->wait_ns >= 0) {
			set(&b, j, "run_ns", json_integer(r->run_ns));
			set(&b, j, "wait_ns", json_integer(r->wait_ns));
		}
		if (r->top_rank >= 0)
			set(&b, j, "top_rank", json_integer(r->top_rank));
		push(&b, ranks, j);
	}
	set(&b, o, "ranks", ranks);
	if (derived) {
		set(&b, o, "mem_percent", jpct(tm_host_sample_mem_percent(s)));
		set(&b, o, "disk_percent",
		    jpct(tm_host_sample_disk_percent(s)));
		set(&b, o, "gpu_percent", jpct(tm_host_sample_gpu_percent(s)));
		set(&b, o, "gpu_mem_percent",
		    jpct(tm_host_sample_gpu_mem_percent(s)));
	}
	if (b) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *api__telemetry_json(const struct tm_host_sample *s, size_t n)
{
	json_t *arr = json_array();
	int b = 0;
	size_t i;

	for (i = 0; i < n; i++)
		push(&b, arr, sample_json(&s[i], 0));
	if (b) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

static int finish(json_t *v, struct buf *out)
{
	int ret;

	if (!v)
		return ERR_NOMEM;
	ret = api__json_dump_to(v, out);
	json_decref(v);
	return ret;
}

json_t *api__host_sample_json(const struct tm_host_sample *s)
{
	return sample_json(s, 1);
}

int api_host_sample_build(const struct tm_host_sample *s, struct buf *out)
{
	return finish(sample_json(s, 1), out);
}

/* Bytes per second between two readings of a counter (0 when it went
 * back: the host restarted). */
static json_t *rate(int64_t now, int64_t before, int64_t dt_ms)
{
	if (dt_ms <= 0 || now < before)
		return json_integer(0);
	return json_integer((json_int_t)((now - before) * 1000 / dt_ms));
}

int api_telemetry_series_build(const char *host, int64_t start_ms,
			       int64_t end_ms, int truncated,
			       const struct tm_host_sample *s, size_t n,
			       struct buf *out)
{
	json_t *root = json_object(), *arr = json_array();
	int b = 0;
	size_t i;

	set(&b, root, "host", json_string(host));
	set(&b, root, "start_ms", json_integer(start_ms));
	set(&b, root, "end_ms", json_integer(end_ms));
	set(&b, root, "truncated", json_boolean(truncated));
	for (i = 0; i < n; i++) {
		json_t *o = sample_json(&s[i], 1);

		if (o && i > 0) {
			int64_t dt = s[i].ts_ms - s[i - 1].ts_ms;

			set(&b, o, "disk_read_bps",
			    rate(s[i].disk_read, s[i - 1].disk_read, dt));
			set(&b, o, "disk_write_bps",
			    rate(s[i].disk_write, s[i - 1].disk_write, dt));
			set(&b, o, "net_rx_bps",
			    rate(s[i].net_rx, s[i - 1].net_rx, dt));
			set(&b, o, "net_tx_bps",
			    rate(s[i].net_tx, s[i - 1].net_tx, dt));
		}
		push(&b, arr, o);
	}
	set(&b, root, "samples", arr);
	if (b) {
		json_decref(root);
		return ERR_NOMEM;
	}
	return finish(root, out);
}

static json_t *job_point_json(const struct api_tm_job_point *p)
{
	json_t *o = json_object();
	int b = 0;

	set(&b, o, "ts_ms", json_integer(p->ts_ms));
	set(&b, o, "attempt", json_integer(p->attempt));
	set(&b, o, "host", json_string(p->host ? p->host : ""));
	set(&b, o, "cpu_percent",
	    p->cpu_percent < 0 ? json_null() : jpct(p->cpu_percent));
	set(&b, o, "mem_percent", jpct(p->mem_percent));
	set(&b, o, "disk_percent", jpct(p->disk_percent));
	set(&b, o, "gpu_percent", jpct(p->gpu_percent));
	set(&b, o, "gpu_mem_percent", jpct(p->gpu_mem_percent));
	set(&b, o, "job_cpu_percent", jpct(p->job_cpu_percent));
	set(&b, o, "job_rss_bytes", json_integer(p->job_rss_bytes));
	if (b) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int api_tm_job_build(const char *job, int64_t last_ms,
		     const struct api_tm_job_node *nodes, size_t n,
		     struct buf *out)
{
	json_t *root = json_object(), *arr = json_array();
	int b = 0;
	size_t i, k;

	set(&b, root, "job", json_string(job));
	set(&b, root, "last_ms", json_integer(last_ms));
	for (i = 0; i < n; i++) {
		const struct api_tm_job_node *x = &nodes[i];
		const struct api_tm_job_point *newest =
			x->n ? &x->points[x->n - 1] : NULL;
		json_t *o = json_object(), *pts = json_array();

		set(&b, o, "algo", json_string(x->algo));
		set(&b, o, "host",
		    newest && newest->host ? json_string(newest->host) :
					     json_null());
		set(&b, o, "attempt",
		    newest ? json_integer(newest->attempt) : json_null());
		set(&b, o, "total", json_integer((json_int_t)x->total));
		for (k = 0; k < x->n; k++)
			push(&b, pts, job_point_json(&x->points[k]));
		set(&b, o, "samples", pts);
		push(&b, arr, o);
	}
	set(&b, root, "nodes", arr);
	if (b) {
		json_decref(root);
		return ERR_NOMEM;
	}
	return finish(root, out);
}
