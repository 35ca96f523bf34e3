#include <math.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/telemetry.h"
#include "api/web_json.h"
#include "common/err.h"
#include "common/banned.h"

/*
 * A string member, null when s is NULL. Text that is not UTF-8 (jansson
 * refuses it) sets *bad, so the builder fails instead of dropping it.
 */
static void set_str(json_t *o, const char *key, const char *s, int *bad)
{
	json_t *v = s ? json_string(s) : json_null();

	if (!v) {
		*bad = 1;
		v = json_null();
	}
	json_object_set_new(o, key, v);
}

/* A time member: null for 0 (not yet). */
static void set_time(json_t *o, const char *key, int64_t ms)
{
	json_object_set_new(o, key, ms ? json_integer(ms) : json_null());
}

int api_web_jobs_build(const struct api_web_job *j, size_t n,
		       const char *next_token, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	int bad = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		set_str(o, "name", j[i].name, &bad);
		set_str(o, "status", j[i].status, &bad);
		set_str(o, "secondary_status", j[i].secondary_status, &bad);
		set_str(o, "instance_type", j[i].instance_type, &bad);
		json_object_set_new(o, "instance_count",
				    json_integer(j[i].instance_count));
		json_object_set_new(o, "attempt", json_integer(j[i].attempt));
		set_str(o, "failure_reason", j[i].failure_reason, &bad);
		set_time(o, "creation_ms", j[i].creation_ms);
		set_time(o, "start_ms", j[i].start_ms);
		set_time(o, "end_ms", j[i].end_ms);
		set_time(o, "last_modified_ms", j[i].last_modified_ms);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "jobs", arr);
	set_str(root, "next_token", next_token, &bad);
	return api__json_finish(root, bad, out);
}

static json_t *procs_json(const struct api_proc_report *p, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "rank", json_integer(p[i].rank));
		json_object_set_new(o, "pid", json_integer(p[i].pid));
		set_time(o, "started_ms", p[i].started_ms);
		json_object_set_new(o, "exited", json_boolean(p[i].exited));
		json_object_set_new(o, "exit_code",
				    p[i].exited && !p[i].signal ?
					    json_integer(p[i].exit_code) :
					    json_null());
		json_object_set_new(o, "signal",
				    p[i].signal ? json_integer(p[i].signal) :
						  json_null());
		set_time(o, "exited_ms", p[i].exited_ms);
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *hosts_json(const struct api_web_host *h, size_t n, int *bad)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		set_str(o, "algo", h[i].algo, bad);
		set_str(o, "host", h[i].host, bad);
		set_str(o, "host_state", h[i].host_state, bad);
		json_object_set_new(
			o, "last_heartbeat_ms_ago",
			h[i].heartbeat_age_ms < 0 ?
				json_null() :
				json_integer(h[i].heartbeat_age_ms));
		json_object_set_new(o, "attempt", json_integer(h[i].attempt));
		set_str(o, "action", h[i].action, bad);
		set_str(o, "phase", h[i].phase, bad);
		json_object_set_new(o, "procs",
				    procs_json(h[i].procs, h[i].n_procs));
		set_str(o, "failure", h[i].failure, bad);
		set_str(o, "error", h[i].error, bad);
		if (h[i].telemetry) {
			json_t *t = api__host_sample_json(h[i].telemetry);
			const struct tm_rank_sample *r = h[i].job_procs;
			json_t *j = json_null();

			if (r) {
				j = json_object();
				json_object_set_new(
					j, "cpu_percent",
					json_real(round(r->cpu_percent * 10.0) /
						  10.0));
				json_object_set_new(j, "rss_bytes",
						    json_integer(r->rss_bytes));
				json_object_set_new(j, "procs",
						    json_integer(r->procs));
			}
			if (t)
				json_object_set_new(t, "job", j);
			else
				json_decref(j);
			json_object_set_new(o, "telemetry",
					    t ? t : json_null());
		} else {
			json_object_set_new(o, "telemetry", json_null());
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

int api_web_runtime_build(const struct api_web_runtime *rt, struct buf *out)
{
	json_t *root = json_object();
	json_t *streams = json_array();
	json_t *names = json_array();
	int bad = 0;
	size_t i;

	set_str(root, "name", rt->name, &bad);
	json_object_set_new(root, "attempt", json_integer(rt->attempt));
	set_str(root, "stop_reason", rt->stop_reason, &bad);
	json_object_set_new(root, "hosts",
			    hosts_json(rt->hosts, rt->n_hosts, &bad));
	if (rt->first_failure) {
		const struct api_web_failure *f = rt->first_failure;
		json_t *o = json_object();

		set_str(o, "algo", f->algo, &bad);
		set_str(o, "host", f->host, &bad);
		json_object_set_new(o, "rank", json_integer(f->rank));
		json_object_set_new(o, "exit_code",
				    f->signal ? json_null() :
						json_integer(f->exit_code));
		json_object_set_new(o, "signal",
				    f->signal ? json_integer(f->signal) :
						json_null());
		set_time(o, "exited_ms", f->exited_ms);
		json_object_set_new(root, "first_failure", o);
	} else {
		json_object_set_new(root, "first_failure", json_null());
	}
	for (i = 0; i < rt->n_streams; i++) {
		json_t *o = json_object();

		set_str(o, "name", rt->streams[i].name, &bad);
		json_object_set_new(o, "host_index",
				    json_integer(rt->streams[i].host_index));
		set_time(o, "created_ms", rt->streams[i].created_ms);
		json_array_append_new(streams, o);
	}
	json_object_set_new(root, "streams", streams);
	for (i = 0; i < rt->n_metric_names; i++) {
		json_t *s = json_string(rt->metric_names[i]);

		bad |= !s;
		if (s)
			json_array_append_new(names, s);
	}
	json_object_set_new(root, "metric_names", names);
	return api__json_finish(root, bad, out);
}

int api_web_metrics_build(const struct api_web_series *s, size_t n,
			  int64_t last_ms, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	json_t *hosts = json_array();
	int bad = 0, max_host = 0, h;
	size_t i, k;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();
		json_t *pts = json_array();

		set_str(o, "name", s[i].name, &bad);
		for (k = 0; k < s[i].n; k++) {
			const struct api_web_point *p = &s[i].points[k];
			/* JSON has no NaN or infinities: a metric regex may
			 * well capture "nan" or "inf". */
			json_t *v = isfinite(p->value) ? json_real(p->value) :
							 json_null();
			json_t *pt =
				json_pack("[I,o]", (json_int_t)p->ts_ms, v);

			if (pt && p->host > 0) {
				json_array_append_new(
					pt, json_integer(p->host - 1));
				if (p->host > max_host)
					max_host = p->host;
			}
			json_array_append_new(pts, pt);
		}
		json_object_set_new(o, "points", pts);
		json_array_append_new(arr, o);
	}
	for (h = 1; h <= max_host; h++)
		json_array_append_new(hosts, json_sprintf("algo-%d", h));
	json_object_set_new(root, "metrics", arr);
	json_object_set_new(root, "hosts", hosts);
	json_object_set_new(root, "last_ms", json_integer(last_ms));
	return api__json_finish(root, bad, out);
}

int api_web_changes_build(const char *cursor, int jobs, int logs, int hosts,
			  struct buf *out)
{
	json_t *root = json_pack("{s:s,s:b,s:b,s:b}", "cursor", cursor, "jobs",
				 jobs, "logs", logs, "hosts", hosts);

	if (!root)
		return ERR_INVALID;
	return api__json_finish(root, 0, out);
}
