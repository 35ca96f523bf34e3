#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/client.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/banned.h"

/*
 * The flags of a training job's definition, which create-training-job and
 * create-tuning-job share (each lists those it takes in its option table).
 */
int cli_jobdef_option(const struct cli_cmd *cmd, int opt,
		      struct cli_jobdef_args *a)
{
	int64_t v;

	switch (opt) {
	case CLI_OPT_IMAGE:
		a->flags.image = optarg;
		return 0;
	case CLI_OPT_INSTANCE_TYPE:
		a->flags.instance_type = optarg;
		return 0;
	case CLI_OPT_INSTANCE_COUNT:
		if (cli_parse_int(optarg, 1, 1000000, &v))
			return cli_usage_error(cmd,
					       "invalid --instance-count '%s': "
					       "expected a positive integer",
					       optarg);
		a->flags.instance_count = (int)v;
		return 0;
	case CLI_OPT_ROLE_ARN:
		a->flags.role_arn = optarg;
		return 0;
	case CLI_OPT_OUTPUT_PATH:
		a->flags.output_path = optarg;
		return 0;
	case CLI_OPT_INPUT_MODE:
		a->flags.input_mode = optarg;
		return 0;
	case CLI_OPT_HYPERPARAMETER:
		cli_strv_push(&a->hp, optarg);
		return 0;
	case CLI_OPT_ENVIRONMENT:
		cli_strv_push(&a->env, optarg);
		return 0;
	case CLI_OPT_CHANNEL:
		cli_strv_push(&a->channels, optarg);
		return 0;
	case CLI_OPT_METRIC:
		cli_strv_push(&a->metrics, optarg);
		return 0;
	case CLI_OPT_ENTRYPOINT:
		cli_strv_push(&a->entrypoint, optarg);
		return 0;
	case CLI_OPT_ARGUMENT:
		cli_strv_push(&a->arguments, optarg);
		return 0;
	case CLI_OPT_MAX_RUNTIME:
		if (cli_parse_int(optarg, 1, INT32_MAX, &v))
			return cli_usage_error(cmd,
					       "invalid --max-runtime '%s': "
					       "expected seconds >= 1",
					       optarg);
		a->flags.max_runtime_s = v;
		return 0;
	case CLI_OPT_VOLUME_SIZE:
		if (cli_parse_int(optarg, 1, 1000000, &v))
			return cli_usage_error(cmd,
					       "invalid --volume-size '%s': "
					       "expected gigabytes >= 1",
					       optarg);
		a->flags.volume_gb = (int)v;
		return 0;
	default:
		return 1;
	}
}

void cli_jobdef_finish(struct cli_jobdef_args *a)
{
	a->flags.hyperparameters = a->hp.v;
	a->flags.n_hyperparameters = a->hp.n;
	a->flags.environment = a->env.v;
	a->flags.n_environment = a->env.n;
	a->flags.channels = a->channels.v;
	a->flags.n_channels = a->channels.n;
	a->flags.metrics = a->metrics.v;
	a->flags.n_metrics = a->metrics.n;
	a->flags.entrypoint = a->entrypoint.v;
	a->flags.n_entrypoint = a->entrypoint.n;
	a->flags.arguments = a->arguments.v;
	a->flags.n_arguments = a->arguments.n;
}

int cli_jobdef_given(const struct cli_jobdef_args *a)
{
	const struct api_client_create *f = &a->flags;

	return f->image || f->instance_type || f->instance_count ||
	       f->role_arn || f->output_path || f->input_mode ||
	       f->max_runtime_s || f->volume_gb || a->hp.n || a->env.n ||
	       a->channels.n || a->metrics.n || a->entrypoint.n ||
	       a->arguments.n;
}

void cli_jobdef_release(struct cli_jobdef_args *a)
{
	cli_strv_release(&a->hp);
	cli_strv_release(&a->env);
	cli_strv_release(&a->channels);
	cli_strv_release(&a->metrics);
	cli_strv_release(&a->entrypoint);
	cli_strv_release(&a->arguments);
}
