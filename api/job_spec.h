#ifndef API_JOB_SPEC_H
#define API_JOB_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* A string->string pair (hyperparameters, environment, tags). */
struct api_kv {
	char *key;
	char *value;
};

/* Frees n pairs and the array (kv may be NULL). */
void api_kvs_free(struct api_kv *kv, size_t n);

struct api_channel {
	char *name;
	char *s3_uri;
	char *s3_data_type;   /* S3Prefix, ManifestFile, ... */
	char *distribution;   /* FullyReplicated or ShardedByS3Key */
	char *content_type;   /* may be NULL */
	char *input_mode;     /* may be NULL: job's TrainingInputMode */
	char *compression;    /* may be NULL */
	char *record_wrapper; /* may be NULL */
	int shuffle;	      /* ShuffleConfig given */
	int64_t shuffle_seed; /* its Seed */
	/* InstanceGroupNames, NULL-terminated; NULL: every host gets it. */
	char **instance_groups;
	/*
	 * Agent protocol only: with shard_count > 0, ShardedByS3Key splits
	 * the objects between shard_count hosts (those that get the channel)
	 * and this host takes share shard_index; 0: between all the hosts.
	 */
	int shard_index;
	int shard_count;
};

struct api_metric_def {
	char *name;
	char *regex;
};

/*
 * One of DebugRuleConfigurations or ProfilerRuleConfigurations: its
 * RuleConfigurationName, the built-in rule its RuleParameters invoke
 * (rule_to_invoke; NULL when absent) and its other RuleParameters in the
 * request's order. Which rules and parameters the controller evaluates is
 * its own table's to say (controller/obs/rules.h).
 */
struct api_rule_config {
	int profiler; /* from ProfilerRuleConfigurations */
	char *name;
	char *invoke;
	struct api_kv *params;
	size_t n_params;
};

struct api_instance_group {
	char *name;
	char *instance_type;
	int count;
};

/*
 * A validated CreateTrainingJob request as plain C values. Every char * is
 * owned by the spec and freed by api_job_spec_release(); optional members
 * that were absent are NULL (strings) or 0 / -1 (numbers, as commented).
 */
struct api_job_spec {
	char *name;
	char *role_arn;
	char *training_image; /* NULL when AlgorithmName is used */
	char *algorithm_name; /* NULL when TrainingImage is used */
	char *input_mode;     /* File, Pipe or FastFile */
	char **entrypoint;    /* ContainerEntrypoint, NULL-terminated or NULL */
	char **arguments;     /* ContainerArguments, NULL-terminated or NULL */
	struct api_metric_def *metrics;
	size_t n_metrics;
	struct api_kv *hyperparameters;
	size_t n_hyperparameters;
	struct api_kv *environment;
	size_t n_environment;
	struct api_channel *channels;
	size_t n_channels;
	char *output_path; /* OutputDataConfig.S3OutputPath */
	/* OutputDataConfig.CompressionType NONE: the model's files are
	 * stored one by one under <output_path>/<job>/output/model/. */
	int model_uncompressed;
	char *instance_type; /* NULL when InstanceGroups is used */
	int instance_count;  /* 0 when InstanceGroups is used */
	struct api_instance_group *groups;
	size_t n_groups;
	int volume_gb;		     /* 0 when absent */
	int64_t max_runtime_s;	     /* defaulted to 86400 */
	int64_t max_wait_s;	     /* 0 when absent */
	int max_retry_attempts;	     /* 0 when no RetryStrategy */
	char *checkpoint_s3_uri;     /* NULL when no CheckpointConfig */
	char *checkpoint_local_path; /* defaulted to /opt/ml/checkpoints/ */
	/* TensorBoardOutputConfig: NULL when absent; LocalPath defaulted
	 * to /opt/ml/output/tensorboard. */
	char *tensorboard_s3_uri;
	char *tensorboard_local_path;
	int spot;		     /* EnableManagedSpotTraining */
	int network_isolation;	     /* EnableNetworkIsolation */
	/* InfraCheckConfig.EnableInfraCheck */
	int infra_check;
	/*
	 * DebugHookConfig and (an enabled) ProfilerConfig with defaults
	 * filled in, as compact JSON for the program's config files; NULL
	 * when absent.
	 */
	char *debug_hook_config_json;
	char *profiler_config_json;
	/* Where the hook's and the profiler's files go, and from which
	 * folder (SageMaker's <S3OutputPath>/<job>/debug-output and
	 * /profiler-output); NULL without the config. */
	char *debug_s3_uri;
	char *debug_local_path;
	char *profiler_s3_uri;
	char *profiler_local_path;
	/* DebugRuleConfigurations, then ProfilerRuleConfigurations. */
	struct api_rule_config *rules;
	size_t n_rules;
	struct api_kv *tags; /* Tags (not echoed by Describe) */
	size_t n_tags;
	/*
	 * ResourceConfig.KeepAlivePeriodInSeconds (0: absent), and what a
	 * warm pool must have been made with for this job to reuse it: its
	 * ResourceConfig without the period, RoleArn and VpcConfig, as
	 * compact JSON with sorted keys; NULL without a period.
	 */
	int keep_alive_s;
	char *warm_key;
	/*
	 * The tag API_ELASTIC_TAG (api/elastic.h): the fewest hosts an
	 * elastic job trains on; 0 when the job is not elastic.
	 */
	int min_instances;
	/*
	 * The request as it will be echoed by DescribeTrainingJob: only members
	 * of the model, defaults filled in, compact JSON. Never NULL after a
	 * successful parse.
	 */
	char *request_json;
};

#define API_JOB_SPEC_INIT \
	{                 \
		0         \
	}

/*
 * Parses and validates a CreateTrainingJob request body. Returns 0 and fills
 * spec, or ERR_INVALID (malformed JSON or any violated constraint, with err
 * naming the member and the constraint) and leaves spec empty.
 */
int api_job_spec_parse(const char *json, size_t len, struct api_job_spec *spec,
		       struct buf *err);

/*
 * The same for a request stored when it was created: members that the
 * controller refuses (api/members.h) are not refused again, so that a job
 * an older controller accepted still runs.
 */
int api_job_spec_load(const char *json, size_t len, struct api_job_spec *spec,
		      struct buf *err);

/* Frees everything the spec owns and zeroes it. */
void api_job_spec_release(struct api_job_spec *spec);

/*
 * Rewrites ResourceConfig.KeepAlivePeriodInSeconds of an echoed request
 * (api_job_spec.request_json, as stored) to seconds into out. Returns 0,
 * ERR_INVALID (not a JSON object with a ResourceConfig) or ERR_TOOBIG.
 */
int api_request_set_keep_alive(const char *request_json, int seconds,
			       struct buf *out);

/* Returns the value of hyperparameter key, or NULL. */
const char *api_job_spec_hp(const struct api_job_spec *spec, const char *key);

/*
 * Called by api_job_spec_uris() for each location the job names: member
 * is the request's member as the API spells it, uri the value (for
 * DebugHookConfig and ProfilerConfig the folder the files go to). A
 * non-zero return stops the walk and is returned.
 */
typedef int api_job_spec_uri_fn(void *arg, const char *member, const char *uri);

/*
 * Every URI the job names: OutputDataConfig, each channel, CheckpointConfig,
 * TensorBoardOutputConfig, DebugHookConfig, ProfilerConfig and the code
 * (HyperParameters.sagemaker_submit_directory), then any other s3:// or
 * file:// string of the request outside AlgorithmSpecification,
 * HyperParameters, Environment and Tags, so that a member added later is
 * walked too. The one list that checks of a request's locations use.
 */
int api_job_spec_uris(const struct api_job_spec *spec, api_job_spec_uri_fn *fn,
		      void *arg);

#endif
