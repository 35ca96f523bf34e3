#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "api/queues_json.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/banned.h"

/*
 * queue [QUEUE] [--json]: the job queues as the scheduler's last pass saw
 * them (GET /v1/queues, docs/queues.md "Watching the queues"): per queue,
 * share and user the guarantee, hosts in use, borrowed and lent, the
 * running and waiting jobs, and each waiting job's place and reason.
 */

enum { OPT_JSON = 1 };

static const struct option queue_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* A job queue's name as AWS Batch allows it: 1-128 of [A-Za-z0-9_-]. */
static int queue_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 128 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_-") == n;
}

int cli_cmd_queue(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find("queue");
	struct buf path = BUF_INIT;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", queue_opts, NULL)) != -1) {
		if (opt == OPT_JSON) {
			ctx->output = CLI_OUTPUT_JSON;
			continue;
		}
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (optind + 1 < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind + 1]);
	if (optind < argc && !queue_name_ok(argv[optind]))
		return cli_usage_error(cmd, "'%s' is not a job queue name",
				       argv[optind]);
	(void)buf_adds(&path, "/v1/queues");
	if (optind < argc)
		(void)buf_addf(&path, "/%s", argv[optind]);
	rc = cli_get_table(ctx, path.data, api_queues_table, "queues");
	buf_release(&path);
	return rc;
}
