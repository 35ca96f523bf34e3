#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/queues_json.h"
#include "common/err.h"
#include "common/banned.h"

/*
 * The queues view's JSON (queues_json.h) and its table for trainctl queue.
 * A string jansson refuses (not UTF-8) marks the answer bad rather than
 * dropping the member.
 */

static json_t *str_or_null(const char *s, int *bad)
{
	json_t *v;

	if (!s)
		return json_null();
	v = json_string(s);
	if (!v) {
		*bad = 1;
		return json_null();
	}
	return v;
}

static json_t *count_or_null(int n)
{
	return n < 0 ? json_null() : json_integer(n);
}

static void put_cap(json_t *o, const struct api_queue_cap *c)
{
	json_object_set_new(o, "guarantee", count_or_null(c->guarantee));
	json_object_set_new(o, "in_use", json_integer(c->in_use));
	json_object_set_new(o, "borrowed", json_integer(c->borrowed));
	json_object_set_new(o, "lent", json_integer(c->lent));
}

static json_t *caps_json(const struct api_queue_share *s, int *bad)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < s->n_caps; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "instance_type",
				    str_or_null(s->caps[i].type, bad));
		put_cap(o, &s->caps[i]);
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *users_json(const struct api_queue_share *s, int *bad)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < s->n_users; i++) {
		const struct api_queue_user *u = &s->users[i];
		json_t *o = json_object();

		json_object_set_new(o, "user", str_or_null(u->user, bad));
		json_object_set_new(o, "running", json_integer(u->running));
		json_object_set_new(o, "waiting", json_integer(u->waiting));
		json_object_set_new(o, "hosts", json_integer(u->hosts));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *jobs_json(const struct api_queue_share *s, int *bad)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < s->n_jobs; i++) {
		const struct api_queue_job *j = &s->jobs[i];
		json_t *o = json_object();

		json_object_set_new(o, "name", str_or_null(j->name, bad));
		json_object_set_new(o, "user", str_or_null(j->user, bad));
		json_object_set_new(o, "state", str_or_null(j->state, bad));
		json_object_set_new(
			o, "position",
			j->position ? json_integer((json_int_t)j->position) :
				      json_null());
		json_object_set_new(o, "reason", str_or_null(j->reason, bad));
		json_object_set_new(o, "instance_type",
				    str_or_null(j->type, bad));
		json_object_set_new(o, "count", json_integer(j->count));
		json_object_set_new(o, "priority", json_integer(j->priority));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *series_json(const struct api_queue_share *s)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < s->n_series; i++) {
		const struct api_queue_sample *p = &s->series[i];
		json_t *o = json_object();

		json_object_set_new(o, "t_ms", json_integer(p->t_ms));
		json_object_set_new(o, "guarantee",
				    count_or_null(p->guarantee));
		json_object_set_new(o, "in_use", json_integer(p->in_use));
		json_object_set_new(o, "borrowed", json_integer(p->borrowed));
		json_object_set_new(o, "lent", json_integer(p->lent));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *share_json(const struct api_queue_share *s, int *bad)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", str_or_null(s->name, bad));
	json_object_set_new(o, "kind", str_or_null(s->kind, bad));
	json_object_set_new(o, "strategy", str_or_null(s->strategy, bad));
	json_object_set_new(o, "borrow_limit", json_integer(s->borrow_limit));
	json_object_set_new(o, "weight", json_real(s->weight));
	json_object_set_new(o, "usage", json_real(s->usage));
	put_cap(o, &s->total);
	json_object_set_new(o, "running", json_integer(s->running));
	json_object_set_new(o, "waiting", json_integer(s->waiting));
	json_object_set_new(o, "capacity", caps_json(s, bad));
	json_object_set_new(o, "users", users_json(s, bad));
	json_object_set_new(o, "jobs", jobs_json(s, bad));
	json_object_set_new(o, "series", series_json(s));
	return o;
}

int api_queues_build(const struct api_queues *q, struct buf *out)
{
	json_t *root = json_object(), *qs = json_array();
	size_t i, k;
	int bad = 0;

	json_object_set_new(root, "sampled_ms",
			    q->sampled_ms ? json_integer(q->sampled_ms) :
					    json_null());
	json_object_set_new(root, "interval_ms", json_integer(q->interval_ms));
	for (i = 0; i < q->n; i++) {
		const struct api_queue *x = &q->queues[i];
		json_t *o = json_object(), *shares = json_array();

		json_object_set_new(o, "name", str_or_null(x->name, &bad));
		json_object_set_new(o, "priority", json_integer(x->priority));
		json_object_set_new(o, "policy", str_or_null(x->policy, &bad));
		for (k = 0; k < x->n_shares; k++)
			json_array_append_new(shares,
					      share_json(&x->shares[k], &bad));
		json_object_set_new(o, "shares", shares);
		json_array_append_new(qs, o);
	}
	json_object_set_new(root, "queues", qs);
	return api__json_finish(root, bad, out);
}

/* --- the table ------------------------------------------------------- */

static const char *str_of(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : def;
}

static long long int_of(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* "-" for null (no guarantee), else the number. */
static void count_cell(const json_t *o, const char *key, char *cell,
		       size_t size)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		snprintf(cell, size, "%lld", (long long)json_integer_value(v));
	else
		snprintf(cell, size, "-");
}

static void table_shares(const json_t *shares, struct buf *out)
{
	const json_t *s;
	size_t i;
	char g[24];

	(void)buf_addf(out, "%-16s %-9s %9s %6s %8s %4s %7s %7s\n", "SHARE",
		       "KIND", "GUARANTEE", "IN-USE", "BORROWED", "LENT",
		       "RUNNING", "WAITING");
	json_array_foreach(shares, i, s)
	{
		count_cell(s, "guarantee", g, sizeof(g));
		(void)buf_addf(out,
			       "%-16s %-9s %9s %6lld %8lld %4lld %7lld %7lld\n",
			       str_of(s, "name", "(another user)"),
			       str_of(s, "kind", "-"), g, int_of(s, "in_use"),
			       int_of(s, "borrowed"), int_of(s, "lent"),
			       int_of(s, "running"), int_of(s, "waiting"));
	}
}

static void table_users(const json_t *shares, struct buf *out)
{
	const json_t *s, *u;
	size_t i, k;
	int any = 0;

	json_array_foreach(shares, i, s)
	{
		json_array_foreach(json_object_get(s, "users"), k, u)
		{
			if (!any++)
				(void)buf_addf(out, "%-16s %-16s %7s %7s %5s\n",
					       "USER", "SHARE", "RUNNING",
					       "WAITING", "HOSTS");
			(void)buf_addf(out, "%-16s %-16s %7lld %7lld %5lld\n",
				       str_of(u, "user", "(other users)"),
				       str_of(s, "name", "(another user)"),
				       int_of(u, "running"),
				       int_of(u, "waiting"),
				       int_of(u, "hosts"));
		}
	}
}

static void table_jobs(const json_t *shares, struct buf *out)
{
	const json_t *s, *j;
	size_t i, k;
	int any = 0;
	char pos[24];

	json_array_foreach(shares, i, s)
	{
		json_array_foreach(json_object_get(s, "jobs"), k, j)
		{
			if (!any++)
				(void)buf_addf(
					out, "%-32s %-16s %-12s %-9s %4s  %s\n",
					"JOB", "SHARE", "USER", "STATE", "POS",
					"HOSTS");
			count_cell(j, "position", pos, sizeof(pos));
			(void)buf_addf(out,
				       "%-32s %-16s %-12s %-9s %4s  %lld %s\n",
				       str_of(j, "name", "(another user's)"),
				       str_of(s, "name", "(another user)"),
				       str_of(j, "user", "-"),
				       str_of(j, "state", "-"), pos,
				       int_of(j, "count"),
				       str_of(j, "instance_type", "-"));
			if (json_is_string(json_object_get(j, "reason")))
				(void)buf_addf(out, "  %s\n",
					       str_of(j, "reason", ""));
		}
	}
}

int api_queues_table(const char *json, size_t len, struct buf *out,
		     struct buf *err)
{
	const json_t *q, *queues;
	json_t *root;
	size_t i;
	int ret = api__json_load_object(json, len, &root, err);

	if (ret)
		return ret;
	queues = json_object_get(root, "queues");
	if (!json_is_array(queues)) {
		json_decref(root);
		return api__invalid(err, "no 'queues' list in the answer");
	}
	if (!json_array_size(queues))
		(void)buf_adds(out, "No queued or running jobs.\n");
	json_array_foreach(queues, i, q)
	{
		const json_t *shares = json_object_get(q, "shares");

		(void)buf_addf(out, "%sQUEUE %s  priority %lld  policy %s\n",
			       i ? "\n" : "", str_of(q, "name", "?"),
			       int_of(q, "priority"),
			       str_of(q, "policy", "FIFO"));
		table_shares(shares, out);
		table_users(shares, out);
		table_jobs(shares, out);
	}
	json_decref(root);
	return 0;
}
