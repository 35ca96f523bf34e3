#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/serving.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The members that may name a training job, in the order tried. */
static const char *const name_members[] = { "ModelName", "EndpointConfigName",
					    "EndpointName",
					    "TransformJobName" };

static void add_name(struct api_serving_req *r, const json_t *v)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	size_t i;

	if (!s || !*s)
		return;
	for (i = 0; i < r->n_names; i++)
		if (!strcmp(r->names[i], s))
			return;
	r->names = xrealloc(r->names, (r->n_names + 1) * sizeof(*r->names));
	r->names[r->n_names++] = xstrdup(s);
}

static const char *url_of(const json_t *container)
{
	const json_t *v = json_object_get(container, "ModelDataUrl");

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int api_serving_req_parse(const char *body, size_t len,
			  struct api_serving_req *out, struct buf *err)
{
	const json_t *variants, *containers;
	const char *url;
	json_t *root;
	size_t i;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = api__json_load_object(body, len, &root, err);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(name_members) / sizeof(*name_members); i++)
		add_name(out, json_object_get(root, name_members[i]));
	variants = json_object_get(root, "ProductionVariants");
	for (i = 0; json_is_array(variants) && i < json_array_size(variants);
	     i++)
		add_name(out, json_object_get(json_array_get(variants, i),
					      "ModelName"));
	url = url_of(json_object_get(root, "PrimaryContainer"));
	containers = json_object_get(root, "Containers");
	if (!url && json_is_array(containers))
		url = url_of(json_array_get(containers, 0));
	if (url && *url)
		out->model_data_url = xstrdup(url);
	json_decref(root);
	return 0;
}

void api_serving_req_release(struct api_serving_req *r)
{
	size_t i;

	for (i = 0; i < r->n_names; i++)
		free(r->names[i]);
	free(r->names);
	free(r->model_data_url);
	memset(r, 0, sizeof(*r));
}
