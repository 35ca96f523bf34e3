#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/hosts_json.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/bug.h"
#include "common/timeutil.h"
#include "common/banned.h"

/* list-hosts: the controller's hosts, their state and current job. */

static const struct option hosts_opts[] = {
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* The one host name a command takes, checked; 0 or the usage error. */
static int host_arg(const struct cli_cmd *cmd, int argc, char **argv)
{
	if (optind + 1 != argc)
		return cli_usage_error(cmd, "expected one host name");
	if (strlen(argv[optind]) > 200 || strchr(argv[optind], '/') ||
	    strchr(argv[optind], '?') || strchr(argv[optind], '%'))
		return cli_usage_error(cmd, "'%s' is not a host name",
				       argv[optind]);
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
	rc = host_arg(cmd, argc, argv);
	if (rc)
		return rc;
	if (reason && strlen(reason) > API_DRAIN_REASON_MAX)
		return cli_usage_error(cmd, "--reason is longer than %d bytes",
				       API_DRAIN_REASON_MAX);
	(void)buf_addf(&path, "/v1/hosts/%s/%s", argv[optind],
		       drain ? "drain" : "undrain");
	if (api_host_drain_build(reason, &body))
		BUG("cannot build a drain request");
	rc = cli_reply_status(cli_http_post(ctx, path.data, &body, &reply, &err),
			  &reply, &err);
	if (rc) {
		/* cli_reply_status() said why */
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
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", hosts_opts, NULL)) != -1) {
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	return cli_get_table(ctx, "/v1/hosts", api_hosts_table, "hosts");
}

/* --- list-images HOST / prune-images HOST ------------------------------ */

static void human_size(int64_t n, char *out, size_t size)
{
	static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	(void)snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* The table of a GET /v1/hosts/<name>/images answer. */
static int images_table(const char *host, const struct buf *body)
{
	struct api_host_images im;
	size_t i, width = 5;

	if (api_host_images_parse(body->data, body->len, &im)) {
		cli_error("bad images reply");
		return CLI_EXIT_TRANSPORT;
	}
	if (!im.reported) {
		printf("%s has not reported its images yet\n", host);
		api_host_images_release(&im);
		return 0;
	}
	for (i = 0; i < im.n; i++) {
		const char *name = im.images[i].name;

		if (name && strlen(name) > width)
			width = strlen(name);
	}
	printf("%-*s  %-12s  %9s  %s\n", (int)width, "IMAGE", "ID", "SIZE",
	       "CREATED");
	for (i = 0; i < im.n; i++) {
		const struct api_host_image *e = &im.images[i];
		char size[32];

		human_size(e->size, size, sizeof(size));
		printf("%-*s  %-12.12s  %9s  %s\n", (int)width,
		       e->name ? e->name : "<none>", e->id ? e->id : "", size,
		       e->created ? e->created : "");
	}
	api_host_images_release(&im);
	return 0;
}

int cli_cmd_list_images(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find("list-images");
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, path = BUF_INIT;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", hosts_opts, NULL)) != -1) {
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	rc = host_arg(cmd, argc, argv);
	if (rc)
		return rc;
	(void)buf_addf(&path, "/v1/hosts/%s/images", argv[optind]);
	rc = cli_reply_status(cli_http_get(ctx, path.data, &reply, &err), &reply,
			  &err);
	if (!rc && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
	else if (!rc)
		rc = images_table(argv[optind], &reply.body);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&path);
	return rc;
}

enum { OPT_WAIT = 1 };

static const struct option prune_opts[] = {
	{ "wait", required_argument, NULL, OPT_WAIT },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* prune.done of an images answer, -1 when it has none. */
static int64_t prune_done(const struct buf *body)
{
	struct api_host_images im;
	int64_t v;

	if (api_host_images_parse(body->data, body->len, &im))
		return -1;
	v = im.prune_done;
	api_host_images_release(&im);
	return v;
}

int cli_cmd_prune_images(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find("prune-images");
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, path = BUF_INIT, body = BUF_INIT;
	int64_t wait_ms = 120000, deadline;
	struct timespec tick = { 0, 200 * 1000 * 1000 };
	struct api_host_images im;
	int64_t want = 0;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", prune_opts, NULL)) != -1) {
		if (opt == OPT_WAIT) {
			if (cli_parse_seconds(optarg, &wait_ms))
				return cli_usage_error(
					cmd, "--wait wants seconds, not '%s'",
					optarg);
			continue;
		}
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	rc = host_arg(cmd, argc, argv);
	if (rc)
		return rc;
	(void)buf_addf(&path, "/v1/hosts/%s/images/prune", argv[optind]);
	(void)buf_adds(&body, "{}");
	rc = cli_reply_status(cli_http_post(ctx, path.data, &body, &reply, &err),
			  &reply, &err);
	if (!rc &&
	    !api_host_images_parse(reply.body.data, reply.body.len, &im)) {
		want = im.prune;
		api_host_images_release(&im);
	}
	buf_reset(&path);
	(void)buf_addf(&path, "/v1/hosts/%s/images", argv[optind]);
	deadline = time_mono_ms() + wait_ms;
	while (!rc && wait_ms) {
		cli_reply_release(&reply);
		reply = (struct cli_reply)CLI_REPLY_INIT;
		rc = cli_reply_status(cli_http_get(ctx, path.data, &reply, &err),
				  &reply, &err);
		if (rc || prune_done(&reply.body) >= want)
			break;
		if (time_mono_ms() > deadline) {
			cli_error("%s has not pruned its images after %lld s",
				  argv[optind], (long long)(wait_ms / 1000));
			rc = CLI_EXIT_TIMEOUT;
			break;
		}
		(void)nanosleep(&tick, NULL);
	}
	if (!rc && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
	else if (!rc && wait_ms)
		rc = images_table(argv[optind], &reply.body);
	else if (!rc)
		printf("%s: prune of unused images asked\n", argv[optind]);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&path);
	buf_release(&body);
	return rc;
}
