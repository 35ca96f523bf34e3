/*
 * Commands on one object the API names in its request body: describe,
 * stop, delete of a training job or a tuning job.
 */
#include <stdio.h>

#include "api/client.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/banned.h"

int cli_named_call(struct cli_ctx *ctx, const struct cli_named *kind,
		   const char *op, const char *name, struct cli_reply *reply)
{
	struct buf body = BUF_INIT;
	int rc;

	if (kind->build(name, &body)) {
		buf_release(&body);
		if (kind->usage_on_bad_name)
			return cli_usage_error(NULL, "invalid %s name '%s'",
					       kind->what, name);
		cli_error("invalid %s name '%s'", kind->what, name);
		return CLI_EXIT_USAGE;
	}
	rc = cli_call(ctx, op, &body, reply);
	buf_release(&body);
	return rc;
}

int cli_named_cmd(struct cli_ctx *ctx, const struct cli_named *kind,
		  const char *op, cli_named_show_fn *show, int argc,
		  char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT;
	const char *name = NULL;
	int rc;

	rc = cli_parse_name(ctx, cmd, argc, argv, kind->what, &name);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = cli_named_call(ctx, kind, op, name, &reply);
	if (!rc && ctx->output == CLI_OUTPUT_JSON) {
		cli_print_json(&reply);
	} else if (!rc && show && show(&reply, &err)) {
		cli_error("malformed response: %s", err.data);
		rc = CLI_EXIT_TRANSPORT;
	}
	buf_release(&err);
	cli_reply_release(&reply);
	return rc;
}
