/*
 * trainctl: the command-line client of trainctld. It speaks SageMaker's
 * JSON 1.1 protocol, so the same requests work against the real service.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int cmd_help(struct cli_ctx *ctx, int argc, char **argv);

/* The subcommands, in the order `trainctl help` lists them (git.c). */
static const struct cli_cmd commands[] = {
	{ "create-training-job", cli_cmd_create,
	  "create-training-job --name N --image IMG --instance-type T "
	  "--instance-count N\n"
	  "           [--role-arn ARN] [--output-path URI] "
	  "[--input-mode File|Pipe|FastFile]\n"
	  "           [--hyperparameter K=V]... [--environment K=V]... "
	  "[--channel NAME=URI]...\n"
	  "           [--metric NAME=REGEX]... [--entrypoint ARG]... "
	  "[--argument ARG]...\n"
	  "           [--max-runtime S] [--volume-size GB] "
	  "[--cli-input-json file://job.json] [--wait]",
	  "start a training job from flags or a JSON request (--wait: then "
	  "wait for its end, as `wait` does)" },
	{ "logs", cli_cmd_logs, "logs NAME [--host algo-N] [-f|--follow]",
	  "print a job's logs (all hosts, or one); -f follows them" },
	{ "describe-training-job", cli_cmd_describe,
	  "describe-training-job NAME", "show one job's status and history" },
	{ "list-training-jobs", cli_cmd_list,
	  "list-training-jobs [--status S] [--name-contains X] "
	  "[--sort-by Name|CreationTime|Status]\n"
	  "           [--sort-order Ascending|Descending] [--max-results N] "
	  "[--next-token T] [--all]",
	  "list jobs, one page or --all" },
	{ "stop-training-job", cli_cmd_stop, "stop-training-job NAME",
	  "stop a running job" },
	{ "requeue-training-job", cli_cmd_requeue, "requeue-training-job NAME",
	  "preempt a running job (admin): it stops with its last checkpoint, "
	  "waits in the queue and resumes, no retry spent" },
	{ "delete-training-job", cli_cmd_delete, "delete-training-job NAME",
	  "delete a finished job" },
	{ "wait", cli_cmd_wait,
	  "wait NAME | --tuning-job NAME [--timeout S] [--interval S]",
	  "wait until a training (or tuning) job ends (exit 0 Completed, "
	  "3 Failed, 4 Stopped, 5 timeout)" },
	{ "create-tuning-job", cli_cmd_tuning_create,
	  "create-tuning-job NAME [--strategy Random|Grid|Bayesian|Hyperband]\n"
	  "           [--objective Maximize|Minimize:METRIC] "
	  "[--metric-definition NAME=REGEX]...\n"
	  "           [--max-jobs N] [--max-parallel N] "
	  "[--early-stopping Off|Auto] [--random-seed N]\n"
	  "           [--param NAME=continuous:MIN:MAX[:SCALE]]... "
	  "[--param NAME=integer:MIN:MAX[:SCALE]]...\n"
	  "           [--param NAME=categorical:A,B,C]... "
	  "[--static NAME=VALUE]...\n"
	  "           [--image IMG] [--instance-type T] [--instance-count N] "
	  "[--role-arn ARN]\n"
	  "           [--output-path URI] [--input-mode File|Pipe|FastFile] "
	  "[--channel NAME=URI]...\n"
	  "           [--environment K=V]... [--max-runtime S] "
	  "[--volume-size GB]\n"
	  "           [--cli-input-json file://tuning.json] [--wait]",
	  "start a hyperparameter tuning job from flags or a JSON request "
	  "(--wait: then wait for its end)" },
	{ "describe-tuning-job", cli_cmd_tuning_describe,
	  "describe-tuning-job NAME",
	  "show one tuning job's status, counters and best training job" },
	{ "list-tuning-jobs", cli_cmd_tuning_list,
	  "list-tuning-jobs [--status S] [--name-contains X] "
	  "[--sort-by Name|CreationTime|Status]\n"
	  "           [--sort-order Ascending|Descending] [--max-results N] "
	  "[--next-token T] [--all]",
	  "list tuning jobs with their best objective, one page or --all" },
	{ "list-tuning-job-training-jobs", cli_cmd_tuning_children,
	  "list-tuning-job-training-jobs NAME [--status S]\n"
	  "           [--sort-by FinalObjectiveMetricValue|CreationTime|"
	  "Status|Name]\n"
	  "           [--sort-order Ascending|Descending] [--max-results N] "
	  "[--next-token T] [--all]",
	  "a tuning job's training jobs: tuned values and objective" },
	{ "stop-tuning-job", cli_cmd_tuning_stop, "stop-tuning-job NAME",
	  "stop a tuning job and its running training jobs" },
	{ "delete-tuning-job", cli_cmd_tuning_delete, "delete-tuning-job NAME",
	  "delete an ended tuning job (its training jobs stay)" },
	{ "upload-source", cli_cmd_upload_source, "upload-source DIR --to URI",
	  "tar.gz a script folder to a URI and print the URI" },
	{ "cp", cli_cmd_cp, "cp SRC DST [--recursive]",
	  "copy between a local path and an s3:// or file:// URI" },
	{ "ls", cli_cmd_ls, "ls URI", "list the objects under a URI prefix" },
	{ "rm", cli_cmd_rm, "rm URI", "delete one object" },
	{ "cluster", cli_cmd_cluster,
	  "cluster up --hosts N [--prefix P] [--port PORT] [--instance-type T] "
	  "[--registry [PORT]] "
	  "[-- TRAINCTLD-ARGS]\n"
	  "           | cluster down [--prefix P] [--force] | cluster status "
	  "| cluster env "
	  "| cluster exec HOST CMD...",
	  "a test cluster of N hosts on this machine (root) and a controller "
	  "for it" },
	{ "list-hosts", cli_cmd_list_hosts, "list-hosts",
	  "the controller's hosts, their state and current job" },
	{ "members", cli_cmd_members,
	  "members [--json] | members add ID RAFTADDR APIURL | "
	  "members remove ID",
	  "the members of a replicated controller: their roles and lags; "
	  "add or remove one (an admin key)" },
	{ "queue", cli_cmd_queue, "queue [QUEUE] [--json]",
	  "the job queues: per share and user the guarantee, hosts in use, "
	  "borrowed and lent, running and waiting jobs and why they wait" },
	{ "drain-host", cli_cmd_drain_host, "drain-host NAME [--reason TEXT]",
	  "no new work on a host; its jobs move off it (SIGTERM, last "
	  "checkpoint, no retry spent)" },
	{ "undrain-host", cli_cmd_undrain_host, "undrain-host NAME",
	  "a drained host takes work again" },
	{ "list-images", cli_cmd_list_images, "list-images HOST",
	  "the container images a host holds (docs/containers.md)" },
	{ "prune-images", cli_cmd_prune_images,
	  "prune-images HOST [--wait SECONDS]",
	  "remove the images no container on a host uses (admin); waits "
	  "for it (120 s, 0: no wait) and lists what is left" },
	{ "help", cmd_help, "help [COMMAND]", "show this help" },
};

#define N_COMMANDS ARRAY_SIZE(commands)

static const char global_usage[] =
	"usage: trainctl [--endpoint URL] [--output table|json] [--region R] "
	"COMMAND [ARGS]\n"
	"       trainctl --version\n";

enum list_opt {
	OPT_LIST_STATUS = 1,
	OPT_LIST_NAME_CONTAINS,
	OPT_LIST_SORT_BY,
	OPT_LIST_SORT_ORDER,
	OPT_LIST_MAX_RESULTS,
	OPT_LIST_NEXT_TOKEN,
	OPT_LIST_ALL
};

static const struct option list_opts[] = {
	{ "status", required_argument, NULL, OPT_LIST_STATUS },
	{ "name-contains", required_argument, NULL, OPT_LIST_NAME_CONTAINS },
	{ "sort-by", required_argument, NULL, OPT_LIST_SORT_BY },
	{ "sort-order", required_argument, NULL, OPT_LIST_SORT_ORDER },
	{ "max-results", required_argument, NULL, OPT_LIST_MAX_RESULTS },
	{ "next-token", required_argument, NULL, OPT_LIST_NEXT_TOKEN },
	{ "all", no_argument, NULL, OPT_LIST_ALL },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int cli_parse_list_flags(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			 int argc, char **argv, struct cli_list_flags *f)
{
	int64_t v;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", list_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_LIST_STATUS:
			f->status = optarg;
			break;
		case OPT_LIST_NAME_CONTAINS:
			f->name_contains = optarg;
			break;
		case OPT_LIST_SORT_BY:
			f->sort_by = optarg;
			break;
		case OPT_LIST_SORT_ORDER:
			f->sort_order = optarg;
			break;
		case OPT_LIST_MAX_RESULTS:
			if (cli_parse_int(optarg, 1, 100, &v))
				return cli_usage_error(
					cmd,
					"invalid --max-results '%s': "
					"expected 1..100",
					optarg);
			f->max_results = (int)v;
			break;
		case OPT_LIST_NEXT_TOKEN:
			f->next_token = optarg;
			break;
		case OPT_LIST_ALL:
			f->all = 1;
			break;
		default:
			rc = cli_common_option(ctx, cmd, opt, argv);
			if (rc)
				return rc;
		}
	}
	return 0;
}

const struct cli_cmd *cli_cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_cmd_usage(FILE *f, const struct cli_cmd *cmd)
{
	fprintf(f, "usage: trainctl %s\n", cmd->usage);
}

static void print_help(FILE *f)
{
	size_t i;

	fputs(global_usage, f);
	fputs("\ncommands:\n", f);
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "   %-29s %s\n", commands[i].name, commands[i].help);
	fputs("\noptions (before or after the command):\n"
	      "   --endpoint URL   controller URL (env TRAINCTL_ENDPOINT, "
	      "default " CLI_DEFAULT_ENDPOINT "); the members of a\n"
	      "                    replicated controller: URL,URL,...\n"
	      "   --output FMT     table (default) or json\n"
	      "   --region R       signing region (env AWS_REGION, "
	      "AWS_DEFAULT_REGION, default " CLI_DEFAULT_REGION ")\n"
	      "   --ca-bundle FILE PEM CAs to verify an https controller "
	      "with (env AWS_CA_BUNDLE)\n"
	      "\nRequests are signed with SigV4 when AWS_ACCESS_KEY_ID and "
	      "AWS_SECRET_ACCESS_KEY are set\n(and AWS_SESSION_TOKEN when "
	      "present).\n"
	      "\nexit status: 0 ok, 1 the server answered an error, 2 the "
	      "server could not be reached,\n3/4/5 wait: Failed/Stopped/"
	      "timeout, 129 usage error\n",
	      f);
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("trainctl: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd)
		print_cmd_usage(stderr, cmd);
	else
		fputs(global_usage, stderr);
	return CLI_EXIT_USAGE;
}

void cli_getopt_reset(void)
{
	/* glibc reinitialises completely, permutation state too, on 0. */
	optind = 0;
	opterr = 0;
}

static int set_output(struct cli_ctx *ctx, const struct cli_cmd *cmd,
		      const char *arg)
{
	if (!strcmp(arg, "table"))
		ctx->output = CLI_OUTPUT_TABLE;
	else if (!strcmp(arg, "json"))
		ctx->output = CLI_OUTPUT_JSON;
	else
		return cli_usage_error(cmd,
				       "invalid --output '%s': expected table "
				       "or json",
				       arg);
	return 0;
}

static int set_endpoint(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			const char *arg)
{
	struct buf err = BUF_INIT;
	int rc = 0;

	if (cli_endpoint_check(arg, &err))
		rc = cli_usage_error(cmd, "%s", err.data);
	else
		ctx->endpoint = arg;
	buf_release(&err);
	return rc;
}

int cli_common_option(struct cli_ctx *ctx, const struct cli_cmd *cmd, int opt,
		      char **argv)
{
	switch (opt) {
	case CLI_OPT_ENDPOINT:
		if (!*optarg)
			return cli_usage_error(cmd, "--endpoint is empty");
		return set_endpoint(ctx, cmd, optarg);
	case CLI_OPT_OUTPUT:
		return set_output(ctx, cmd, optarg);
	case CLI_OPT_REGION:
		if (!*optarg)
			return cli_usage_error(cmd, "--region is empty");
		ctx->region = optarg;
		return 0;
	case CLI_OPT_CA_BUNDLE:
		if (!*optarg)
			return cli_usage_error(cmd, "--ca-bundle is empty");
		ctx->ca_bundle = optarg;
		/* The storage commands read it from the environment. */
		setenv("AWS_CA_BUNDLE", optarg, 1);
		return 0;
	case CLI_OPT_HELP:
		if (cmd)
			print_cmd_usage(stdout, cmd);
		else
			print_help(stdout);
		/* A negative code tells the caller to stop with success. */
		return -1;
	case ':':
		return cli_usage_error(cmd, "option '%s' needs a value",
				       argv[optind - 1]);
	case '?':
	default:
		return cli_usage_error(cmd, "unknown option '%s'",
				       argv[optind - 1]);
	}
}

int cli_parse_name(struct cli_ctx *ctx, const struct cli_cmd *cmd, int argc,
		   char **argv, const char *what, const char **name_out)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc;
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing %s name", what);
	if (optind + 1 < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind + 1]);
	if (!*argv[optind])
		return cli_usage_error(cmd, "empty %s name", what);
	*name_out = argv[optind];
	return 0;
}

static int cmd_help(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd;

	(void)ctx;
	if (argc < 2) {
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	cmd = cli_cmd_find(argv[1]);
	if (!cmd)
		return cli_usage_error(NULL,
				       "unknown command '%s'; see 'trainctl "
				       "help'",
				       argv[1]);
	print_cmd_usage(stdout, cmd);
	return CLI_EXIT_OK;
}

static const char *first_env(const char *a, const char *b)
{
	const char *v = getenv(a);

	if (v && *v)
		return v;
	v = b ? getenv(b) : NULL;
	return v && *v ? v : NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", no_argument, NULL, 'V' },
		CLI_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_ctx ctx = { 0 };
	const struct cli_cmd *cmd;
	int opt, rc;

	ctx.endpoint = first_env("TRAINCTL_ENDPOINT", NULL);
	if (!ctx.endpoint)
		ctx.endpoint = CLI_DEFAULT_ENDPOINT;
	ctx.region = first_env("AWS_REGION", "AWS_DEFAULT_REGION");
	if (!ctx.region)
		ctx.region = CLI_DEFAULT_REGION;
	ctx.output = CLI_OUTPUT_TABLE;
	ctx.ca_bundle = first_env("AWS_CA_BUNDLE", "TRAINCTL_CA_FILE");

	/* '+': stop at the command name; its own options come after it. */
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
		if (opt == 'V') {
			printf("trainctl version %s\n", CLI_VERSION);
			return CLI_EXIT_OK;
		}
		rc = cli_common_option(&ctx, NULL, opt, argv);
		if (rc < 0)
			return CLI_EXIT_OK;
		if (rc)
			return rc;
	}
	if (optind >= argc)
		return cli_usage_error(NULL, "no command given; see 'trainctl "
					     "help'");
	/* TRAINCTL_ENDPOINT, when no --endpoint replaced it. */
	rc = set_endpoint(&ctx, NULL, ctx.endpoint);
	if (rc)
		return rc;
	cmd = cli_cmd_find(argv[optind]);
	if (!cmd)
		return cli_usage_error(NULL,
				       "unknown command '%s'; see 'trainctl "
				       "help'",
				       argv[optind]);

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		cli_error("cannot initialise libcurl");
		return CLI_EXIT_TRANSPORT;
	}
	argc -= optind;
	argv += optind;
	cli_getopt_reset();
	rc = cmd->fn(&ctx, argc, argv);
	cli_http_close(&ctx);
	curl_global_cleanup();
	if (fflush(stdout)) {
		cli_error("cannot write the output");
		if (!rc)
			rc = CLI_EXIT_TRANSPORT;
	}
	return rc;
}
