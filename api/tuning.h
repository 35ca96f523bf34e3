#ifndef API_TUNING_H
#define API_TUNING_H

/*
 * Hyperparameter tuning jobs on the wire (docs/tuning.md): the requests of
 * CreateHyperParameterTuningJob and its siblings, validated against the
 * service model and then against SageMaker's rules for each range, and
 * the answers built from what the controller stores.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/job_spec.h"
#include "common/buf.h"
#include "common/tune_space.h"

/* One tuned hyperparameter: the optimizer's view plus the wire's. */
struct api_tuning_range {
	struct tune_param p; /* p.name is name */
	char *name;
	char **values;	 /* categorical: the values, p.n_values of them */
	int scale_given; /* ScalingType was given (not Auto) */
};

/* One training job definition with its ranges and objective. */
struct api_tuning_def {
	char *name;   /* DefinitionName, NULL for the single form */
	char *json;   /* the definition as given (compact JSON) */
	char *metric; /* objective metric name */
	int maximize;
	struct api_tuning_range *ranges;
	size_t n_ranges;
	struct tune_param *params; /* the ranges' p, for tune_space */
	struct tune_space space;
	double hb_max; /* Hyperband: MaxResource (given or inferred) */
};

enum api_warm_start { API_WARM_NONE, API_WARM_IDENTICAL, API_WARM_TRANSFER };

struct api_tuning_spec {
	char *name;
	char *request_json; /* what Describe echoes (compact) */
	enum tune_strategy strategy;
	const char *strategy_name;
	char *metric; /* the config's objective, NULL when per definition */
	int maximize;
	int max_jobs; /* 0: Grid without a limit (the grid's size) */
	int max_parallel;
	int64_t max_runtime_s; /* 0: none */
	int early_stopping;    /* TrainingJobEarlyStoppingType Auto */
	double hb_min;	       /* Hyperband MinResource (default 1) */
	int has_target;
	double target;
	int not_improving; /* MaxNumberOfTrainingJobsNotImproving, 0: none */
	int convergence;   /* CompleteOnConvergence Enabled */
	int has_seed;
	uint64_t seed;
	struct api_tuning_def *defs;
	size_t n_defs;
	enum api_warm_start warm;
	char **parents;
	size_t n_parents;
	struct api_kv *tags;
	size_t n_tags;
};

/*
 * Parses and checks a CreateHyperParameterTuningJob body. Every rule is
 * checked before anything is created; members the controller cannot honour
 * are refused by name. Returns 0 or ERR_INVALID (err names the member).
 */
int api_tuning_parse(const char *json, size_t len, struct api_tuning_spec *s,
		     struct buf *err);

/* The same for a stored request (no tags expected, rules not re-run). */
int api_tuning_load(const char *request_json, struct api_tuning_spec *s,
		    struct buf *err);
void api_tuning_release(struct api_tuning_spec *s);

/*
 * The hyperparameter values of point x in definition d's space, as the
 * strings a training job gets: *values[i] for d->ranges[i] (free each and
 * the array).
 */
char **api_tuning_values(const struct api_tuning_def *d, const double *x);

/*
 * The reverse: x from values named by names (n of them); 0, or ERR_INVALID
 * when a range of d is missing or a value is outside it (warm start).
 */
int api_tuning_point(const struct api_tuning_def *d, char *const *names,
		     char *const *values, size_t n, double *x);

/*
 * The CreateTrainingJob body of one training job of the tuning job:
 * definition d with its StaticHyperParameters and the tuned values, the
 * tuning job's tags, under job_name. Returns 0 or ERR_TOOBIG.
 */
int api_tuning_child_body(const struct api_tuning_spec *s,
			  const struct api_tuning_def *d, const char *job_name,
			  char *const *values, struct buf *out);

/* request_json with "key": value (a string) added as a member. */
int api_request_add_string(const char *request_json, const char *key,
			   const char *value, char **out);

/* One training job of a tuning job (HyperParameterTrainingJobSummary). */
struct api_tuning_child {
	const char *def_name;
	const char *name;
	const char *arn;
	const char *tuning_name;
	const char *status;
	const char *failure_reason;
	int64_t creation_ms;
	int64_t start_ms;
	int64_t end_ms;
	char *const *hp_names;
	char *const *hp_values;
	size_t n_hp;
	const char *metric;
	int maximize;
	int has_objective;
	double objective;
	const char *objective_status; /* Succeeded, Pending or Failed */
};

/* TrainingJobStatusCounters: a tuning job's training jobs by status. */
struct api_tuning_job_counts {
	int completed;
	int in_progress;
	int retryable_error;
	int non_retryable_error;
	int stopped;
};

/* ObjectiveStatusCounters: its training jobs by objective status. */
struct api_tuning_objective_counts {
	int succeeded;
	int pending;
	int failed;
};

/* A tuning job as the controller knows it. */
struct api_tuning_record {
	const char *name;
	const char *arn;
	const char *status;
	const char *failure_reason;
	const char *request_json;
	const struct api_tuning_spec *spec;
	int64_t creation_ms;
	int64_t last_modified_ms;
	int64_t end_ms;
	struct api_tuning_job_counts jobs; /* TrainingJobStatusCounters */
	struct api_tuning_objective_counts objectives;
	const struct api_tuning_child *best;
	const struct api_tuning_child *overall_best;
	int not_improving; /* jobs since the best improved */
	int64_t convergence_ms;
	int64_t consumed_s;
};

int api_tuning_describe_response(const struct api_tuning_record *r,
				 struct buf *out);
int api_tuning_child_json(const struct api_tuning_child *c, struct buf *out);
/* {"<member>": [...], "NextToken"} from items already serialized. */
int api_tuning_list_json(const char *member, char *const *items, size_t n,
			 const char *next_token, struct buf *out);
int api_tuning_summary_json(const struct api_tuning_record *r, struct buf *out);

/* ListHyperParameterTuningJobs and ListTrainingJobsFor..., parsed. */
struct api_tuning_list_request {
	char *name; /* ListTrainingJobsFor...: the tuning job */
	int max_results;
	char *next_token;
	char *sort_by;
	int ascending;
	char *name_contains;
	char *status;
	int64_t created_after;
	int64_t created_before;
	int64_t modified_after;
	int64_t modified_before;
};

int api_tuning_list_parse(const char *json, size_t len, int children,
			  struct api_tuning_list_request *r, struct buf *err);
void api_tuning_list_release(struct api_tuning_list_request *r);

#endif
