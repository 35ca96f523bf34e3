#ifndef API_JOB_RECORD_H
#define API_JOB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Timestamps are epoch milliseconds; 0 means absent. */
struct api_transition {
	char *status; /* SecondaryStatus value */
	int64_t start_ms;
	int64_t end_ms; /* 0 while current */
	char *message;	/* may be NULL */
};

struct api_metric_value {
	char *name;
	double value;
	int64_t timestamp_ms;
};

/*
 * One training job as DescribeTrainingJob / ListTrainingJobs show it. The
 * record owns every string; api_job_record_release() frees them.
 */
struct api_job_record {
	char *name;
	char *arn;
	char *status;		/* TrainingJobStatus */
	char *secondary_status; /* SecondaryStatus */
	char *failure_reason;	/* may be NULL */
	char *model_artifacts;	/* S3ModelArtifacts, may be NULL */
	char *request_json;	/* the echoed request (api_job_spec) */
	int64_t creation_ms;
	int64_t last_modified_ms;
	int64_t start_ms;   /* TrainingStartTime */
	int64_t end_ms;	    /* TrainingEndTime */
	int64_t training_s; /* TrainingTimeInSeconds, 0 = absent */
	int64_t billable_s; /* BillableTimeInSeconds, 0 = absent */
	struct api_transition *transitions;
	size_t n_transitions;
	struct api_metric_value *metrics; /* FinalMetricDataList */
	size_t n_metrics;
	/* WarmPoolStatus: status NULL when the job asked for no pool */
	char *wp_status;
	char *wp_reused_by;    /* ReusedByJob, may be NULL */
	int64_t wp_billable_s; /* ResourceRetainedBillableTimeInSeconds,
				  < 0: absent */
	/* DebugRuleEvaluationStatuses and ProfilerRuleEvaluationStatuses
	 * (api/rule_status.h), merged into Describe; NULL: none. */
	char *rule_statuses_json;
	/* An elastic job (api/elastic.h): its fewest hosts (0: not
	 * elastic) and the hosts of its current attempt (0: none). */
	int elastic_min;
	size_t elastic_hosts;
	/* {"TrainctlGoodput": ...} (api/goodput.h), merged into Describe;
	 * NULL: none. */
	char *goodput_json;
};

/* Frees everything the record owns and zeroes it. */
void api_job_record_release(struct api_job_record *rec);

/*
 * Appends the DescribeTrainingJob response for rec to out: the echoed
 * request merged with the state members, timestamps as float epoch seconds.
 * Returns 0, or ERR_INVALID when rec->request_json is not a JSON object.
 */
int api_describe_response(const struct api_job_record *rec, struct buf *out);

/* Appends one TrainingJobSummaries element for rec to out. */
int api_summary_json(const struct api_job_record *rec, struct buf *out);

/*
 * Appends the whole ListTrainingJobs response: the summaries of recs[0..n)
 * and NextToken when next_token is not NULL.
 */
int api_list_response(const struct api_job_record *recs, size_t n,
		      const char *next_token, struct buf *out);

/*
 * Parses a DescribeTrainingJob response (or a summary) back into rec, for
 * clients. Returns 0, or ERR_INVALID with err set.
 */
int api_job_record_from_json(const char *json, size_t len,
			     struct api_job_record *rec, struct buf *err);

#endif
