#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/ha_members.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/banned.h"

/*
 * members [--json]: the members of a replicated controller (GET
 * /v1/members, docs/ha.md); members add ID RAFTADDR APIURL and members
 * remove ID change them (an admin key).
 */

enum { OPT_JSON = 1 };

static const struct option members_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* Prints a change's answer (the members after it); the exit status. */
static int change_done(struct cli_ctx *ctx, int rc, struct cli_reply *reply,
		       struct buf *err)
{
	struct buf table = BUF_INIT, why = BUF_INIT;

	rc = cli_reply_status(rc, reply, err);
	if (rc) {
		/* cli_reply_status() said why */
	} else if (ctx->output == CLI_OUTPUT_JSON) {
		cli_print_json(reply);
	} else if (api_members_table(reply->body.data, reply->body.len, &table,
				     &why)) {
		cli_error("bad members reply: %s", why.data);
		rc = CLI_EXIT_TRANSPORT;
	} else {
		fputs(table.data, stdout);
	}
	buf_release(&table);
	buf_release(&why);
	return rc;
}

static int member_id(const struct cli_cmd *cmd, const char *s, int64_t *id)
{
	if (cli_parse_int(s, 1, 1000000, id))
		return cli_usage_error(
			cmd, "'%s' is not a member id (1..1000000)", s);
	return 0;
}

static int members_add(struct cli_ctx *ctx, const struct cli_cmd *cmd, int argc,
		       char **argv)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, body = BUF_INIT;
	int64_t id;
	int rc;

	if (optind + 4 != argc)
		return cli_usage_error(cmd, "members add takes ID RAFTADDR "
					    "APIURL");
	rc = member_id(cmd, argv[optind + 1], &id);
	if (rc)
		return rc;
	if (api_member_add_build((unsigned long)id, argv[optind + 2],
				 argv[optind + 3], &body))
		return cli_usage_error(cmd, "the addresses are not UTF-8");
	rc = cli_http_post(ctx, "/v1/members", &body, &reply, &err);
	rc = change_done(ctx, rc, &reply, &err);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
	return rc;
}

static int members_remove(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			  int argc, char **argv)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, path = BUF_INIT;
	int64_t id;
	int rc;

	if (optind + 2 != argc)
		return cli_usage_error(cmd, "members remove takes ID");
	rc = member_id(cmd, argv[optind + 1], &id);
	if (rc)
		return rc;
	(void)buf_addf(&path, "/v1/members/%lld", (long long)id);
	rc = cli_http_delete(ctx, path.data, &reply, &err);
	rc = change_done(ctx, rc, &reply, &err);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&path);
	return rc;
}

int cli_cmd_members(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find("members");
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", members_opts, NULL)) !=
	       -1) {
		if (opt == OPT_JSON) {
			ctx->output = CLI_OUTPUT_JSON;
			continue;
		}
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (optind == argc)
		return cli_get_table(ctx, "/v1/members", api_members_table,
				     "members");
	if (!strcmp(argv[optind], "add"))
		return members_add(ctx, cmd, argc, argv);
	if (!strcmp(argv[optind], "remove"))
		return members_remove(ctx, cmd, argc, argv);
	return cli_usage_error(cmd,
			       "unknown members command '%s' (add or "
			       "remove)",
			       argv[optind]);
}
