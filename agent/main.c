/*
 * trainagent: the node daemon. Reads its configuration and token, checks
 * what the host can do (private /opt/ml, GPUs), then runs the poll loop
 * (loop.c) until SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent/agent.h"
#include "agent/assign.h"
#include "agent/config.h"
#include "agent/http.h"
#include "agent/images.h"
#include "agent/lease.h"
#include "agent/memckpt.h"
#include "agent/peerserve.h"
#include "agent/logq.h"
#include "agent/loop.h"
#include "agent/mpi.h"
#include "agent/proc.h"
#include "agent/session.h"
#include "agent/telemetry.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define TOKEN_ENV "TRAINCTL_AGENT_TOKEN"
#define TOKEN_MAX 4096

/* Opens /dev/null on any of fds 0-2 that is closed (OpenSSH's
 * sanitise_stdfd), so no pipe or socket of ours ever lands there. */
static void sanitise_stdfd(void)
{
	int fd = open("/dev/null", O_RDWR);

	while (fd >= 0 && fd <= 2)
		fd = dup(fd);
	if (fd > 2)
		close(fd);
}

static char *read_token_stdin(struct buf *err)
{
	struct buf b = BUF_INIT_MAX(TOKEN_MAX);
	char c;
	ssize_t n;
	int fd;

	/* One byte at a time: nothing past the first line is consumed. */
	for (;;) {
		n = read(STDIN_FILENO, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || c == '\n')
			break;
		if (buf_addch(&b, c)) {
			(void)buf_adds(err, "token on stdin is too long");
			buf_release(&b);
			return NULL;
		}
	}
	while (b.len && (b.data[b.len - 1] == '\r' || b.data[b.len - 1] == ' '))
		b.data[--b.len] = '\0';
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0) {
		(void)dup2(fd, STDIN_FILENO);
		if (fd != STDIN_FILENO)
			close(fd);
	}
	return buf_detach(&b, NULL);
}

static char *get_token(const struct agent_config *cfg, struct buf *err)
{
	const char *env = getenv(TOKEN_ENV);
	char *tok;

	if (cfg->token_stdin)
		tok = read_token_stdin(err);
	else
		tok = xstrdup(env ? env : "");
	/* Children must never see it; they get explicit environments
	 * anyway, this covers anything else that reads ours. */
	unsetenv(TOKEN_ENV);
	if (tok && !*tok) {
		(void)buf_addf(err,
			       "no host token: set %s or use "
			       "--token-stdin",
			       TOKEN_ENV);
		free(tok);
		return NULL;
	}
	return tok;
}

static void make_boot_id(char *out, size_t size)
{
	unsigned char r[16];
	size_t got = 0;
	ssize_t n;

	memset(r, 0, sizeof(r));
	while (got < sizeof(r)) {
		n = getrandom(r + got, sizeof(r) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	/* A version 4 UUID. */
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	(void)snprintf(out, size,
		       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		       "%02x%02x%02x%02x%02x%02x",
		       r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
		       r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

/*
 * Two agents on one work directory would fight over its jobs. Returns the
 * locked fd and *lock_path (malloc'ed), or -1 with err set.
 */
/* The folder of the checkpoints kept in memory; without it, none are.
 * Then the server of the copies to the jobs' other hosts. */
static void prepare_memckpt(struct agent_ctx *ctx)
{
	struct agent_config *cfg = &ctx->cfg;
	struct buf err = BUF_INIT;
	char *root;

	if (cfg->memckpt_mb <= 0)
		return;
	root = agent_memckpt_root(cfg->memckpt_dir, cfg->host);
	if (agent_memckpt_prepare(root, &err)) {
		log_warn("no checkpoints kept in memory: %s", err.data);
		cfg->memckpt_mb = 0;
	} else {
		agent_memckpt_sweep(root, NULL);
		log_info("checkpoints kept in memory under %s, up to %ld MiB "
			 "per job",
			 root, cfg->memckpt_mb);
	}
	if (agent_peerserve_start(ctx, &err))
		log_warn("checkpoint copies not shared: %s", err.data);
	else if (ctx->peer)
		log_info("checkpoint copies served to the jobs' hosts on "
			 "port %ld",
			 cfg->peer_port);
	free(root);
	buf_release(&err);
}

static int lock_work_dir(const char *dir, char **lock_path, struct buf *err)
{
	struct buf path = BUF_INIT;
	int fd;

	(void)buf_addf(&path, "%s/jobs", dir);
	if (fs_mkdir_p(path.data, 0755, NULL)) {
		(void)buf_addf(err, "cannot create %s: %s", path.data,
			       strerror(errno));
		buf_release(&path);
		return -1;
	}
	buf_reset(&path);
	(void)buf_addf(&path, "%s/agent.lock", dir);
	fd = open(path.data, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
		(void)buf_addf(err, "%s: %s", path.data,
			       errno == EWOULDBLOCK ?
				       "another trainagent uses this "
				       "work directory" :
				       strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	if (fd >= 0)
		*lock_path = buf_detach(&path, NULL);
	buf_release(&path);
	return fd;
}

int main(int argc, char **argv)
{
	struct agent_ctx ctx;
	struct buf err = BUF_INIT;
	struct buf why = BUF_INIT;
	int ret = 1;

	sanitise_stdfd();
	/*
	 * What the agent makes is readable unless it says otherwise (tokens,
	 * state, the job's own folders are 0600/0700 explicitly): a job's
	 * user must reach its folder through the agent's, whatever umask the
	 * shell that started the agent had (provisioning's is 077).
	 */
	(void)umask(022);
	/* The MPI launcher and worker (agent/mpi.c) are this binary too, so
	 * that provisioning copies one file. */
	if (argc > 1 && !strcmp(argv[1], "rsh"))
		return agent_rsh_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "mpi-worker"))
		return agent_mpi_worker_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "watchdog"))
		return agent_watchdog_main(argc - 1, argv + 1);
	agent_proc_set_title_area(argv);
	memset(&ctx, 0, sizeof(ctx));
	ctx.argv = argv;
	ctx.sig_pipe[0] = ctx.sig_pipe[1] = -1;
	ctx.lock_fd = -1;
	agent_config_init(&ctx.cfg);
	if (agent_config_parse_args(&ctx.cfg, argc, argv, &err)) {
		fprintf(stderr, "trainagent: error: %s\n", err.data);
		agent_usage();
		return 2;
	}
	log_set_level(LOG_INFO + ctx.cfg.verbose);
	agent_config_fill_defaults(&ctx.cfg);
	if (agent_config_check(&ctx.cfg, &err)) {
		fprintf(stderr, "trainagent: error: %s\n", err.data);
		agent_usage();
		return 2;
	}
	/* The storage layer of the workers reads it from there. */
	if (ctx.cfg.ca_file)
		setenv("TRAINCTL_CA_FILE", ctx.cfg.ca_file, 1);
	ctx.token = get_token(&ctx.cfg, &err);
	if (!ctx.token) {
		log_error("%s", err.data);
		goto out;
	}
	ctx.lock_fd = lock_work_dir(ctx.cfg.work_dir, &ctx.lock_path, &err);
	if (ctx.lock_fd < 0) {
		log_error("%s", err.data);
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		log_error("curl_global_init failed");
		goto out;
	}
	/* Orphaned grandchildren come to us to be reaped, not to init. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	make_boot_id(ctx.boot_id, sizeof(ctx.boot_id));
	ctx.can_bind = agent_proc_can_bind(&why);
	log_info("trainagent %s: host '%s', controller %s, work dir %s, "
		 "%d cpus, %d gpus, boot id %s",
		 AGENT_VERSION, ctx.cfg.host, ctx.cfg.controller,
		 ctx.cfg.work_dir, ctx.cfg.cpus, ctx.cfg.gpus, ctx.boot_id);
	if (ctx.can_bind)
		log_info("jobs get a private /opt/ml");
	else
		log_info("no private /opt/ml (%s): SM_* point into the job "
			 "directories",
			 why.data);
	prepare_memckpt(&ctx);
	agent_logq_init(&ctx.logq, AGENT_LOGQ_MAX);
	agent_session_init(&ctx);
	agent_images_init(&ctx);
	agent_telemetry_init(&ctx);
	/* Without the watchdog the agent still fences itself when it runs. */
	if (agent_lease_open(&ctx, &err)) {
		log_warn("no watchdog: %s", err.data);
		buf_reset(&err);
	}
	if (agent_http_init(&ctx, &err)) {
		log_error("%s", err.data);
		goto out_curl;
	}
	ret = agent_run(&ctx) ? 1 : 0;
	agent_lease_close(&ctx);
	log_info("exiting");
	while (ctx.assigns)
		agent_assign_free(&ctx, ctx.assigns);
	agent_peerserve_stop(&ctx);
	agent_http_release(&ctx);
	agent_session_release(&ctx);
	agent_images_release(&ctx);
	agent_telemetry_release(&ctx);
	agent_logq_release(&ctx.logq);
out_curl:
	curl_global_cleanup();
out:
	if (ctx.token) {
		memset(ctx.token, 0, strlen(ctx.token));
		free(ctx.token);
	}
	if (ctx.lock_fd >= 0)
		close(ctx.lock_fd);
	free(ctx.lock_path);
	if (ctx.sig_pipe[0] >= 0)
		close(ctx.sig_pipe[0]);
	if (ctx.sig_pipe[1] >= 0)
		close(ctx.sig_pipe[1]);
	free(ctx.pfds);
	free(ctx.prefs);
	agent_config_release(&ctx.cfg);
	buf_release(&err);
	buf_release(&why);
	return ret;
}
