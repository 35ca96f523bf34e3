/*
 * DescribeTrainingJob's TrainctlGoodput member (api/goodput.h).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/goodput.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MEMBER "TrainctlGoodput"

int api_goodput_json(const struct api_goodput *g, struct buf *out)
{
	json_t *root = json_object(), *o = json_object(), *t = json_object();
	size_t i;
	int ret;

	json_object_set_new(o, "WallTimeInSeconds", json_real(g->wall_s));
	json_object_set_new(o, "Goodput", json_real(g->ratio));
	for (i = 0; i < g->n; i++)
		json_object_set_new(t, g->names[i], json_real(g->seconds[i]));
	json_object_set_new(o, "TimeInSeconds", t);
	json_object_set_new(o, "StepReached", json_integer(g->step));
	json_object_set_new(o, "StepsRedone", json_integer(g->steps_redone));
	json_object_set_new(o, "Attempts", json_integer(g->attempts));
	json_object_set_new(o, "AttemptsReporting", json_integer(g->reporting));
	json_object_set_new(root, MEMBER, o);
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

static int64_t int_of(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

static int fill(const json_t *o, struct api_goodput *g, struct buf *err)
{
	const json_t *t = json_object_get(o, "TimeInSeconds");
	const char *key;
	json_t *v;
	size_t i = 0;

	if (!json_is_object(t)) {
		(void)buf_adds(err, MEMBER ".TimeInSeconds is not an object");
		return ERR_INVALID;
	}
	g->n = json_object_size(t);
	g->names = xcalloc(g->n ? g->n : 1, sizeof(*g->names));
	g->seconds = xcalloc(g->n ? g->n : 1, sizeof(*g->seconds));
	json_object_foreach((json_t *)t, key, v)
	{
		g->names[i] = xstrdup(key);
		g->seconds[i++] = json_number_value(v);
	}
	g->wall_s = json_number_value(json_object_get(o, "WallTimeInSeconds"));
	g->ratio = json_number_value(json_object_get(o, "Goodput"));
	g->step = int_of(o, "StepReached");
	g->steps_redone = int_of(o, "StepsRedone");
	g->attempts = (int)int_of(o, "Attempts");
	g->reporting = (int)int_of(o, "AttemptsReporting");
	return 0;
}

int api_goodput_parse(const char *json, size_t len, struct api_goodput *g,
		      struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_PRESERVE_ORDER, &jerr);
	const json_t *o;
	int ret;

	memset(g, 0, sizeof(*g));
	if (!root) {
		(void)buf_addf(err, "invalid JSON: %s", jerr.text);
		return ERR_INVALID;
	}
	o = json_object_get(root, MEMBER);
	if (!o)
		ret = ERR_NOTFOUND;
	else if (!json_is_object(o))
		ret = ERR_INVALID;
	else
		ret = fill(o, g, err);
	if (ret == ERR_INVALID && !err->len)
		(void)buf_adds(err, MEMBER " is not an object");
	if (ret)
		api_goodput_release(g);
	json_decref(root);
	return ret;
}

void api_goodput_release(struct api_goodput *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		free(g->names[i]);
	free(g->names);
	free(g->seconds);
	memset(g, 0, sizeof(*g));
}
