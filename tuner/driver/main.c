/*
 * trainctl-tuner-driver: the optimizer behind an ask/tell protocol of JSON
 * lines on stdin and stdout, so that a benchmark drives it exactly as it
 * drives other optimizers (bench/tuning.py).
 *
 * The first line sets the search space and the strategy:
 *   {"space": [{"name": "lr", "type": "continuous", "min": 1e-4,
 *               "max": 0.1, "scale": "log"},
 *              {"name": "layers", "type": "integer", "min": 1, "max": 8},
 *              {"name": "opt", "type": "categorical", "values": 3}],
 *    "strategy": "bayesian", "seed": 1, "budget": 30}
 * (scale: linear, log, reverse_log or auto; strategy: random, grid,
 * bayesian or hyperband). Then one request per line, one answer each:
 *   {"op": "ask"}                   -> {"id": 0, "x": [...], "seconds": t}
 *   {"op": "tell", "id": 0, "y": v} -> {"ok": true}
 *   {"op": "add", "x": [...], "y": v} -> {"ok": true}  (an evaluation
 *                                       made elsewhere)
 *   {"op": "median_stop", "others": [[...], ...], "cur": [...]}
 *   {"op": "asha_stop", "others": ..., "cur": ..., "min_r": 1,
 *    "max_r": 27, "eta": 3}             -> {"stop": true}
 * Points asked and not yet told are pending; evaluations count in the
 * order they are told. A bad line gets {"error": "..."}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "tuner/tuner.h"

/* No request needs more than this (curves of a few hundred jobs). */
#define LINE_MAX_BYTES (64u << 20)

struct point {
	double *x;
	double y;
	int told;
};

struct driver {
	struct tune_param *params;
	struct tune_space space;
	enum tune_strategy strategy;
	uint64_t seed;
	size_t budget;
	struct point *pts;
	size_t n_pts, alloc_pts;
	size_t *told; /* indexes of pts in the order they were told */
	size_t n_told, alloc_told;
	size_t n_asked;
};

static void reply(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	fputs(s, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	free(s);
	json_decref(o);
}

static void reply_error(const char *msg)
{
	reply(json_pack("{s:s}", "error", msg));
}

static int parse_scale(const char *s, enum tune_scale *out, int *is_auto)
{
	*is_auto = 0;
	if (!s || !strcmp(s, "linear"))
		*out = TUNE_SCALE_LINEAR;
	else if (!strcmp(s, "log"))
		*out = TUNE_SCALE_LOG;
	else if (!strcmp(s, "reverse_log"))
		*out = TUNE_SCALE_REVLOG;
	else if (!strcmp(s, "auto"))
		*is_auto = 1;
	else
		return -1;
	return 0;
}

static int setup(struct driver *d, json_t *cfg, struct buf *err)
{
	static const char *const strategies[] = { "random", "grid", "bayesian",
						  "hyperband" };
	json_t *space = json_object_get(cfg, "space"), *p;
	const char *st = json_string_value(json_object_get(cfg, "strategy"));
	size_t i;

	if (!json_is_array(space) || json_array_size(space) == 0) {
		buf_adds(err, "'space' must be a non-empty array");
		return -1;
	}
	for (i = 0; i < 4; i++)
		if (st && !strcmp(st, strategies[i]))
			break;
	if (i == 4) {
		buf_adds(err, "'strategy' must be random, grid, bayesian or "
			      "hyperband");
		return -1;
	}
	d->strategy = (enum tune_strategy)i;
	d->seed = (uint64_t)json_integer_value(json_object_get(cfg, "seed"));
	d->budget = (size_t)json_integer_value(json_object_get(cfg, "budget"));
	d->space.n = json_array_size(space);
	d->params = xcalloc(d->space.n, sizeof(*d->params));
	d->space.params = d->params;
	json_array_foreach(space, i, p)
	{
		struct tune_param *tp = &d->params[i];
		const char *type =
			json_string_value(json_object_get(p, "type"));
		const char *name =
			json_string_value(json_object_get(p, "name"));
		int is_auto;

		tp->name = xstrdup(name ? name : "");
		if (type && !strcmp(type, "categorical")) {
			tp->kind = TUNE_CATEGORICAL;
			tp->n_values = (size_t)json_integer_value(
				json_object_get(p, "values"));
			continue;
		}
		if (type && !strcmp(type, "continuous"))
			tp->kind = TUNE_CONTINUOUS;
		else if (type && !strcmp(type, "integer"))
			tp->kind = TUNE_INTEGER;
		else {
			buf_addf(err, "parameter %zu: unknown type", i);
			return -1;
		}
		tp->min = json_number_value(json_object_get(p, "min"));
		tp->max = json_number_value(json_object_get(p, "max"));
		if (parse_scale(json_string_value(json_object_get(p, "scale")),
				&tp->scale, &is_auto)) {
			buf_addf(err, "parameter %zu: unknown scale", i);
			return -1;
		}
		if (is_auto)
			tp->scale = tune_scale_auto(tp);
	}
	return 0;
}

static double *point_of(const struct driver *d, json_t *a)
{
	double *x;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) != d->space.n)
		return NULL;
	x = xmalloc(d->space.n * sizeof(double));
	for (i = 0; i < d->space.n; i++)
		x[i] = json_number_value(json_array_get(a, i));
	return x;
}

static size_t add_point(struct driver *d, double *x)
{
	ALLOC_GROW(d->pts, d->n_pts + 1, d->alloc_pts);
	d->pts[d->n_pts].x = x;
	d->pts[d->n_pts].told = 0;
	return d->n_pts++;
}

static void tell(struct driver *d, size_t id, double y)
{
	d->pts[id].y = y;
	d->pts[id].told = 1;
	ALLOC_GROW(d->told, d->n_told + 1, d->alloc_told);
	d->told[d->n_told++] = id;
}

static void ask(struct driver *d)
{
	struct tune_obs *obs = xcalloc(d->n_told + 1, sizeof(*obs));
	const double **pend = xcalloc(d->n_pts + 1, sizeof(*pend));
	struct tune_request rq = { 0 };
	struct buf err = BUF_INIT;
	double *x = xmalloc(d->space.n * sizeof(double));
	struct timespec t0, t1;
	json_t *o, *a;
	size_t i, np = 0, id;
	int rc;

	for (i = 0; i < d->n_told; i++) {
		obs[i].x = d->pts[d->told[i]].x;
		obs[i].y = d->pts[d->told[i]].y;
	}
	for (i = 0; i < d->n_pts; i++)
		if (!d->pts[i].told)
			pend[np++] = d->pts[i].x;
	rq.space = &d->space;
	rq.strategy = d->strategy;
	rq.seed = d->seed;
	rq.index = d->n_pts;
	rq.budget = d->budget;
	rq.obs = obs;
	rq.n_obs = d->n_told;
	rq.pending = pend;
	rq.n_pending = np;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = tune_suggest(&rq, x, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(obs);
	free(pend);
	if (rc) {
		reply_error(err.data);
		buf_release(&err);
		free(x);
		return;
	}
	buf_release(&err);
	d->n_asked++;
	id = add_point(d, x);
	a = json_array();
	for (i = 0; i < d->space.n; i++)
		json_array_append_new(a, json_real(x[i]));
	o = json_pack("{s:I,s:o,s:f}", "id", (json_int_t)id, "x", a, "seconds",
		      (double)(t1.tv_sec - t0.tv_sec) +
			      (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	reply(o);
}

/* Curves from JSON arrays of numbers; *n_out of them. NULL on bad
 * input. */
static struct tune_curve *curves_of(json_t *a, size_t *n_out)
{
	struct tune_curve *c;
	size_t i, j;
	json_t *v;

	if (!json_is_array(a))
		return NULL;
	c = xcalloc(json_array_size(a) + 1, sizeof(*c));
	json_array_foreach(a, i, v)
	{
		double *y;

		if (!json_is_array(v))
			break;
		y = xmalloc((json_array_size(v) + 1) * sizeof(double));
		for (j = 0; j < json_array_size(v); j++)
			y[j] = json_number_value(json_array_get(v, j));
		c[i].y = y;
		c[i].n = json_array_size(v);
	}
	*n_out = json_array_size(a);
	return c;
}

static void free_curves(struct tune_curve *c, size_t n)
{
	size_t i;

	for (i = 0; c && i < n; i++)
		free((double *)c[i].y);
	free(c);
}

static void stop_op(json_t *req, int asha)
{
	json_t *cur_a = json_pack("[O]", json_object_get(req, "cur"));
	size_t n_others = 0, n_cur = 0;
	struct tune_curve *others =
		curves_of(json_object_get(req, "others"), &n_others);
	struct tune_curve *cur = curves_of(cur_a, &n_cur);
	int stop;

	json_decref(cur_a);
	if (!others || !cur || !cur[0].y) {
		reply_error("'others' and 'cur' must be arrays of numbers");
		free_curves(others, n_others);
		free_curves(cur, n_cur);
		return;
	}
	if (asha)
		stop = tune_asha_stop(
			others, n_others, cur,
			json_number_value(json_object_get(req, "min_r")),
			json_number_value(json_object_get(req, "max_r")),
			json_number_value(json_object_get(req, "eta")));
	else
		stop = tune_median_stop(others, n_others, cur);
	reply(json_pack("{s:b}", "stop", stop));
	free_curves(others, n_others);
	free_curves(cur, n_cur);
}

static void handle(struct driver *d, json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	json_t *yv = json_object_get(req, "y");

	if (!op) {
		reply_error("'op' is missing");
	} else if (!strcmp(op, "ask")) {
		ask(d);
	} else if (!strcmp(op, "tell")) {
		json_int_t id = json_integer_value(json_object_get(req, "id"));

		if (id < 0 || (size_t)id >= d->n_pts || d->pts[id].told ||
		    !json_is_number(yv))
			reply_error("'id' must name a pending point and 'y' "
				    "be a number");
		else {
			tell(d, (size_t)id, json_number_value(yv));
			reply(json_pack("{s:b}", "ok", 1));
		}
	} else if (!strcmp(op, "add")) {
		double *x = point_of(d, json_object_get(req, "x"));

		if (!x || !json_is_number(yv)) {
			free(x);
			reply_error("'x' must have one number per parameter "
				    "and 'y' be a number");
		} else {
			tell(d, add_point(d, x), json_number_value(yv));
			reply(json_pack("{s:b}", "ok", 1));
		}
	} else if (!strcmp(op, "median_stop")) {
		stop_op(req, 0);
	} else if (!strcmp(op, "asha_stop")) {
		stop_op(req, 1);
	} else {
		reply_error("unknown 'op'");
	}
}

int main(void)
{
	struct driver d = { 0 };
	struct buf err = BUF_INIT;
	char *line = NULL;
	size_t cap = 0, i;
	ssize_t len;
	int configured = 0, rc = 0;

	while ((len = getline(&line, &cap, stdin)) > 0) {
		json_error_t jerr;
		json_t *req;

		if ((size_t)len > LINE_MAX_BYTES) {
			reply_error("line too long");
			continue;
		}
		req = json_loadb(line, (size_t)len, 0, &jerr);
		if (!json_is_object(req)) {
			reply_error("each line must be a JSON object");
			json_decref(req);
			continue;
		}
		if (!configured) {
			buf_reset(&err);
			if (setup(&d, req, &err)) {
				reply_error(err.data);
				rc = 2;
				json_decref(req);
				break;
			}
			configured = 1;
			reply(json_pack("{s:b}", "ok", 1));
		} else {
			handle(&d, req);
		}
		json_decref(req);
	}
	free(line);
	buf_release(&err);
	for (i = 0; i < d.n_pts; i++)
		free(d.pts[i].x);
	for (i = 0; i < d.space.n; i++)
		free((char *)d.params[i].name);
	free(d.pts);
	free(d.told);
	free(d.params);
	return rc;
}
