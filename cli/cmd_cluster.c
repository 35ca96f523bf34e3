#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * cluster up --hosts N | cluster down | status | env | exec HOST CMD...:
 * a test cluster of hosts on this machine (network namespaces, one sshd
 * each) and a trainctld that provisions them. The work is done by
 * cluster.sh (scripts/cluster.sh in the tree), which this command execs with
 * the rest of the arguments, telling it where trainctld is (the folder of
 * this binary) and to answer usage errors with our exit code.
 *
 * The script is looked for in $TRAINCTL_CLUSTER_SCRIPT, then relative to
 * the folder of this binary: cluster.sh, trainctl-cluster (installed next to
 * the binaries), ../libexec/trainctl/cluster.sh, ../scripts/cluster.sh and
 * ../../scripts/cluster.sh (the build tree: build/bin/trainctl).
 */

/* Until cli/cli.h declares it. */
int cli_cmd_cluster(struct cli_ctx *ctx, int argc, char **argv);

static const char *const script_names[] = {
	"cluster.sh",
	"trainctl-cluster",
	"../libexec/trainctl/cluster.sh",
	"../scripts/cluster.sh",
	"../../scripts/cluster.sh",
};

/* The folder this binary lives in, into dir. Returns 0 or -1. */
static int self_dir(struct buf *dir)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	(void)buf_adds(dir, slash == path ? "/" : path);
	return 0;
}

/* Finds the script into out. Returns 0, or -1 after printing the error. */
static int find_script(const struct buf *bindir, struct buf *out)
{
	const char *env = getenv("TRAINCTL_CLUSTER_SCRIPT");
	struct buf tried = BUF_INIT;
	size_t i;

	if (env && *env) {
		if (!access(env, R_OK)) {
			(void)buf_adds(out, env);
			return 0;
		}
		cli_error("TRAINCTL_CLUSTER_SCRIPT '%s': %s", env,
			  strerror(errno));
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(script_names); i++) {
		buf_reset(out);
		(void)buf_addf(out, "%s/%s", bindir->data, script_names[i]);
		if (!access(out->data, R_OK)) {
			buf_release(&tried);
			return 0;
		}
		(void)buf_addf(&tried, "%s%s", tried.len ? ", " : "",
			       out->data);
	}
	cli_error("cluster.sh not found (tried %s); set "
		  "TRAINCTL_CLUSTER_SCRIPT",
		  tried.data);
	buf_release(&tried);
	buf_reset(out);
	return -1;
}

int cli_cmd_cluster(struct cli_ctx *ctx, int argc, char **argv)
{
	struct buf bindir = BUF_INIT, script = BUF_INIT;
	char usage_exit[16];
	char **args;
	int i;

	(void)ctx;
	if (argc < 2)
		return cli_usage_error(
			cli_cmd_find(argv[0]),
			"expected up, down, status, env or exec");
	if (self_dir(&bindir)) {
		cli_error("cannot find the folder of trainctl "
			  "(/proc/self/exe)");
		return CLI_EXIT_USAGE;
	}
	if (find_script(&bindir, &script)) {
		buf_release(&bindir);
		return CLI_EXIT_USAGE;
	}
	snprintf(usage_exit, sizeof(usage_exit), "%d", CLI_EXIT_USAGE);
	if (setenv("TRAINCTL_BIN_DIR", bindir.data, 1) ||
	    setenv("TRAINCTL_CLUSTER_PROG", "trainctl cluster", 1) ||
	    setenv("TRAINCTL_CLUSTER_USAGE_EXIT", usage_exit, 1)) {
		cli_error("cannot set the environment: %s", strerror(errno));
		goto fail;
	}
	/* bash SCRIPT ARGS...: the script need not be executable. */
	args = xcalloc((size_t)argc + 2, sizeof(*args));
	args[0] = (char *)"bash";
	args[1] = script.data;
	for (i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	args[argc + 1] = NULL;
	fflush(stdout);
	fflush(stderr);
	execvp("bash", args);
	cli_error("cannot run bash %s: %s", script.data, strerror(errno));
	free(args);
fail:
	buf_release(&bindir);
	buf_release(&script);
	return CLI_EXIT_TRANSPORT;
}
