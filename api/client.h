#ifndef API_CLIENT_H
#define API_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "api/job_record.h"

/*
 * Client-side JSON for trainctl: request bodies built from command-line
 * values, and the few response shapes the client reads. Nothing here does
 * I/O; the caller reads files and talks HTTP.
 */

/*
 * Defaults for create-training-job members that neither flags nor a
 * --cli-input-json document supply. The output path is an s3:// URI because
 * the service model's S3Uri pattern allows only s3:// and https://; with no
 * S3 endpoint configured trainctld maps s3:// to its local folder store
 * (DESIGN.md, "S3 URIs"). VolumeSizeInGB and StoppingCondition are required
 * by the older (2022) model, so they are always sent.
 */
#define API_CLIENT_DEFAULT_ROLE_ARN "arn:aws:iam::000000000000:role/trainctl"
#define API_CLIENT_DEFAULT_OUTPUT_PATH "s3://trainctl/output"
#define API_CLIENT_DEFAULT_INPUT_MODE "File"
#define API_CLIENT_DEFAULT_VOLUME_GB 30
#define API_CLIENT_DEFAULT_MAX_RUNTIME_S 86400

/*
 * create-training-job flags. Nothing is owned: every pointer borrows the
 * caller's strings (usually argv). NULL / 0 means "not given". The list
 * members point at arrays of n strings each.
 */
struct api_client_create {
	const char *name;	   /* TrainingJobName */
	const char *image;	   /* AlgorithmSpecification.TrainingImage */
	const char *input_mode;	   /* TrainingInputMode */
	const char *instance_type; /* ResourceConfig.InstanceType */
	int instance_count;	   /* ResourceConfig.InstanceCount, 0 = unset */
	int volume_gb;		 /* ResourceConfig.VolumeSizeInGB, 0 = unset */
	int64_t max_runtime_s;	 /* StoppingCondition, 0 = unset */
	const char *role_arn;	 /* RoleArn */
	const char *output_path; /* OutputDataConfig.S3OutputPath */
	const char *const *hyperparameters; /* "KEY=VALUE", merged by key */
	size_t n_hyperparameters;
	const char *const *environment; /* "KEY=VALUE", merged by key */
	size_t n_environment;
	const char *const *channels; /* "NAME=URI", merged by ChannelName */
	size_t n_channels;
	const char *const *metrics; /* "NAME=REGEX", merged by Name */
	size_t n_metrics;
	const char *const *entrypoint; /* replaces ContainerEntrypoint */
	size_t n_entrypoint;
	const char *const *arguments; /* replaces ContainerArguments */
	size_t n_arguments;
};

/*
 * Builds a CreateTrainingJob body into out (compact JSON). When base_json
 * is not NULL it is the --cli-input-json document (len bytes, a JSON
 * object) and flags override its members: scalars are replaced, maps and
 * keyed lists (channels, metric definitions) are merged entry by entry,
 * ContainerEntrypoint/ContainerArguments are replaced as a whole. Members
 * still missing afterwards get the API_CLIENT_DEFAULT_* values. A flag
 * image drops AlgorithmName, and a flag instance type or count drops
 * InstanceGroups, so the result never names both.
 *
 * Returns 0, or ERR_INVALID with err saying what is wrong (malformed base
 * document, a list entry without '=' or with an empty key, a required member
 * missing: name, image, instance type and count), leaving out unchanged.
 */
int api_create_request_build(const struct api_client_create *flags,
			     const char *base_json, size_t len, struct buf *out,
			     struct buf *err);

/*
 * The TrainingJobName of a request body, such as api_create_request_build()
 * makes. Returns a copy the caller frees, or NULL when the body has none.
 */
char *api_create_request_name(const char *json, size_t len);

/*
 * Parses a CreateTrainingJob response. On success *arn_out is a copy the
 * caller frees. Returns 0 or ERR_INVALID with err set.
 */
int api_create_response_parse(const char *json, size_t len, char **arn_out,
			      struct buf *err);

/* list-training-jobs flags; borrowed strings, NULL / 0 = not given. */
struct api_client_list {
	const char *status_equals; /* a TrainingJobStatus */
	const char *name_contains;
	const char *sort_by;	/* Name, CreationTime or Status */
	const char *sort_order; /* Ascending or Descending */
	const char *next_token;
	int max_results; /* 1..100 */
};

/*
 * Builds a ListTrainingJobs body into out. Returns 0, or ERR_INVALID with err
 * naming the flag when a value is outside its enum or range.
 */
int api_list_request_build(const struct api_client_list *q, struct buf *out,
			   struct buf *err);

/*
 * Parses a ListTrainingJobs response. On success *recs_out is an array of
 * *n_out records (NULL when empty) and *next_token_out the NextToken copy or
 * NULL; the caller releases them with api_job_records_free() and free(3).
 * On failure returns ERR_INVALID with err set and leaves nothing to free.
 */
int api_list_response_parse(const char *json, size_t len,
			    struct api_job_record **recs_out, size_t *n_out,
			    char **next_token_out, struct buf *err);

/*
 * Appends each element of a ListTrainingJobs response's TrainingJobSummaries
 * to out as compact JSON, separated by commas, with a leading comma when out
 * is not empty, so pages can be joined into one array. Returns 0 or
 * ERR_INVALID with err set.
 */
int api_list_summaries_append(const char *json, size_t len, struct buf *out,
			      struct buf *err);

/* Releases recs[0..n) and frees the array itself. NULL is fine. */
void api_job_records_free(struct api_job_record *recs, size_t n);

/*
 * Pretty-prints a JSON document (indent 2, key order kept) into out, with a
 * trailing newline. Returns 0 or ERR_INVALID when json does not parse.
 */
int api_json_pretty(const char *json, size_t len, struct buf *out);

#endif
