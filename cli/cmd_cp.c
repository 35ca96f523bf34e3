#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "storage/storage.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * cp, ls and rm: objects in file://, the embedded store (through the
 * controller, or its folder when TRAINCTL_STATE_DIR is set) and real S3,
 * like a small `aws s3 cp/ls/rm`. This is how data gets into s3:// URIs of
 * the embedded store from any machine.
 */

enum cp_opt { OPT_RECURSIVE = 1 };

static const struct option cp_opts[] = {
	{ "recursive", no_argument, NULL, OPT_RECURSIVE },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int cli_storage_open(struct cli_ctx *ctx, struct stor **out)
{
	struct stor_config cfg;
	struct buf err = BUF_INIT;
	struct buf url = BUF_INIT;
	int ret;

	stor_config_init(&cfg);
	ret = stor_config_from_env(&cfg, &err);
	if (ret) {
		cli_error("%s", err.data);
		goto out;
	}
	if (!cfg.s3_region)
		stor_config_set(&cfg.s3_region, ctx->region);
	/* No endpoint: the embedded store, through the controller. */
	if (!cfg.s3_endpoint && !cfg.state_dir)
		stor_config_set(&cfg.blob_url, cli_endpoint_live(ctx));
	ret = stor_open(&cfg, out, &err);
	if (ret)
		cli_error("%s", err.data);
out:
	stor_config_release(&cfg);
	buf_release(&err);
	buf_release(&url);
	return ret ? CLI_EXIT_USAGE : 0;
}

int cli_storage_exit(int ret)
{
	if (ret == ERR_INVALID)
		return CLI_EXIT_USAGE;
	if (ret == ERR_IO)
		return CLI_EXIT_TRANSPORT;
	return CLI_EXIT_API;
}

static int is_uri(const char *s)
{
	return !strncmp(s, "s3://", 5) || !strncmp(s, "file://", 7);
}

/* Parses argv into positional arguments; returns -1 after --help. */
static int parse_args(struct cli_ctx *ctx, const struct cli_cmd *cmd, int argc,
		      char **argv, int *recursive, int want, char **pos)
{
	int opt, rc, i;

	while ((opt = getopt_long(argc, argv, ":hr", cp_opts, NULL)) != -1) {
		if ((opt == OPT_RECURSIVE || opt == 'r') && recursive) {
			*recursive = 1;
			continue;
		}
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc;
	}
	if (argc - optind != want)
		return cli_usage_error(cmd, "expected %d argument%s", want,
				       want > 1 ? "s" : "");
	for (i = 0; i < want; i++)
		pos[i] = argv[optind + i];
	return 0;
}

int cli_cmd_cp(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	char *pos[2];
	struct stor *s = NULL;
	struct stor_sync_stats st = { 0 };
	struct buf err = BUF_INIT;
	int recursive = 0, rc, ret;

	rc = parse_args(ctx, cmd, argc, argv, &recursive, 2, pos);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (is_uri(pos[0]) == is_uri(pos[1]))
		return cli_usage_error(cmd, "copy between a local path and a "
					    "URI (s3://... or file://...)");
	rc = cli_storage_open(ctx, &s);
	if (rc)
		return rc;
	if (is_uri(pos[0]) && recursive)
		ret = stor_get_prefix(s, pos[0], pos[1], &st, &err);
	else if (is_uri(pos[0]))
		ret = stor_get(s, pos[0], pos[1], NULL, &err);
	else if (recursive)
		ret = stor_put_dir(s, pos[0], pos[1], 0, &st, &err);
	else
		ret = stor_put(s, pos[0], pos[1], NULL, &err);
	if (ret) {
		cli_error("%s", err.data);
		rc = cli_storage_exit(ret);
	} else if (recursive) {
		fprintf(stderr, "trainctl: copied %zu files, %lld bytes\n",
			st.files, (long long)st.bytes);
	}
	stor_close(s);
	buf_release(&err);
	return rc;
}

int cli_cmd_ls(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct stor_list l = STOR_LIST_INIT;
	struct buf err = BUF_INIT;
	struct stor *s = NULL;
	char *pos[1], when[40];
	size_t i;
	int rc, ret;

	rc = parse_args(ctx, cmd, argc, argv, NULL, 1, pos);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = cli_storage_open(ctx, &s);
	if (rc)
		return rc;
	ret = stor_list(s, pos[0], &l, &err);
	if (ret) {
		cli_error("%s", err.data);
		rc = cli_storage_exit(ret);
	}
	for (i = 0; !ret && i < l.n; i++) {
		if (ctx->output == CLI_OUTPUT_JSON)
			continue;
		printf("%s %12lld %s\n",
		       time_format_iso(l.v[i].mtime_ms, when, sizeof(when)),
		       (long long)l.v[i].size, l.v[i].key);
	}
	if (!ret && ctx->output == CLI_OUTPUT_JSON) {
		/* Keys are plain strings; escape the two JSON specials. */
		printf("[");
		for (i = 0; i < l.n; i++) {
			const char *k;

			printf("%s{\"Key\":\"", i ? "," : "");
			for (k = l.v[i].key; *k; k++) {
				if (*k == '"' || *k == '\\')
					putchar('\\');
				putchar(*k);
			}
			printf("\",\"Size\":%lld}", (long long)l.v[i].size);
		}
		printf("]\n");
	}
	stor_list_release(&l);
	stor_close(s);
	buf_release(&err);
	return rc;
}

int cli_cmd_rm(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct buf err = BUF_INIT;
	struct stor *s = NULL;
	char *pos[1];
	int rc, ret;

	rc = parse_args(ctx, cmd, argc, argv, NULL, 1, pos);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = cli_storage_open(ctx, &s);
	if (rc)
		return rc;
	ret = stor_delete(s, pos[0], &err);
	if (ret) {
		cli_error("%s", err.data);
		rc = cli_storage_exit(ret);
	}
	stor_close(s);
	buf_release(&err);
	return rc;
}
