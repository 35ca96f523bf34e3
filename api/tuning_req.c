/*
 * The CreateHyperParameterTuningJob request of create-tuning-job, built
 * from its flags over an optional --cli-input-json document. No I/O.
 *
 * The training job definition reuses create-training-job's builder
 * (api_create_request_build()): the definition is turned into the
 * CreateTrainingJob shape it nearly is (StaticHyperParameters become
 * HyperParameters, a placeholder TrainingJobName), the same flags are
 * applied with the same defaults and checks, and the result is turned
 * back. So both commands take a definition flag the same way.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api/client.h"
#include "api/json_util.h"
#include "api/tuning_req.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Stands in for TrainingJobName while the definition is built. */
#define PLACEHOLDER_NAME "tuning-definition"

/* The canonical spelling of s among names (case-insensitive), or NULL. */
static const char *canonical(const char *s, const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++)
		if (!strcasecmp(s, names[i]))
			return names[i];
	return NULL;
}

static const char *const strategies[] = { "Bayesian", "Random", "Grid",
					  "Hyperband", NULL };
static const char *const early_types[] = { "Off", "Auto", NULL };
static const char *const objective_types[] = { "Maximize", "Minimize", NULL };
static const char *const scalings[] = { "Auto", "Linear", "Logarithmic",
					"ReverseLogarithmic", NULL };
static const char *const kinds[] = { "continuous", "integer", "categorical",
				     NULL };
/* ParameterRanges members, in the order of kinds[]. */
static const char *const kind_members[] = { "ContinuousParameterRanges",
					    "IntegerParameterRanges",
					    "CategoricalParameterRanges" };

/* Whether s is a whole finite number (continuous) or a whole integer. */
static int is_number(const char *s, int integer)
{
	char *end;

	if (!*s)
		return 0;
	errno = 0;
	if (integer)
		(void)strtoll(s, &end, 10);
	else if (!isfinite(strtod(s, &end)))
		return 0;
	return !errno && end != s && !*end;
}

/* Appends a string to array a; ERR_INVALID when s is not UTF-8. */
static int push_str(json_t *a, const char *s)
{
	json_t *v = json_string(s);

	return !v || json_array_append_new(a, v) ? ERR_INVALID : 0;
}

/*
 * "MIN:MAX[:SCALE]" of a numeric range into r (an object with Name).
 */
static int numeric_range(const char *spec, const char *body, int integer,
			 json_t *r, struct buf *err)
{
	char *copy = xstrdup(body);
	char *min = copy, *max, *scale = NULL, *p;
	const char *sc = NULL;
	int ret = ERR_INVALID;

	p = strchr(min, ':');
	if (!p) {
		api__invalid(
			err,
			"invalid --param '%s': expected NAME=%s:MIN:MAX[:SCALE]",
			spec, integer ? "integer" : "continuous");
		goto out;
	}
	*p = '\0';
	max = p + 1;
	p = strchr(max, ':');
	if (p) {
		*p = '\0';
		scale = p + 1;
	}
	if (!is_number(min, integer) || !is_number(max, integer)) {
		api__invalid(err,
			     "invalid --param '%s': MIN and MAX must be %s",
			     spec, integer ? "integers" : "numbers");
		goto out;
	}
	if (scale) {
		sc = canonical(scale, scalings);
		if (!sc) {
			api__invalid(
				err,
				"invalid --param '%s': SCALE must be Auto, "
				"Linear, Logarithmic or ReverseLogarithmic",
				spec);
			goto out;
		}
	}
	if (json_object_set_new(r, "MinValue", json_string(min)) ||
	    json_object_set_new(r, "MaxValue", json_string(max)) ||
	    (sc && json_object_set_new(r, "ScalingType", json_string(sc)))) {
		api__invalid(err, "invalid --param '%s'", spec);
		goto out;
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

/* "A,B,C" of a categorical range into r. */
static int categorical_range(const char *spec, const char *body, json_t *r,
			     struct buf *err)
{
	json_t *values = json_array();
	const char *p = body;

	if (!values || json_object_set_new(r, "Values", values))
		return api__invalid(err, "out of memory");
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char *v;
		int r2;

		if (!n)
			return api__invalid(
				err,
				"invalid --param '%s': empty categorical "
				"value",
				spec);
		v = xstrndup(p, n);
		r2 = push_str(values, v);
		free(v);
		if (r2)
			return api__invalid(
				err, "invalid --param '%s': not UTF-8", spec);
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/*
 * Parses one --param into a range object of kind *kind_out (an index of
 * kinds[]); *range_out is the caller's. Returns 0 or ERR_INVALID.
 */
static int param_parse(const char *spec, int *kind_out, json_t **range_out,
		       struct buf *err)
{
	const char *eq = strchr(spec, '=');
	const char *colon, *kind;
	char *name = NULL, *kname = NULL;
	json_t *r = NULL;
	int k, ret = ERR_INVALID;

	if (!eq || eq == spec || !(colon = strchr(eq + 1, ':')))
		return api__invalid(err,
				    "invalid --param '%s': expected "
				    "NAME=continuous:MIN:MAX[:SCALE], "
				    "NAME=integer:MIN:MAX[:SCALE] or "
				    "NAME=categorical:A,B,...",
				    spec);
	name = xstrndup(spec, (size_t)(eq - spec));
	kname = xstrndup(eq + 1, (size_t)(colon - eq - 1));
	kind = canonical(kname, kinds);
	if (!kind) {
		api__invalid(
			err,
			"invalid --param '%s': the kind '%s' is not continuous, "
			"integer or categorical",
			spec, kname);
		goto out;
	}
	for (k = 0; strcmp(kinds[k], kind); k++)
		;
	r = json_object();
	if (!r || json_object_set_new(r, "Name", json_string(name)) ||
	    !json_object_get(r, "Name")) {
		api__invalid(err, "invalid --param '%s': bad name", spec);
		goto out;
	}
	if (k == 2)
		ret = categorical_range(spec, colon + 1, r, err);
	else
		ret = numeric_range(spec, colon + 1, k == 1, r, err);
	if (!ret) {
		*kind_out = k;
		*range_out = r;
		r = NULL;
	}
out:
	json_decref(r);
	free(name);
	free(kname);
	return ret;
}

/* Returns parent[key] as an object, creating it; NULL when not one. */
static json_t *object_member(json_t *parent, const char *key, struct buf *err)
{
	json_t *o = json_object_get(parent, key);

	if (o) {
		if (!json_is_object(o))
			api__invalid(err,
				     "--cli-input-json: member '%s' must be an "
				     "object",
				     key);
		return json_is_object(o) ? o : NULL;
	}
	o = json_object();
	if (!o || json_object_set_new(parent, key, o)) {
		api__invalid(err, "out of memory");
		return NULL;
	}
	return o;
}

/*
 * Adds range (taking it) of kind k to ranges, replacing any range of the
 * same name whatever its kind: a flag overrides the document.
 */
static int put_range(json_t *ranges, int k, json_t *range, struct buf *err)
{
	const char *name = json_string_value(json_object_get(range, "Name"));
	json_t *list;
	size_t i, j;

	for (i = 0; i < 3; i++) {
		json_t *a = json_object_get(ranges, kind_members[i]);
		json_t *e;

		if (!json_is_array(a))
			continue;
		json_array_foreach(a, j, e)
		{
			const char *n =
				json_string_value(json_object_get(e, "Name"));

			if (n && !strcmp(n, name)) {
				json_array_remove(a, j);
				break;
			}
		}
	}
	list = json_object_get(ranges, kind_members[k]);
	if (!list) {
		list = json_array();
		if (!list || json_object_set_new(ranges, kind_members[k], list))
			goto nomem;
	} else if (!json_is_array(list)) {
		json_decref(range);
		return api__invalid(
			err, "--cli-input-json: member '%s' must be a list",
			kind_members[k]);
	}
	if (json_array_append_new(list, range))
		return api__invalid(err, "out of memory");
	return 0;
nomem:
	json_decref(range);
	return api__invalid(err, "out of memory");
}

/* Moves member from to member to in o (nothing when from is absent). */
static int rename_member(json_t *o, const char *from, const char *to)
{
	json_t *v = json_object_get(o, from);

	if (!v)
		return 0;
	if (json_object_set(o, to, v))
		return ERR_INVALID;
	return json_object_del(o, from) ? ERR_INVALID : 0;
}

/* Checks NAME=VALUE flags here, so that the message names this command's
 * flag. */
static int check_kv(const char *flag, const char *const *v, size_t n,
		    int value_required, struct buf *err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *eq = strchr(v[i], '=');

		if (!eq || eq == v[i] || (value_required && !eq[1]))
			return api__invalid(
				err, "invalid --%s '%s': expected %s", flag,
				v[i],
				value_required ? "NAME=REGEX" : "NAME=VALUE");
	}
	return 0;
}

/*
 * Applies the definition flags to root's TrainingJobDefinition through
 * create-training-job's builder (see the top of the file).
 */
static int apply_definition(json_t *root, const struct api_tuning_flags *f,
			    struct buf *err)
{
	json_t *def = json_object_get(root, "TrainingJobDefinition");
	json_t *built = NULL;
	struct api_client_create flags = *f->def;
	struct buf in = BUF_INIT, out = BUF_INIT;
	char *s = NULL;
	int ret = ERR_INVALID;

	if (check_kv("static", f->def->hyperparameters,
		     f->def->n_hyperparameters, 0, err) ||
	    check_kv("metric-definition", f->def->metrics, f->def->n_metrics, 1,
		     err))
		return ERR_INVALID;
	if (json_object_get(root, "TrainingJobDefinitions")) {
		if (f->def_given)
			return api__invalid(err, "the training job flags need "
						 "TrainingJobDefinition, not "
						 "TrainingJobDefinitions, in "
						 "--cli-input-json");
		return 0;
	}
	if (def && !json_is_object(def))
		return api__invalid(
			err, "--cli-input-json: member "
			     "'TrainingJobDefinition' must be an object");
	def = def ? json_deep_copy(def) : json_object();
	if (!def ||
	    rename_member(def, "StaticHyperParameters", "HyperParameters") ||
	    json_object_set_new(def, "TrainingJobName",
				json_string(PLACEHOLDER_NAME))) {
		api__invalid(err, "out of memory");
		goto out;
	}
	flags.name = NULL;
	s = json_dumps(def, JSON_COMPACT);
	if (!s || buf_adds(&in, s)) {
		api__invalid(err, "out of memory");
		goto out;
	}
	if (api_create_request_build(&flags, in.data, in.len, &out, err))
		goto out;
	built = json_loadb(out.data, out.len, 0, NULL);
	if (!built || json_object_del(built, "TrainingJobName") ||
	    rename_member(built, "HyperParameters", "StaticHyperParameters") ||
	    json_object_set(root, "TrainingJobDefinition", built)) {
		api__invalid(err, "cannot build the training job definition");
		goto out;
	}
	ret = 0;
out:
	json_decref(built);
	json_decref(def);
	free(s);
	buf_release(&in);
	buf_release(&out);
	return ret;
}

/* The --param flags, into the definition's ranges when it has its own. */
static int apply_params(json_t *root, json_t *cfg,
			const struct api_tuning_flags *f, struct buf *err)
{
	json_t *def = json_object_get(root, "TrainingJobDefinition");
	json_t *ranges;
	size_t i;

	if (!f->n_params)
		return 0;
	if (json_object_get(root, "TrainingJobDefinitions"))
		return api__invalid(err,
				    "--param needs TrainingJobDefinition; with "
				    "TrainingJobDefinitions each definition "
				    "has its own HyperParameterRanges");
	if (json_is_object(def) && json_object_get(def, "HyperParameterRanges"))
		ranges = object_member(def, "HyperParameterRanges", err);
	else
		ranges = object_member(cfg, "ParameterRanges", err);
	if (!ranges)
		return ERR_INVALID;
	for (i = 0; i < f->n_params; i++) {
		json_t *range = NULL;
		int k = 0, r = param_parse(f->params[i], &k, &range, err);

		if (!r)
			r = put_range(ranges, k, range, err);
		if (r)
			return r;
	}
	return 0;
}

/* The scalar members of HyperParameterTuningJobConfig from the flags. */
static int apply_config(json_t *cfg, const struct api_tuning_flags *f,
			struct buf *err)
{
	const char *v;
	json_t *o;

	if (f->strategy) {
		v = canonical(f->strategy, strategies);
		if (!v)
			return api__invalid(
				err,
				"invalid --strategy '%s': expected Random, "
				"Grid, Bayesian or Hyperband",
				f->strategy);
		json_object_set_new(cfg, "Strategy", json_string(v));
	} else if (!json_object_get(cfg, "Strategy")) {
		/* The SageMaker SDK's default. */
		json_object_set_new(cfg, "Strategy", json_string("Bayesian"));
	}
	if (f->early_stopping) {
		v = canonical(f->early_stopping, early_types);
		if (!v)
			return api__invalid(
				err,
				"invalid --early-stopping '%s': expected "
				"Off or Auto",
				f->early_stopping);
		json_object_set_new(cfg, "TrainingJobEarlyStoppingType",
				    json_string(v));
	}
	if (f->objective) {
		const char *colon = strchr(f->objective, ':');
		char *type = colon ? xstrndup(f->objective,
					      (size_t)(colon - f->objective)) :
				     NULL;

		v = type ? canonical(type, objective_types) : NULL;
		free(type);
		if (!v || !colon[1])
			return api__invalid(
				err,
				"invalid --objective '%s': expected "
				"Maximize:METRIC or Minimize:METRIC",
				f->objective);
		o = json_pack("{s:s, s:s}", "Type", v, "MetricName", colon + 1);
		if (!o)
			return api__invalid(err, "invalid --objective '%s'",
					    f->objective);
		json_object_set_new(cfg, "HyperParameterTuningJobObjective", o);
	}
	o = object_member(cfg, "ResourceLimits", err);
	if (!o)
		return ERR_INVALID;
	if (f->max_jobs)
		json_object_set_new(o, "MaxNumberOfTrainingJobs",
				    json_integer(f->max_jobs));
	if (f->max_parallel)
		json_object_set_new(o, "MaxParallelTrainingJobs",
				    json_integer(f->max_parallel));
	else if (!json_object_get(o, "MaxParallelTrainingJobs"))
		/* Required by the model; the SageMaker SDK's default. */
		json_object_set_new(o, "MaxParallelTrainingJobs",
				    json_integer(1));
	if (f->has_seed)
		json_object_set_new(cfg, "RandomSeed", json_integer(f->seed));
	return 0;
}

int api_tuning_request_build(const struct api_tuning_flags *f,
			     const char *base_json, size_t len, struct buf *out,
			     struct buf *err)
{
	json_t *root, *cfg;
	char *s = NULL;
	int ret = ERR_INVALID;

	if (api__cli_input_load(base_json, len, &root, err))
		return ERR_INVALID;
	if (f->name && json_object_set_new(root, "HyperParameterTuningJobName",
					   json_string(f->name))) {
		api__invalid(err, "invalid tuning job name '%s'", f->name);
		goto out;
	}
	if (!json_is_string(
		    json_object_get(root, "HyperParameterTuningJobName"))) {
		api__invalid(err, "missing the tuning job's NAME "
				  "(HyperParameterTuningJobName)");
		goto out;
	}
	cfg = object_member(root, "HyperParameterTuningJobConfig", err);
	/* The definition last: its "missing --image" is the least specific
	 * message. */
	if (!cfg || apply_config(cfg, f, err) ||
	    apply_params(root, cfg, f, err) || apply_definition(root, f, err))
		goto out;
	s = json_dumps(root, JSON_COMPACT);
	if (!s || buf_adds(out, s)) {
		api__invalid(err, "request too large");
		goto out;
	}
	ret = 0;
out:
	free(s);
	json_decref(root);
	return ret;
}
