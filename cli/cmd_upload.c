#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "storage/storage.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * upload-source DIR --to URI: packs DIR as a tar.gz and uploads it, as the
 * SageMaker SDK does with source_dir; the printed URI goes into the
 * sagemaker_submit_directory hyperparameter. A URI ending in '/' gets
 * "sourcedir.tar.gz" appended (the SDK's name).
 */

enum upload_opt { OPT_TO = 1 };

static const struct option upload_opts[] = {
	{ "to", required_argument, NULL, OPT_TO },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

#define SOURCE_TARBALL "sourcedir.tar.gz"

int cli_cmd_upload_source(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	const char *to = NULL, *dir;
	struct buf uri = BUF_INIT, tmp = BUF_INIT, err = BUF_INIT;
	struct stor *s = NULL;
	struct stat st;
	const char *tdir = getenv("TMPDIR");
	int opt, rc, ret, fd;

	while ((opt = getopt_long(argc, argv, ":h", upload_opts, NULL)) != -1) {
		if (opt == OPT_TO) {
			to = optarg;
			continue;
		}
		rc = cli_common_option(ctx, cmd, opt, argv);
		if (rc)
			return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (argc - optind != 1)
		return cli_usage_error(cmd, "expected one folder");
	if (!to || !*to)
		return cli_usage_error(cmd, "missing --to URI");
	dir = argv[optind];
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return cli_usage_error(cmd, "'%s' is not a folder", dir);
	(void)buf_adds(&uri, to);
	if (to[strlen(to) - 1] == '/')
		(void)buf_adds(&uri, SOURCE_TARBALL);

	rc = cli_storage_open(ctx, &s);
	if (rc)
		goto out;
	(void)buf_addf(&tmp, "%s/trainctl-source.XXXXXX",
		       tdir && *tdir ? tdir : "/tmp");
	fd = mkstemp(tmp.data);
	if (fd < 0) {
		cli_error("cannot create a temp file in '%s'",
			  tdir && *tdir ? tdir : "/tmp");
		buf_reset(&tmp);
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	close(fd);
	ret = stor_archive_pack(&dir, 1, tmp.data, &err);
	if (!ret)
		ret = stor_put(s, tmp.data, uri.data, NULL, &err);
	if (ret) {
		cli_error("%s", err.data);
		rc = cli_storage_exit(ret);
		goto out;
	}
	printf("%s\n", uri.data);
out:
	if (tmp.len)
		unlink(tmp.data);
	stor_close(s);
	buf_release(&uri);
	buf_release(&tmp);
	buf_release(&err);
	return rc;
}
