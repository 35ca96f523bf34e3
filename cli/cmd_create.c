#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/client.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/banned.h"

enum create_opt { OPT_NAME = 1, OPT_INPUT_JSON, OPT_WAIT };

static const struct option create_opts[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "hyperparameter", required_argument, NULL, CLI_OPT_HYPERPARAMETER },
	{ "metric", required_argument, NULL, CLI_OPT_METRIC },
	{ "entrypoint", required_argument, NULL, CLI_OPT_ENTRYPOINT },
	{ "argument", required_argument, NULL, CLI_OPT_ARGUMENT },
	{ "cli-input-json", required_argument, NULL, OPT_INPUT_JSON },
	{ "wait", no_argument, NULL, OPT_WAIT },
	CLI_JOBDEF_OPTIONS,
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* What the command line said, before it becomes a request. */
struct create_args {
	struct cli_jobdef_args def;
	const char *input_json; /* --cli-input-json argument */
	int wait;		/* --wait: follow the job to its end */
};

static int parse_create_args(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			     int argc, char **argv, struct create_args *a)
{
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", create_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_NAME:
			a->def.flags.name = optarg;
			break;
		case OPT_INPUT_JSON:
			a->input_json = optarg;
			break;
		case OPT_WAIT:
			a->wait = 1;
			break;
		default:
			rc = cli_jobdef_option(cmd, opt, &a->def);
			if (rc == 1)
				rc = cli_common_option(ctx, cmd, opt, argv);
			if (rc)
				return rc;
		}
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	cli_jobdef_finish(&a->def);
	return 0;
}

int cli_cmd_create(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct create_args a = { 0 };
	struct buf input = BUF_INIT_MAX(CLI_MAX_INPUT);
	struct buf body = BUF_INIT;
	struct buf err = BUF_INIT;
	struct cli_reply reply = CLI_REPLY_INIT;
	char *arn = NULL;
	int rc;

	rc = parse_create_args(ctx, cmd, argc, argv, &a);
	if (rc) {
		rc = rc < 0 ? CLI_EXIT_OK : rc;
		goto out;
	}
	if (a.input_json && cli_read_input(a.input_json, &input, &err)) {
		rc = cli_usage_error(cmd, "--cli-input-json: %s", err.data);
		goto out;
	}
	if (api_create_request_build(&a.def.flags,
				     a.input_json ? input.data : NULL,
				     input.len, &body, &err)) {
		rc = cli_usage_error(cmd, "%s", err.data);
		goto out;
	}
	rc = cli_call(ctx, "CreateTrainingJob", &body, &reply);
	if (rc)
		goto out;
	if (api_create_response_parse(reply.body.data, reply.body.len, &arn,
				      &err)) {
		cli_error("%s", err.data);
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	/* With --wait and --output json, stdout gets the final Describe. */
	if (ctx->output != CLI_OUTPUT_JSON)
		printf("%s\n", arn);
	else if (!a.wait)
		cli_print_json(&reply);
	if (a.wait) {
		/* The request's name: the ARN's is lower-cased. */
		char *name = api_create_request_name(body.data, body.len);

		(void)fflush(stdout);
		rc = name ? cli_wait_job(ctx, name, 0, 0) : CLI_EXIT_USAGE;
		free(name);
	}
out:
	free(arn);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
	buf_release(&input);
	cli_jobdef_release(&a.def);
	return rc;
}
