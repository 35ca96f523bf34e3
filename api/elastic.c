/* The elastic tag of a training job request (api/elastic.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/distribution.h"
#include "api/elastic.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/banned.h"

int api_elastic_reserved_key(const char *key)
{
	return key && !strncmp(key, "trainctl:", 9);
}

static const char *tag_value(const struct api_job_spec *spec)
{
	size_t i;

	for (i = 0; i < spec->n_tags; i++)
		if (!strcmp(spec->tags[i].key, API_ELASTIC_TAG))
			return spec->tags[i].value;
	return NULL;
}

static int check_mode(const struct api_job_spec *spec, struct buf *err)
{
	struct api_distribution d;
	int ret = api_distribution_parse(spec, &d, err);

	if (ret)
		return ret;
	if (d.mode == API_DIST_MPI || d.mode == API_DIST_PARAMETER_SERVER) {
		(void)buf_addf(err,
			       "Tags: %s: a job whose distribution is %s "
			       "cannot change its number of hosts; remove "
			       "the tag",
			       API_ELASTIC_TAG, api_dist_mode_name(d.mode));
		ret = ERR_INVALID;
	}
	api_distribution_release(&d);
	return ret;
}

int api_elastic_parse(struct api_job_spec *spec, struct buf *err)
{
	const char *v = tag_value(spec);
	char *end = NULL;
	long n;
	size_t i;

	spec->min_instances = 0;
	for (i = 0; i < spec->n_tags; i++) {
		if (api_elastic_reserved_key(spec->tags[i].key) &&
		    strcmp(spec->tags[i].key, API_ELASTIC_TAG)) {
			(void)buf_addf(err,
				       "Tags: unknown reserved key '%.128s' "
				       "(trainctl reads only '%s')",
				       spec->tags[i].key, API_ELASTIC_TAG);
			return ERR_INVALID;
		}
	}
	if (!v)
		return 0;
	if (spec->n_groups) {
		(void)buf_addf(err,
			       "Tags: %s is not taken with "
			       "ResourceConfig.InstanceGroups: a heterogeneous "
			       "cluster keeps its shape",
			       API_ELASTIC_TAG);
		return ERR_INVALID;
	}
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *v < '0' || *v > '9' || *end || n < 1 ||
	    n > spec->instance_count) {
		(void)buf_addf(err,
			       "Tags: %s must be an integer from 1 to "
			       "ResourceConfig.InstanceCount (%d), not "
			       "'%.32s'",
			       API_ELASTIC_TAG, spec->instance_count, v);
		return ERR_INVALID;
	}
	if (check_mode(spec, err))
		return ERR_INVALID;
	spec->min_instances = (int)n;
	return 0;
}

int api_elastic_min_of_request(const char *json)
{
	json_t *root, *tag;
	size_t i;
	int min = 0;

	/* Most jobs are not elastic: no parse for them. */
	if (!json || !strstr(json, API_ELASTIC_TAG))
		return 0;
	root = json_loads(json, 0, NULL);
	json_array_foreach(json_object_get(root, "Tags"), i, tag)
	{
		const char *k = json_string_value(json_object_get(tag, "Key"));
		const char *v =
			json_string_value(json_object_get(tag, "Value"));

		if (k && v && !strcmp(k, API_ELASTIC_TAG))
			min = atoi(v);
	}
	json_decref(root);
	return min > 0 ? min : 0;
}
