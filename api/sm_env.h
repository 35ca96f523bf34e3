#ifndef API_SM_ENV_H
#define API_SM_ENV_H

/*
 * What a SageMaker training container's user process sees: its environment
 * and its argument vector, computed from the three config files exactly as
 * sagemaker-training-toolkit (aws/sagemaker-training-toolkit,
 * src/sagemaker_training/environment.py Environment.__init__ and
 * to_env_vars(), mapping.py to_env_vars() / to_cmd_args(), params.py) does
 * it, with the platform's variables underneath. Pure: no I/O.
 *
 * The process environment is built in layers, later layers winning, as in
 * a real container where TK writes into os.environ before it starts the
 * user's script:
 *   1. the request's Environment entries;
 *   2. the platform's TRAINING_JOB_NAME and TRAINING_JOB_ARN;
 *   3. what TK's Environment() sets in os.environ: SAGEMAKER_JOB_NAME
 *      (hyperparameter sagemaker_job_name, else ""), CURRENT_HOST and
 *      SAGEMAKER_REGION (hyperparameter sagemaker_region, else what boto3
 *      finds: Environment's AWS_DEFAULT_REGION, else `region`, else "");
 *   4. every SM_* variable of to_env_vars().
 * Not produced: PYTHONPATH (TK sets ":".join(sys.path) of its own
 * interpreter; the caller chooses one) and the image's own ENV lines.
 */
#include <stddef.h>

#include "api/job_spec.h"
#include "common/buf.h"

struct api_sm_env_input {
	/* "/opt/ml" (the default when NULL or ""), or the job directory. */
	const char *base_dir;
	/* The config files' texts; NULL is "{}" (resource config: required). */
	const char *hyperparameters_json;
	const char *input_data_config_json;
	const char *resource_config_json;
	const char *job_name; /* TRAINING_JOB_NAME, may be NULL */
	const char *job_arn;  /* TRAINING_JOB_ARN, may be NULL */
	const char *region;   /* what boto3 finds otherwise, may be NULL */
	/*
	 * Overrides, NULL to do what TK does: module_dir is the hyperparameter
	 * sagemaker_submit_directory, else <base_dir>/code; user_entry_point
	 * is SAGEMAKER_PROGRAM from the environment, else the hyperparameter
	 * sagemaker_program; framework_module is SAGEMAKER_TRAINING_MODULE
	 * from the environment (an image would carry it in its ENV).
	 */
	const char *module_dir;
	const char *user_entry_point;
	const char *framework_module;
	int num_cpus;
	int num_gpus;
	int num_neurons;
	/* The request's Environment; read for SAGEMAKER_PROGRAM,
	 * SAGEMAKER_TRAINING_MODULE, AWS_DEFAULT_REGION, SM_HP_MP_PARAMETERS.
	 */
	const struct api_kv *environment;
	size_t n_environment;
};

/*
 * Builds the user process's environment (layers above) and argument vector
 * (SM_USER_ARGS: the user hyperparameters as "--key value" pairs). On
 * success returns 0, *env holds *n_env entries and *user_args is
 * NULL-terminated; the caller frees them with api_sm_env_release().
 * Returns ERR_INVALID, with err saying why and nothing to free, when a
 * config file is not a JSON object, the resource config lacks hosts or
 * current_host, or TK itself would fail (a name or value Python cannot put
 * in an environment: '=' in a name, NUL, a lone surrogate; a type error in
 * its own code). Non-ASCII letters in hyperparameter and channel names are
 * not upper-cased (Python's str.upper() would).
 */
int api_sm_env_build(const struct api_sm_env_input *in, struct api_kv **env,
		     size_t *n_env, char ***user_args, struct buf *err);

/* Frees what api_sm_env_build() returned; any argument may be NULL. */
void api_sm_env_release(struct api_kv *env, size_t n_env, char **user_args);

/*
 * TK's to_cmd_args() over the user hyperparameters of hyperparameters_json
 * (sagemaker_* and the other reserved keys removed, values decoded with
 * json.loads where possible): keys sorted, "--key" ("-k" for a one-letter
 * key), the value as str() prints it (True, [1, 2], a=1,b=2 for a dict).
 * Returns 0 with *argv NULL-terminated (free with api_sm_argv_free()), or
 * ERR_INVALID with err saying why.
 */
int api_sm_user_args(const char *hyperparameters_json, char ***argv,
		     struct buf *err);

void api_sm_argv_free(char **argv);

/* Looks a name up in an environment vector: the value, or NULL. */
const char *api_sm_env_get(const struct api_kv *env, size_t n_env,
			   const char *name);

#endif
