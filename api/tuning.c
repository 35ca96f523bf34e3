/*
 * Hyperparameter tuning jobs on the wire (api/tuning.h). The model checks
 * types and bounds; this file adds SageMaker's rules for ranges,
 * strategies and definitions, and refuses what the controller cannot
 * honour. The answers are built in api/tuning_answer.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/algorithm.h"
#include "api/json_util.h"
#include "api/tuning.h"
#include "api/validate.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* SageMaker's limit on tuned hyperparameters, all kinds together. */
#define MAX_RANGES 30

/* Keys of StaticHyperParameters that give Hyperband its MaxResource. */
static const char *const epoch_keys[] = { "epochs", "numepochs", "n-epochs",
					  "n_epochs", "num_epochs" };

__attribute__((format(printf, 2, 3))) static int fail(struct buf *err,
						      const char *fmt, ...)
{
	va_list ap;

	buf_reset(err);
	(void)buf_adds(err, "1 validation error detected: ");
	va_start(ap, fmt);
	(void)buf_vaddf(err, fmt, ap);
	va_end(ap);
	return ERR_INVALID;
}

/*
 * Members the controller does not honour, refused by name rather than
 * accepted and ignored (docs/tuning.md says why for each).
 */
static int refuse_members(const json_t *root, struct buf *err)
{
	static const struct {
		const char *parent; /* NULL: the request */
		const char *member;
		const char *why;
	} refused[] = {
		{ NULL, "Autotune",
		  "Autotune is not supported; give the strategy, ranges and "
		  "limits explicitly" },
		{ "ParameterRanges", "AutoParameters",
		  "AutoParameters is not supported; give each range "
		  "explicitly" },
	};
	const json_t *cfg =
		json_object_get(root, "HyperParameterTuningJobConfig");
	const json_t *defs = json_object_get(root, "TrainingJobDefinitions");
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		const char *m = refused[i].member;
		int hit = 0;

		if (!refused[i].parent) {
			hit = json_object_get(root, m) != NULL;
		} else if (!strcmp(refused[i].parent, "ParameterRanges")) {
			const json_t *pr =
				json_object_get(cfg, "ParameterRanges");
			const json_t *arr = json_object_get(pr, m);

			hit = json_array_size(arr) > 0;
			for (k = 0; k < json_array_size(defs) && !hit; k++) {
				pr = json_object_get(json_array_get(defs, k),
						     "HyperParameterRanges");
				hit = json_array_size(json_object_get(pr, m)) >
				      0;
			}
			pr = json_object_get(
				json_object_get(root, "TrainingJobDefinition"),
				"HyperParameterRanges");
			hit = hit || json_array_size(json_object_get(pr, m));
		} else {
			hit = json_object_get(
				      json_object_get(root,
						      "TrainingJobDefinition"),
				      m) != NULL;
			for (k = 0; k < json_array_size(defs) && !hit; k++)
				hit = json_object_get(json_array_get(defs, k),
						      m) != NULL;
		}
		if (hit)
			return fail(err, "%s", refused[i].why);
	}
	return 0;
}

/* A member of obj not in known[] (NULL-terminated), or NULL. */
static const char *unknown_member(const json_t *obj, const char *const *known)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)obj, key, v)
	{
		for (i = 0; known[i]; i++)
			if (!strcmp(known[i], key))
				break;
		if (!known[i])
			return key;
	}
	return NULL;
}

/* Members neither model knows are refused, not ignored. */
static int refuse_unknown(const json_t *root, struct buf *err)
{
	static const char *const top[] = { "HyperParameterTuningJobName",
					   "HyperParameterTuningJobConfig",
					   "TrainingJobDefinition",
					   "TrainingJobDefinitions",
					   "WarmStartConfig",
					   "Tags",
					   "Autotune",
					   NULL };
	static const char *const cfg[] = { "Strategy",
					   "StrategyConfig",
					   "HyperParameterTuningJobObjective",
					   "ResourceLimits",
					   "ParameterRanges",
					   "TrainingJobEarlyStoppingType",
					   "TuningJobCompletionCriteria",
					   "RandomSeed",
					   NULL };
	static const char *const def[] = {
		"DefinitionName",
		"TuningObjective",
		"HyperParameterRanges",
		"StaticHyperParameters",
		"AlgorithmSpecification",
		"RoleArn",
		"InputDataConfig",
		"VpcConfig",
		"OutputDataConfig",
		"ResourceConfig",
		"HyperParameterTuningResourceConfig",
		"StoppingCondition",
		"EnableNetworkIsolation",
		"EnableInterContainerTrafficEncryption",
		"EnableManagedSpotTraining",
		"CheckpointConfig",
		"RetryStrategy",
		"Environment",
		NULL
	};
	const json_t *defs = json_object_get(root, "TrainingJobDefinitions");
	const char *m;
	size_t i;

	m = unknown_member(root, top);
	if (m)
		return fail(err, "Unknown member '%s' of the request", m);
	m = unknown_member(
		json_object_get(root, "HyperParameterTuningJobConfig"), cfg);
	if (m)
		return fail(err,
			    "Unknown member '%s' of "
			    "HyperParameterTuningJobConfig",
			    m);
	m = unknown_member(json_object_get(root, "TrainingJobDefinition"), def);
	for (i = 0; !m && i < json_array_size(defs); i++)
		m = unknown_member(json_array_get(defs, i), def);
	if (m)
		return fail(err,
			    "Unknown member '%s' of a training job "
			    "definition",
			    m);
	return 0;
}

static int parse_number(const char *s, double *out)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	if (errno || *end || !isfinite(*out))
		return -1;
	return 0;
}

static int parse_integer(const char *s, double *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v > (1LL << 52) || v < -(1LL << 52))
		return -1;
	*out = (double)v;
	return 0;
}

static int scale_of(const json_t *r, enum tune_scale *scale, int *given)
{
	const char *s = json_string_value(json_object_get(r, "ScalingType"));

	*given = s && strcmp(s, "Auto");
	if (!s || !strcmp(s, "Auto") || !strcmp(s, "Linear"))
		*scale = TUNE_SCALE_LINEAR;
	else if (!strcmp(s, "Logarithmic"))
		*scale = TUNE_SCALE_LOG;
	else
		*scale = TUNE_SCALE_REVLOG;
	return 0;
}

/* One Integer or Continuous range; path names it in errors. */
static int numeric_range(const json_t *r, enum tune_kind kind, const char *path,
			 struct api_tuning_range *out, struct buf *err)
{
	const char *lo = json_string_value(json_object_get(r, "MinValue"));
	const char *hi = json_string_value(json_object_get(r, "MaxValue"));
	const char *what = kind == TUNE_INTEGER ? "an integer" : "a number";
	int (*num)(const char *, double *) =
		kind == TUNE_INTEGER ? parse_integer : parse_number;

	out->p.kind = kind;
	scale_of(r, &out->p.scale, &out->scale_given);
	if (num(lo, &out->p.min))
		return fail(err, "%s: MinValue '%s' is not %s", path, lo, what);
	if (num(hi, &out->p.max))
		return fail(err, "%s: MaxValue '%s' is not %s", path, hi, what);
	if (kind == TUNE_CONTINUOUS ? out->p.min >= out->p.max :
				      out->p.min > out->p.max)
		return fail(err,
			    "%s: MinValue %s must be less than MaxValue %s",
			    path, lo, hi);
	if (out->p.scale == TUNE_SCALE_LOG && out->p.min <= 0)
		return fail(err,
			    "%s: ScalingType Logarithmic needs MinValue > 0, "
			    "not %s",
			    path, lo);
	if (out->p.scale == TUNE_SCALE_REVLOG && kind == TUNE_INTEGER)
		return fail(err,
			    "%s: ScalingType ReverseLogarithmic is only for "
			    "continuous ranges",
			    path);
	if (out->p.scale == TUNE_SCALE_REVLOG &&
	    (out->p.min < 0 || out->p.max >= 1))
		return fail(err,
			    "%s: ScalingType ReverseLogarithmic needs 0 <= "
			    "MinValue < MaxValue < 1, not [%s, %s]",
			    path, lo, hi);
	if (!out->scale_given)
		out->p.scale = tune_scale_auto(&out->p);
	return 0;
}

static int categorical_range(const json_t *r, const char *path,
			     struct api_tuning_range *out, struct buf *err)
{
	const json_t *vals = json_object_get(r, "Values");
	size_t i, k, n = json_array_size(vals);

	out->p.kind = TUNE_CATEGORICAL;
	out->p.scale = TUNE_SCALE_LINEAR;
	out->values = xcalloc(n + 1, sizeof(*out->values));
	for (i = 0; i < n; i++) {
		const char *v = json_string_value(json_array_get(vals, i));

		for (k = 0; k < i; k++)
			if (!strcmp(out->values[k], v))
				return fail(err,
					    "%s: value '%s' is given twice",
					    path, v);
		out->values[i] = xstrdup(v);
	}
	out->p.n_values = n;
	return 0;
}

/* Reads the three lists of a ParameterRanges object into d->ranges. */
static int parse_ranges(const json_t *pr, const char *where, const json_t *stat,
			struct api_tuning_def *d, struct buf *err)
{
	static const struct {
		const char *list;
		enum tune_kind kind;
	} kinds[] = {
		{ "IntegerParameterRanges", TUNE_INTEGER },
		{ "ContinuousParameterRanges", TUNE_CONTINUOUS },
		{ "CategoricalParameterRanges", TUNE_CATEGORICAL },
	};
	size_t total = 0, i, k, j;
	char path[200];
	int ret;

	for (k = 0; k < 3; k++)
		total += json_array_size(json_object_get(pr, kinds[k].list));
	if (total > MAX_RANGES) {
		snprintf(path, sizeof(path), "%zu", total);
		return fail(err,
			    "%s: at most 30 hyperparameters can be tuned, "
			    "not %s",
			    where, path);
	}
	d->ranges = xcalloc(total ? total : 1, sizeof(*d->ranges));
	for (k = 0; k < 3; k++) {
		const json_t *arr = json_object_get(pr, kinds[k].list);

		for (i = 0; i < json_array_size(arr); i++) {
			const json_t *r = json_array_get(arr, i);
			struct api_tuning_range *out = &d->ranges[d->n_ranges];
			const char *name =
				json_string_value(json_object_get(r, "Name"));

			snprintf(path, sizeof(path), "%s.%s[%zu]", where,
				 kinds[k].list, i);
			if (!name || !*name)
				return fail(err, "%s: Name must not be empty",
					    path);
			for (j = 0; j < d->n_ranges; j++)
				if (!strcmp(d->ranges[j].name, name))
					return fail(err,
						    "%s: hyperparameter '%s' "
						    "has more than one range",
						    path, name);
			if (json_object_get(stat, name))
				return fail(err,
					    "%s: hyperparameter '%s' is also "
					    "in StaticHyperParameters; it can "
					    "be tuned or static, not both",
					    path, name);
			out->name = xstrdup(name);
			d->n_ranges++;
			ret = kinds[k].kind == TUNE_CATEGORICAL ?
				      categorical_range(r, path, out, err) :
				      numeric_range(r, kinds[k].kind, path, out,
						    err);
			if (ret)
				return ret;
		}
	}
	d->params = xcalloc(d->n_ranges ? d->n_ranges : 1, sizeof(*d->params));
	for (i = 0; i < d->n_ranges; i++) {
		d->ranges[i].p.name = d->ranges[i].name;
		d->params[i] = d->ranges[i].p;
	}
	d->space.params = d->params;
	d->space.n = d->n_ranges;
	return 0;
}

/*
 * HyperParameterTuningResourceConfig (what the SDK's tuner sends) stands
 * for ResourceConfig: one instance type, as InstanceType or as the single
 * entry of InstanceConfigs.
 */
static int check_tuning_resources(const json_t *def, const char *where,
				  struct buf *err)
{
	const json_t *rc =
		json_object_get(def, "HyperParameterTuningResourceConfig");
	const json_t *ics = json_object_get(rc, "InstanceConfigs");

	if (!rc && !json_object_get(def, "ResourceConfig"))
		return fail(err,
			    "%s: ResourceConfig or "
			    "HyperParameterTuningResourceConfig is required",
			    where);
	if (!rc)
		return 0;
	if (json_object_get(def, "ResourceConfig"))
		return fail(err,
			    "%s: give ResourceConfig or "
			    "HyperParameterTuningResourceConfig, not both",
			    where);
	if (json_array_size(ics) > 1)
		return fail(err,
			    "%s.HyperParameterTuningResourceConfig."
			    "InstanceConfigs: one instance type is supported, "
			    "not %zu",
			    where, json_array_size(ics));
	if (ics && json_object_get(rc, "InstanceType"))
		return fail(err,
			    "%s.HyperParameterTuningResourceConfig: give "
			    "InstanceType or InstanceConfigs, not both",
			    where);
	return 0;
}

static int has_metric(const json_t *def, const char *metric)
{
	const json_t *alg = json_object_get(def, "AlgorithmSpecification");
	const json_t *mds = json_object_get(alg, "MetricDefinitions");
	const json_t *prog =
		json_object_get(json_object_get(def, "StaticHyperParameters"),
				"sagemaker_program");
	size_t i;

	/* A built-in algorithm's metrics need no definitions. */
	if (!json_array_size(mds))
		return api_algo_has_metric(json_string_value(json_object_get(
						   alg, "TrainingImage")),
					   json_string_value(prog), metric);
	for (i = 0; i < json_array_size(mds); i++)
		if (!strcmp(json_string_value(json_object_get(
				    json_array_get(mds, i), "Name")),
			    metric))
			return 1;
	return 0;
}

/*
 * Hyperband's MaxResource for definition d: HyperbandStrategyConfig's, or
 * an epochs value among the definition's StaticHyperParameters.
 */
static int parse_hb_max(const json_t *cfg, const json_t *stat,
			const char *where, const struct api_tuning_spec *s,
			struct api_tuning_def *d, struct buf *err)
{
	const json_t *hb =
		json_object_get(json_object_get(cfg, "StrategyConfig"),
				"HyperbandStrategyConfig");
	const json_t *mx = json_object_get(hb, "MaxResource");
	char num[32];
	size_t i;

	d->hb_max = mx ? (double)json_integer_value(mx) : 0;
	for (i = 0; !mx && i < sizeof(epoch_keys) / sizeof(*epoch_keys); i++) {
		const char *v =
			json_string_value(json_object_get(stat, epoch_keys[i]));
		double e;

		if (v && !parse_integer(v, &e) && e >= 1)
			d->hb_max = e;
	}
	if (d->hb_max < 1)
		return fail(err,
			    "Strategy Hyperband needs "
			    "HyperbandStrategyConfig.MaxResource, or "
			    "an epochs value in %s.StaticHyperParameters",
			    where);
	if (s->hb_min > d->hb_max) {
		snprintf(num, sizeof(num), "%g", d->hb_max);
		return fail(err,
			    "HyperbandStrategyConfig.MinResource "
			    "must not exceed MaxResource (%s)",
			    num);
	}
	return 0;
}

static int parse_def(const json_t *def, const json_t *cfg, const char *where,
		     struct api_tuning_spec *s, struct api_tuning_def *d,
		     struct buf *err)
{
	const json_t *obj = json_object_get(def, "TuningObjective");
	const json_t *pr = json_object_get(def, "HyperParameterRanges");
	const json_t *cpr = json_object_get(cfg, "ParameterRanges");
	const json_t *stat = json_object_get(def, "StaticHyperParameters");
	char path[160];
	size_t i;
	int ret;

	d->json = json_dumps(def, JSON_COMPACT);
	d->name = json_string_value(json_object_get(def, "DefinitionName")) ?
			  xstrdup(json_string_value(
				  json_object_get(def, "DefinitionName"))) :
			  NULL;
	ret = check_tuning_resources(def, where, err);
	if (ret)
		return ret;
	if (!obj)
		obj = json_object_get(cfg, "HyperParameterTuningJobObjective");
	if (!obj)
		return fail(err,
			    "%s: a TuningObjective, or "
			    "HyperParameterTuningJobConfig."
			    "HyperParameterTuningJobObjective, is required",
			    where);
	d->metric =
		xstrdup(json_string_value(json_object_get(obj, "MetricName")));
	d->maximize = !strcmp(json_string_value(json_object_get(obj, "Type")),
			      "Maximize");
	if (!has_metric(def, d->metric))
		return fail(err,
			    "The objective metric '%s' is not among the "
			    "MetricDefinitions of %s.AlgorithmSpecification",
			    d->metric, where);
	if (pr && cpr)
		return fail(err,
			    "%s: give HyperParameterRanges or "
			    "HyperParameterTuningJobConfig.ParameterRanges, "
			    "not both",
			    where);
	snprintf(path, sizeof(path), "%s.%s",
		 pr ? where : "HyperParameterTuningJobConfig",
		 pr ? "HyperParameterRanges" : "ParameterRanges");
	ret = parse_ranges(pr ? pr : cpr, path, stat, d, err);
	if (ret)
		return ret;
	if (!d->n_ranges)
		return fail(err,
			    "%s: at least one hyperparameter range is "
			    "required",
			    path);
	if (s->strategy == TUNE_GRID)
		for (i = 0; i < d->n_ranges; i++)
			if (d->ranges[i].p.kind != TUNE_CATEGORICAL)
				return fail(err,
					    "Strategy Grid takes only "
					    "CategoricalParameterRanges; "
					    "'%s' is not categorical",
					    d->ranges[i].name);
	if (s->strategy == TUNE_HYPERBAND)
		return parse_hb_max(cfg, stat, where, s, d, err);
	return 0;
}

/* Strategy: the enum and the name Describe and List give back. */
static void parse_strategy(const char *strat, struct api_tuning_spec *s)
{
	static const struct {
		const char *name;
		enum tune_strategy strategy;
	} strategies[] = {
		{ "Random", TUNE_RANDOM },
		{ "Grid", TUNE_GRID },
		{ "Bayesian", TUNE_BAYESIAN },
	};
	size_t i;

	/* The model allows these four; anything else reads as Hyperband. */
	s->strategy_name = "Hyperband";
	s->strategy = TUNE_HYPERBAND;
	for (i = 0; i < sizeof(strategies) / sizeof(*strategies); i++)
		if (!strcmp(strat, strategies[i].name)) {
			s->strategy_name = strategies[i].name;
			s->strategy = strategies[i].strategy;
		}
}

/* ResourceLimits. */
static int parse_limits(const json_t *lim, const char *strat,
			struct api_tuning_spec *s, struct buf *err)
{
	const json_t *v = json_object_get(lim, "MaxNumberOfTrainingJobs");

	s->max_jobs = v ? (int)json_integer_value(v) : 0;
	if (!v && s->strategy != TUNE_GRID)
		return fail(err,
			    "ResourceLimits.MaxNumberOfTrainingJobs is "
			    "required for Strategy %s",
			    strat);
	if (s->max_jobs > 500)
		return fail(err,
			    "ResourceLimits.MaxNumberOfTrainingJobs must be "
			    "at most 500");
	s->max_parallel = (int)json_integer_value(
		json_object_get(lim, "MaxParallelTrainingJobs"));
	if (s->max_parallel > 100)
		return fail(err,
			    "ResourceLimits.MaxParallelTrainingJobs must be "
			    "at most 100");
	v = json_object_get(lim, "MaxRuntimeInSeconds");
	s->max_runtime_s = v ? json_integer_value(v) : 0;
	return 0;
}

/* TrainingJobEarlyStoppingType and HyperbandStrategyConfig. */
static int parse_stopping(const json_t *cfg, const char *strat,
			  struct api_tuning_spec *s, struct buf *err)
{
	const json_t *es = json_object_get(cfg, "TrainingJobEarlyStoppingType");
	const json_t *hb =
		json_object_get(json_object_get(cfg, "StrategyConfig"),
				"HyperbandStrategyConfig");
	const json_t *v;

	s->early_stopping = es && !strcmp(json_string_value(es), "Auto");
	if (hb && s->strategy != TUNE_HYPERBAND)
		return fail(err,
			    "StrategyConfig.HyperbandStrategyConfig is only "
			    "for Strategy Hyperband, not %s",
			    strat);
	if (s->strategy == TUNE_HYPERBAND && s->early_stopping)
		return fail(err, "Strategy Hyperband stops jobs early itself; "
				 "TrainingJobEarlyStoppingType must be Off");
	if (s->strategy == TUNE_GRID && s->early_stopping)
		return fail(err, "TrainingJobEarlyStoppingType Auto is not "
				 "supported with Strategy Grid");
	v = json_object_get(hb, "MinResource");
	s->hb_min = v ? (double)json_integer_value(v) : 1;
	return 0;
}

/* TuningJobCompletionCriteria. */
static int parse_criteria(const json_t *crit, struct api_tuning_spec *s,
			  struct buf *err)
{
	const json_t *v = json_object_get(crit, "TargetObjectiveMetricValue");

	if (v) {
		s->has_target = 1;
		s->target = json_number_value(v);
	}
	s->not_improving = (int)json_integer_value(json_object_get(
		json_object_get(crit, "BestObjectiveNotImproving"),
		"MaxNumberOfTrainingJobsNotImproving"));
	v = json_object_get(json_object_get(crit, "ConvergenceDetected"),
			    "CompleteOnConvergence");
	s->convergence = v && !strcmp(json_string_value(v), "Enabled");
	if (s->strategy == TUNE_GRID &&
	    (s->has_target || s->not_improving || s->convergence))
		return fail(err, "TuningJobCompletionCriteria is not supported "
				 "with Strategy Grid, which runs every "
				 "combination");
	return 0;
}

static int parse_config(const json_t *cfg, struct api_tuning_spec *s,
			struct buf *err)
{
	const char *strat = json_string_value(json_object_get(cfg, "Strategy"));
	const json_t *v;
	int ret;

	parse_strategy(strat, s);
	ret = parse_limits(json_object_get(cfg, "ResourceLimits"), strat, s,
			   err);
	if (!ret)
		ret = parse_stopping(cfg, strat, s, err);
	if (!ret)
		ret = parse_criteria(
			json_object_get(cfg, "TuningJobCompletionCriteria"), s,
			err);
	if (ret)
		return ret;
	v = json_object_get(cfg, "RandomSeed");
	if (v) {
		s->has_seed = 1;
		s->seed = (uint64_t)json_integer_value(v);
	}
	return 0;
}

/*
 * As the service does, each definition's StaticHyperParameters carry
 * "_tuning_objective_metric": the objective's metric name (the SDK's
 * HyperparameterTuner.attach reads it back from Describe), unless given.
 */
static void inject_objective(json_t *root)
{
	json_t *cfg = json_object_get(root, "HyperParameterTuningJobConfig");
	json_t *one = json_object_get(root, "TrainingJobDefinition");
	json_t *many = json_object_get(root, "TrainingJobDefinitions");
	size_t i, n = one ? 1 : json_array_size(many);

	for (i = 0; i < n; i++) {
		json_t *def = one ? one : json_array_get(many, i);
		json_t *obj = json_object_get(def, "TuningObjective");
		json_t *metric;
		json_t *stat;

		if (!obj)
			obj = json_object_get(
				cfg, "HyperParameterTuningJobObjective");
		metric = json_object_get(obj, "MetricName");
		if (!json_is_string(metric))
			continue;
		stat = json_object_get(def, "StaticHyperParameters");
		if (!stat) {
			stat = json_object();
			json_object_set_new(def, "StaticHyperParameters", stat);
		}
		if (!json_object_get(stat, "_tuning_objective_metric"))
			json_object_set(stat, "_tuning_objective_metric",
					metric);
	}
}

/* The config's HyperParameterTuningJobObjective, when it has one. */
static void parse_objective(const json_t *cfg, struct api_tuning_spec *s)
{
	const json_t *obj =
		json_object_get(cfg, "HyperParameterTuningJobObjective");

	s->metric = obj ? xstrdup(json_string_value(
				  json_object_get(obj, "MetricName"))) :
			  NULL;
	if (s->metric)
		s->maximize =
			!strcmp(json_string_value(json_object_get(obj, "Type")),
				"Maximize");
}

/* Definition i of TrainingJobDefinition (one) or ...Definitions (many). */
static int parse_def_at(const json_t *root, size_t i, struct api_tuning_spec *s,
			struct buf *err)
{
	const json_t *cfg =
		json_object_get(root, "HyperParameterTuningJobConfig");
	const json_t *one = json_object_get(root, "TrainingJobDefinition");
	const json_t *many = json_object_get(root, "TrainingJobDefinitions");
	const json_t *def = one ? one : json_array_get(many, i);
	char where[64];
	size_t k;
	int ret;

	if (one)
		snprintf(where, sizeof(where), "TrainingJobDefinition");
	else
		snprintf(where, sizeof(where), "TrainingJobDefinitions[%zu]",
			 i);
	if (many && !json_object_get(def, "DefinitionName"))
		return fail(err, "%s: DefinitionName is required", where);
	if (many && json_object_get(cfg, "ParameterRanges"))
		return fail(err, "With TrainingJobDefinitions, give "
				 "each definition's HyperParameterRanges, "
				 "not HyperParameterTuningJobConfig."
				 "ParameterRanges");
	ret = parse_def(def, cfg, where, s, &s->defs[i], err);
	if (ret)
		return ret;
	for (k = 0; k < i; k++)
		if (s->defs[k].name &&
		    !strcmp(s->defs[k].name, s->defs[i].name))
			return fail(err, "DefinitionName '%s' is given twice",
				    s->defs[i].name);
	if (s->metric && strcmp(s->defs[i].metric, s->metric) &&
	    !json_object_get(def, "TuningObjective"))
		return fail(err, "internal: objective mismatch");
	return 0;
}

/* WarmStartConfig, when given: its type and its parents' names. */
static int parse_warm(const json_t *warm, struct api_tuning_spec *s,
		      struct buf *err)
{
	const json_t *ps =
		json_object_get(warm, "ParentHyperParameterTuningJobs");
	size_t i;

	if (!warm)
		return 0;
	s->warm = !strcmp(json_string_value(
				  json_object_get(warm, "WarmStartType")),
			  "TransferLearning") ?
			  API_WARM_TRANSFER :
			  API_WARM_IDENTICAL;
	s->n_parents = json_array_size(ps);
	s->parents = xcalloc(s->n_parents + 1, sizeof(*s->parents));
	for (i = 0; i < s->n_parents; i++) {
		const char *p = json_string_value(json_object_get(
			json_array_get(ps, i), "HyperParameterTuningJobName"));

		if (!p)
			return fail(err, "WarmStartConfig."
					 "ParentHyperParameterTuningJobs[]"
					 ": HyperParameterTuningJobName is "
					 "required");
		if (!strcmp(p, s->name))
			return fail(err,
				    "WarmStartConfig: a tuning job "
				    "cannot be its own parent (%s)",
				    p);
		s->parents[i] = xstrdup(p);
	}
	return 0;
}

/* What Describe echoes: the request without its Tags (compact). */
static int echo_request(const json_t *root, struct api_tuning_spec *s)
{
	json_t *echo = json_deep_copy(root);
	struct buf out = BUF_INIT;
	int ret;

	json_object_del(echo, "Tags");
	ret = api__json_dump_to(echo, &out);
	s->request_json = buf_detach(&out, NULL);
	json_decref(echo);
	return ret;
}

static int parse_root(json_t *root, int stored, struct api_tuning_spec *s,
		      struct buf *err)
{
	const json_t *cfg =
		json_object_get(root, "HyperParameterTuningJobConfig");
	const json_t *one = json_object_get(root, "TrainingJobDefinition");
	const json_t *many = json_object_get(root, "TrainingJobDefinitions");
	size_t i;
	int ret;

	s->name = xstrdup(json_string_value(
		json_object_get(root, "HyperParameterTuningJobName")));
	ret = refuse_unknown(root, err);
	if (!ret)
		ret = refuse_members(root, err);
	if (!ret)
		ret = parse_config(cfg, s, err);
	if (ret)
		return ret;
	if (!!one == !!many)
		return fail(err,
			    "Give exactly one of TrainingJobDefinition and "
			    "TrainingJobDefinitions");
	parse_objective(cfg, s);
	inject_objective(root);
	s->n_defs = one ? 1 : json_array_size(many);
	s->defs = xcalloc(s->n_defs, sizeof(*s->defs));
	for (i = 0; i < s->n_defs && !ret; i++)
		ret = parse_def_at(root, i, s, err);
	if (ret)
		return ret;
	if (s->strategy == TUNE_GRID && s->n_defs > 1)
		return fail(err,
			    "Strategy Grid takes one TrainingJobDefinition");
	ret = parse_warm(json_object_get(root, "WarmStartConfig"), s, err);
	if (!ret && !stored)
		ret = api__tags_from_json(json_object_get(root, "Tags"),
					  &s->tags, &s->n_tags, err);
	if (ret)
		return ret;
	return echo_request(root, s);
}

static int parse(const char *json, size_t len, int stored,
		 struct api_tuning_spec *s, struct buf *err)
{
	json_t *root;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate("CreateHyperParameterTuningJobRequest", root, err);
	if (!ret)
		ret = parse_root(root, stored, s, err);
	json_decref(root);
	if (ret)
		api_tuning_release(s);
	return ret;
}

int api_tuning_parse(const char *json, size_t len, struct api_tuning_spec *s,
		     struct buf *err)
{
	return parse(json, len, 0, s, err);
}

int api_tuning_load(const char *request_json, struct api_tuning_spec *s,
		    struct buf *err)
{
	return parse(request_json, strlen(request_json), 1, s, err);
}

void api_tuning_release(struct api_tuning_spec *s)
{
	size_t i, k, j;

	for (i = 0; i < s->n_defs; i++) {
		struct api_tuning_def *d = &s->defs[i];

		free(d->name);
		free(d->json);
		free(d->metric);
		for (k = 0; k < d->n_ranges; k++) {
			free(d->ranges[k].name);
			for (j = 0;
			     d->ranges[k].values && d->ranges[k].values[j]; j++)
				free(d->ranges[k].values[j]);
			free(d->ranges[k].values);
		}
		free(d->ranges);
		free(d->params);
	}
	free(s->defs);
	for (i = 0; i < s->n_parents; i++)
		free(s->parents[i]);
	free(s->parents);
	for (i = 0; i < s->n_tags; i++) {
		free(s->tags[i].key);
		free(s->tags[i].value);
	}
	free(s->tags);
	free(s->name);
	free(s->metric);
	free(s->request_json);
	memset(s, 0, sizeof(*s));
}

/* The shortest text that reads back as v. */
static char *fmt_double(double v)
{
	char tmp[64];
	int prec;

	for (prec = 6; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	return xstrdup(tmp);
}

char **api_tuning_values(const struct api_tuning_def *d, const double *x)
{
	char **out = xcalloc(d->n_ranges + 1, sizeof(*out));
	size_t i;

	for (i = 0; i < d->n_ranges; i++) {
		const struct api_tuning_range *r = &d->ranges[i];
		char tmp[32];

		if (r->p.kind == TUNE_CATEGORICAL) {
			size_t k = (size_t)llround(x[i]);

			out[i] = xstrdup(r->values[k < r->p.n_values ? k : 0]);
		} else if (r->p.kind == TUNE_INTEGER) {
			snprintf(tmp, sizeof(tmp), "%lld", llround(x[i]));
			out[i] = xstrdup(tmp);
		} else {
			out[i] = fmt_double(x[i]);
		}
	}
	return out;
}

int api_tuning_point(const struct api_tuning_def *d, char *const *names,
		     char *const *values, size_t n, double *x)
{
	size_t i, k;

	for (i = 0; i < d->n_ranges; i++) {
		const struct api_tuning_range *r = &d->ranges[i];
		const char *v = NULL;

		for (k = 0; k < n && !v; k++)
			if (!strcmp(names[k], r->name))
				v = values[k];
		if (!v)
			return ERR_INVALID;
		if (r->p.kind == TUNE_CATEGORICAL) {
			for (k = 0; k < r->p.n_values; k++)
				if (!strcmp(r->values[k], v))
					break;
			if (k == r->p.n_values)
				return ERR_INVALID;
			x[i] = (double)k;
			continue;
		}
		if (parse_number(v, &x[i]) || x[i] < r->p.min ||
		    x[i] > r->p.max)
			return ERR_INVALID;
	}
	return 0;
}
