#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "api/hosts_json.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/bug.h"
#include "common/banned.h"

/* list-hosts: the controller's hosts, their state and current job. */

static const struct option hosts_opts[] = {
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/*
 * The exit status of a REST request: 0 for a 2xx answer, else the error
 * is printed and CLI_EXIT_TRANSPORT or CLI_EXIT_API returned.
 */
static int reply_status(int rc, const struct cli_reply *reply,
			const struct buf *err)
{
	if (rc) {
		cli_error("%s", err->data);
		return CLI_EXIT_TRANSPORT;
	}
	if (reply->status < 200 || reply->status > 299) {
		cli_error("%s: %s", reply->err_type,
			  reply->err_message ? reply->err_message : "");
		return CLI_EXIT_API;
	}
	return 0;
}

/* drain-host NAME [--reason TEXT] / undrain-host NAME */

enum { OPT_REASON = 1 };

static const struct option drain_opts[] = {
	{ "reason", required_argument, NULL, OPT_REASON },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static int drain_cmd(struct cli_ctx *ctx, int argc, char **argv, int drain)
{
	const struct cli_cmd *cmd =
		cli_cmd_find(drain ? "drain-host" : "undrain-host");
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, body = BUF_INIT, path = BUF_INIT;
	const char *reason = NULL;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h",
				  drain ? drain_opts : hosts_opts, NULL)) !=
	       -1) {
		if (opt == OPT_REASON) {
			reason = optarg;
			continue;
		}
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (optind + 1 != argc)
		return cli_usage_error(cmd, "expected one host name");
	if (strlen(argv[optind]) > 200 || strchr(argv[optind], '/') ||
	    strchr(argv[optind], '?') || strchr(argv[optind], '%'))
		return cli_usage_error(cmd, "'%s' is not a host name",
				       argv[optind]);
	if (reason && strlen(reason) > API_DRAIN_REASON_MAX)
		return cli_usage_error(cmd, "--reason is longer than %d bytes",
				       API_DRAIN_REASON_MAX);
	(void)buf_addf(&path, "/v1/hosts/%s/%s", argv[optind],
		       drain ? "drain" : "undrain");
	if (api_host_drain_build(reason, &body))
		BUG("cannot build a drain request");
	rc = reply_status(cli_http_post(ctx, path.data, &body, &reply, &err),
			  &reply, &err);
	if (rc) {
		/* reply_status() said why */
	} else if (ctx->output == CLI_OUTPUT_JSON) {
		cli_print_json(&reply);
	} else {
		printf("%s %s\n", argv[optind],
		       drain ? "drained" : "undrained");
	}
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
	buf_release(&path);
	return rc;
}

int cli_cmd_drain_host(struct cli_ctx *ctx, int argc, char **argv)
{
	return drain_cmd(ctx, argc, argv, 1);
}

int cli_cmd_undrain_host(struct cli_ctx *ctx, int argc, char **argv)
{
	return drain_cmd(ctx, argc, argv, 0);
}

int cli_cmd_list_hosts(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find("list-hosts");
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", hosts_opts, NULL)) != -1) {
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	rc = reply_status(cli_http_get(ctx, "/v1/hosts", &reply, &err), &reply,
			  &err);
	if (rc) {
		/* reply_status() said why */
	} else if (ctx->output == CLI_OUTPUT_JSON) {
		cli_print_json(&reply);
	} else if (api_hosts_table(reply.body.data, reply.body.len, &out,
				   &err)) {
		cli_error("bad hosts reply: %s", err.data);
		rc = CLI_EXIT_TRANSPORT;
	} else {
		fputs(out.data, stdout);
	}
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&out);
	return rc;
}
