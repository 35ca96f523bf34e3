#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/rule_status.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* StatusDetails' most bytes (the service model's limit). */
#define DETAILS_MAX 1024

static const char *const lists[] = {
	"DebugRuleEvaluationStatuses",
	"ProfilerRuleEvaluationStatuses",
};

/* s cut to at most max bytes at a character boundary, as a JSON string. */
static json_t *cut_string(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		n = max;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	return json_stringn(s, n);
}

int api_rule_statuses_build(const struct api_rule_status *s, size_t n,
			    struct buf *out)
{
	json_t *root = json_object();
	json_t *arr, *o;
	size_t i, l;
	int ret;

	for (l = 0; l < 2; l++) {
		arr = json_array();
		for (i = 0; i < n; i++) {
			if (s[i].profiler != (int)l)
				continue;
			o = json_object();
			json_object_set_new(o, "RuleConfigurationName",
					    json_string(s[i].name));
			json_object_set_new(o, "RuleEvaluationStatus",
					    json_string(s[i].status));
			if (s[i].details)
				json_object_set_new(o, "StatusDetails",
						    cut_string(s[i].details,
							       DETAILS_MAX));
			json_object_set_new(o, "LastModifiedTime",
					    api__json_time(s[i].modified_ms));
			json_array_append_new(arr, o);
		}
		if (json_array_size(arr))
			json_object_set_new(root, lists[l], arr);
		else
			json_decref(arr);
	}
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

static char *dup_member(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? xstrdup(v) : NULL;
}

int api_rule_statuses_parse(const char *json, struct api_rule_status **out,
			    size_t *n, struct buf *err)
{
	json_t *root = NULL;
	const json_t *o;
	size_t total = 0, i, l;
	int ret;

	*out = NULL;
	*n = 0;
	ret = api__json_load_object(json, strlen(json), &root, err);
	if (ret)
		return ret;
	for (l = 0; l < 2; l++)
		total += json_array_size(json_object_get(root, lists[l]));
	if (total)
		*out = xcalloc(total, sizeof(**out));
	for (l = 0; l < 2; l++) {
		json_array_foreach(json_object_get(root, lists[l]), i, o)
		{
			struct api_rule_status *s = &(*out)[(*n)++];

			s->profiler = (int)l;
			s->name = dup_member(o, "RuleConfigurationName");
			s->status = dup_member(o, "RuleEvaluationStatus");
			s->details = dup_member(o, "StatusDetails");
			s->modified_ms = api__json_time_ms(
				json_object_get(o, "LastModifiedTime"));
			if (!s->name || !s->status) {
				(void)buf_adds(err, "a rule status lacks its "
						    "name or status");
				ret = ERR_INVALID;
			}
		}
	}
	json_decref(root);
	if (ret) {
		api_rule_statuses_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

void api_rule_statuses_free(struct api_rule_status *s, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++) {
		free(s[i].name);
		free(s[i].status);
		free(s[i].details);
	}
	free(s);
}
