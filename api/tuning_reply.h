#ifndef API_TUNING_REPLY_H
#define API_TUNING_REPLY_H

/*
 * Client-side JSON of the tuning job commands: the small requests of
 * describe, stop, delete and the two lists, and the answers trainctl reads
 * (Create, Describe and the List pages) as plain structs. No I/O.
 *
 * Answers are read leniently, as a client reads what a server sent: a
 * member that is absent or of another type reads as NULL (strings) or 0
 * (numbers), never as an error.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/*
 * Builds {"HyperParameterTuningJobName": name} into out. Returns 0, or
 * ERR_INVALID when name is not UTF-8.
 */
int api_tuning_name_request_build(const char *name, struct buf *out);

/*
 * The HyperParameterTuningJobName of a request body, such as
 * api_tuning_request_build() makes. Returns a copy the caller frees, or
 * NULL when the body has none.
 */
char *api_tuning_request_name(const char *json, size_t len);

/* The flags of list-tuning-jobs and list-tuning-job-training-jobs. */
struct api_tuning_list_query {
	const char *tuning; /* HyperParameterTuningJobName (children) */
	const char *status_equals;
	const char *name_contains;
	const char *sort_by;
	const char *sort_order;
	int max_results; /* 0 = not given */
};

/*
 * Builds the body of one List page into out (replacing what it holds):
 * the members q gives, and NextToken when token is not NULL. A value that
 * is not UTF-8 is left out.
 */
void api_tuning_list_request_build(const struct api_tuning_list_query *q,
				   const char *token, struct buf *out);

/*
 * Reads one List page: appends each element of its member array (e.g.
 * "HyperParameterTuningJobSummaries") to items as compact JSON, after a
 * comma when items is not empty, so pages join into one array. On success
 * *token_out is the page's NextToken (a copy the caller frees) or NULL.
 * Returns 0, or ERR_INVALID with err saying what is malformed (the
 * parser's message, or "no <member>"), leaving items and *token_out as
 * they were.
 */
int api_tuning_page_read(const char *json, size_t len, const char *member,
			 struct buf *items, char **token_out, struct buf *err);

/*
 * Builds the document {"<member>": [items], "NextToken": token} into out
 * from the items api_tuning_page_read() gathered (NextToken only when
 * token is not NULL). Returns 0, or ERR_INVALID when items do not parse.
 */
int api_tuning_list_doc_build(const char *member, const char *items,
			      const char *token, struct buf *out);

/*
 * Reads a CreateHyperParameterTuningJob answer. On success *arn_out is a
 * copy of HyperParameterTuningJobArn the caller frees. Returns 0, or
 * ERR_INVALID with err saying what is malformed.
 */
int api_tuning_create_response_parse(const char *json, size_t len,
				     char **arn_out, struct buf *err);

/* TrainingJobStatusCounters. */
struct api_tuning_counters {
	int completed;
	int in_progress;
	int stopped;
	int retryable_error;
	int non_retryable_error;
};

/* One of TunedHyperParameters; value is NULL when it is not a string. */
struct api_tuned_value {
	char *name;
	char *value;
};

/*
 * A training job of a tuning job (HyperParameterTrainingJobSummary), as in
 * BestTrainingJob and ListTrainingJobsForHyperParameterTuningJob.
 */
struct api_tuning_child {
	char *name;		/* TrainingJobName */
	char *status;		/* TrainingJobStatus */
	char *objective_status; /* ObjectiveStatus */
	/* FinalHyperParameterTuningJobObjectiveMetric */
	char *metric_name;
	int has_value; /* its Value is a number */
	double value;
	struct api_tuned_value *tuned; /* TunedHyperParameters, in order */
	size_t n_tuned;
};

/* A DescribeHyperParameterTuningJob answer. */
struct api_tuning_desc {
	char *name;	   /* HyperParameterTuningJobName */
	char *arn;	   /* HyperParameterTuningJobArn */
	char *status;	   /* HyperParameterTuningJobStatus */
	char *strategy;	   /* ...JobConfig.Strategy */
	int has_objective; /* ...JobConfig.HyperParameterTuningJobObjective */
	char *objective_type;	/* its Type */
	char *objective_metric; /* its MetricName */
	int max_jobs;		/* ResourceLimits.MaxNumberOfTrainingJobs */
	int max_parallel;	/* ResourceLimits.MaxParallelTrainingJobs */
	struct api_tuning_counters jobs; /* TrainingJobStatusCounters */
	/* ObjectiveStatusCounters */
	int objectives_succeeded;
	int objectives_pending;
	int objectives_failed;
	struct api_tuning_child *best; /* BestTrainingJob; NULL when absent */
	char *failure_reason;	       /* FailureReason */
	int64_t creation_ms;	       /* CreationTime; 0 when absent */
	int64_t end_ms;		       /* HyperParameterTuningEndTime */
	int64_t last_modified_ms;      /* LastModifiedTime */
};

/*
 * Reads a DescribeHyperParameterTuningJob answer into *d, which the caller
 * releases with api_tuning_desc_release(). Returns 0, or ERR_INVALID with
 * err holding the parser's message (empty when the document is not an
 * object), leaving nothing to release.
 */
int api_tuning_desc_parse(const char *json, size_t len,
			  struct api_tuning_desc *d, struct buf *err);

void api_tuning_desc_release(struct api_tuning_desc *d);

/* A HyperParameterTuningJobSummary. */
struct api_tuning_summary {
	char *name;	/* HyperParameterTuningJobName */
	char *status;	/* HyperParameterTuningJobStatus */
	char *strategy; /* Strategy */
	int max_jobs;	/* ResourceLimits.MaxNumberOfTrainingJobs */
	struct api_tuning_counters jobs; /* TrainingJobStatusCounters */
	int64_t creation_ms;		 /* CreationTime; 0 when absent */
};

/*
 * Reads the HyperParameterTuningJobSummaries of a ListHyperParameterTuningJobs
 * answer (or of api_tuning_list_doc_build()'s document). On success *out
 * is an array of *n summaries (NULL when empty) that the caller frees with
 * api_tuning_summaries_free(). Returns 0, or ERR_INVALID with err set.
 */
int api_tuning_summaries_parse(const char *json, size_t len,
			       struct api_tuning_summary **out, size_t *n,
			       struct buf *err);

void api_tuning_summaries_free(struct api_tuning_summary *s, size_t n);

/*
 * Reads the TrainingJobSummaries of a
 * ListTrainingJobsForHyperParameterTuningJob answer, as
 * api_tuning_summaries_parse() does; free with api_tuning_children_free().
 */
int api_tuning_children_parse(const char *json, size_t len,
			      struct api_tuning_child **out, size_t *n,
			      struct buf *err);

void api_tuning_children_free(struct api_tuning_child *c, size_t n);

#endif
