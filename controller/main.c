#define LOG_TAG "ctrl"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh2.h>
#include <openssl/crypto.h>

#include "controller/ctrl.h"
#include "controller/front.h"
#include "controller/registry.h"
#include "controller/files.h"
#include "controller/rendezvous.h"
#include "controller/hosts.h"
#include "controller/jobrt.h"
#include "controller/local_cluster.h"
#include "controller/member.h"
#include "controller/provision.h"
#include "controller/replicate.h"
#include "controller/obs/telemetry.h"
#include "db/db.h"
#include "storage/fs.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define CREDENTIALS_MAX (1 << 20)

/*
 * mkdir -p, the state folder itself searchable, not readable: a local
 * host's work folder (and its jobs' folders, which their users must
 * reach) lies below.
 */
static int make_dirs(const char *path, struct buf *err)
{
	int ret = fs_mkdir_p(path, 0755, err);

	if (!ret && chmod(path, 0711)) {
		(void)buf_addf(err, "cannot create '%s': %s", path,
			       strerror(errno));
		ret = ERR_IO;
	}
	return ret;
}

static int load_credentials(struct ctrl_ctx *ctx, struct buf *err)
{
	struct buf text = BUF_INIT;
	int ret;

	if (!ctx->cfg.credentials_file)
		return 0;
	ret = ctrl_read_file(ctx->cfg.credentials_file, CREDENTIALS_MAX, &text,
			     err);
	if (!ret)
		ret = api_credentials_parse(text.data, &ctx->creds, err);
	buf_release(&text);
	if (ret)
		return ret;
	if (ctx->creds.n == 0) {
		(void)buf_addf(err, "'%s' holds no credentials",
			       ctx->cfg.credentials_file);
		return ERR_INVALID;
	}
	ctx->auth_enabled = 1;
	return 0;
}

#define TLS_PEM_MAX (1 << 20)

/*
 * The certificate and key in memory (libmicrohttpd takes PEM texts), and
 * the CA agents verify with written where local agents and provisioning
 * read it.
 */
static int load_tls(struct ctrl_ctx *ctx, struct buf *err)
{
	struct buf cert = BUF_INIT, key = BUF_INIT, ca = BUF_INIT;
	struct buf path = BUF_INIT;
	int ret;

	if (!ctx->cfg.tls_cert) {
		if (ctx->cfg.credentials_file &&
		    !ctrl_listen_is_loopback(ctx->cfg.listen))
			log_warn(
				"WARNING: credentials without TLS on %s: access "
				"keys are signed, but every request, answer "
				"and agent token crosses the network in clear "
				"text; give --tls-cert and --tls-key",
				ctx->cfg.listen);
		return 0;
	}
	ret = ctrl_read_file(ctx->cfg.tls_cert, TLS_PEM_MAX, &cert, err);
	if (!ret)
		ret = ctrl_read_file(ctx->cfg.tls_key, TLS_PEM_MAX, &key, err);
	if (!ret)
		ret = ctrl_read_file(ctx->cfg.tls_ca ? ctx->cfg.tls_ca :
						       ctx->cfg.tls_cert,
				     TLS_PEM_MAX, &ca, err);
	if (!ret && (!strstr(cert.data, "-----BEGIN CERTIFICATE-----") ||
		     !strstr(ca.data, "-----BEGIN CERTIFICATE-----") ||
		     !strstr(key.data, "PRIVATE KEY-----"))) {
		(void)buf_adds(err,
			       "--tls-cert and --tls-ca must hold PEM "
			       "certificates, --tls-key a PEM private key");
		ret = ERR_INVALID;
	}
	(void)buf_addf(&path, "%s/tls-ca.pem", ctx->cfg.state_dir);
	if (!ret && ctrl_write_small(path.data, ca.data)) {
		(void)buf_addf(err, "cannot write %s", path.data);
		ret = ERR_IO;
	}
	if (!ret)
		(void)chmod(path.data, 0644);
	if (ret) {
		OPENSSL_cleanse(key.data, key.len);
		buf_release(&cert);
		buf_release(&key);
		buf_release(&ca);
		buf_release(&path);
		return ret;
	}
	ctx->tls_cert_pem = buf_detach(&cert, NULL);
	ctx->tls_key_pem = buf_detach(&key, NULL);
	ctx->tls_ca_pem = buf_detach(&ca, NULL);
	ctx->tls_ca_path = buf_detach(&path, NULL);
	return 0;
}

/*
 * The state folder, TLS, the embedded store's folder and the store:
 * what must exist before any thread starts. Returns 0 or an error with
 * err set.
 */
static int open_state(struct ctrl_ctx *ctx, struct buf *err)
{
	struct buf path = BUF_INIT;
	int ret;

	ret = make_dirs(ctx->cfg.state_dir, err);
	if (!ret)
		ret = load_tls(ctx, err);
	if (ret)
		return ret;
	(void)buf_addf(&path, "%s/s3", ctx->cfg.state_dir);
	ctx->blob_root = buf_detach(&path, NULL);
	/* The embedded store is reached through the controller only (its
	 * folders inside are 0755, storage/fs.c). */
	if ((mkdir(ctx->blob_root, 0700) && errno != EEXIST) ||
	    chmod(ctx->blob_root, 0700)) {
		(void)buf_addf(err, "cannot create %s: %s", ctx->blob_root,
			       strerror(errno));
		return ERR_IO;
	}
	(void)buf_addf(&path, "%s/s3-uploads", ctx->cfg.state_dir);
	ctx->s3_uploads = buf_detach(&path, NULL);
	if (mkdir(ctx->s3_uploads, 0700) && errno != EEXIST) {
		(void)buf_addf(err, "cannot create %s: %s", ctx->s3_uploads,
			       strerror(errno));
		return ERR_IO;
	}
	ctx->s3.root = ctx->blob_root;
	ctx->s3.uploads = ctx->s3_uploads;
	ctx->s3.region = ctx->cfg.region;
	ctx->s3.domain = ctx->cfg.s3_domain;
	ctx->s3.creds = ctx->auth_enabled ? &ctx->creds : NULL;
	ctx->s3.max_object = 5LL * 1024 * 1024 * 1024; /* S3's single PUT */
	ctx->s3.max_uploads = ctx->cfg.s3_max_uploads;
	ctx->s3.upload_max_age_ms = ctx->cfg.s3_upload_max_age_ms;
	(void)buf_addf(&path, "%s/trainctl.db", ctx->cfg.state_dir);
	ret = db_open(path.data, ctx->cfg.threads + 1, &ctx->db, err);
	buf_release(&path);
	return ret ? ret : ctrl_tm_open(ctx, err);
}

/*
 * An upload cut short by a crash (of this controller, mid-PUT) left its
 * temp file, and maybe folders holding only that: nothing writes into the
 * store before the API is up, so they go now.
 */
static void sweep_uploads(struct ctrl_ctx *ctx)
{
	size_t swept = stor_fs_sweep_tmp(ctx->blob_root, 0) +
		       stor_fs_sweep_tmp(ctx->s3_uploads, 0);

	if (swept)
		log_info("store: removed %zu temp files of unfinished uploads",
			 swept);
}

/* Serves until SIGTERM or SIGINT; SIGHUP reloads the inventory. */
static int serve(struct ctrl_ctx *ctx, const sigset_t *set)
{
	struct buf err = BUF_INIT;
	int sig = 0;

	for (;;) {
		if (sigwait(set, &sig))
			break;
		if (sig != SIGHUP)
			break;
		buf_reset(&err);
		if (!ctx->cfg.inventory)
			log_info("SIGHUP: no inventory to reload");
		else if (ctrl_inventory_load(ctx, &err))
			log_error("SIGHUP: inventory not reloaded: %s",
				  err.data);
		else
			log_info("SIGHUP: inventory reloaded");
		ctrl_hosts_load_drains(ctx);
		ctrl_reconciler_wake(ctx);
	}
	buf_release(&err);
	return sig;
}

/* Answers what is parked and stops the local agents, provisioning and
 * the HTTP server, in that order. */
static void shut_down(struct ctrl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = 1;
	pthread_mutex_unlock(&ctx->lock);
	/* Parked long-polls must be answered before the server stops. */
	ctrl_hosts_resume_all(ctx);
	ctrl_local_stop(ctx);
	ctrl_provision_stop(ctx);
	ctrl_hosts_resume_all(ctx);
	ctrl_http_stop(ctx);
}

/*
 * A member of a replicated controller follows until it leads: returns 0
 * then (the controller starts), else 1 with *ret the exit status: 0 when
 * a signal asked to stop, 1 on an error (printed).
 */
static int follow(struct ctrl_ctx *ctx, char **argv, const sigset_t *set,
		  int *ret)
{
	struct buf err = BUF_INIT;
	int r = ctrl_repl_start(ctx, &err);

	if (!r)
		r = ctrl_member_follow(ctx, argv, set, &err);
	if (!r)
		ctrl_repl_lead();
	if (r < 0)
		fprintf(stderr, "trainctld: error: %s\n", err.data);
	buf_release(&err);
	*ret = r > 0 ? 0 : 1;
	return r != 0;
}

/* Stops the member's threads and closes the stores. */
static void close_state(struct ctrl_ctx *ctx)
{
	ctrl_repl_stop();
	ctrl_member_stop();
	ctrl_tm_close(ctx);
	db_close(ctx->db);
	ctx->db = NULL;
}

int main(int argc, char **argv)
{
	struct ctrl_ctx ctx;
	struct buf err = BUF_INIT;
	sigset_t set;
	int sig = 0;
	int ret = 1;

	/* The database, the store and the logs are the controller's alone;
	 * what others may reach is opened up explicitly. */
	(void)umask(077);
	/*
	 * Signals go to this thread only, blocked before any thread starts
	 * (the store starts its checkpoint thread as it opens): every thread
	 * inherits the mask, so a SIGHUP or SIGTERM can never land on one
	 * that would die of it.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	ctrl_ctx_init(&ctx);
	if (ctrl_config_parse_args(&ctx.cfg, argc, argv, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		ctrl_usage();
		ctrl_ctx_release(&ctx);
		buf_release(&err);
		return 2;
	}
	if (ctx.cfg.print_routes) {
		ctrl_front_print(stdout);
		ctrl_ctx_release(&ctx);
		buf_release(&err);
		return 0;
	}
	ctrl_config_fill_defaults(&ctx.cfg);
	log_set_level(LOG_INFO + ctx.cfg.verbose);
	if (ctrl_config_check(&ctx.cfg, &err) || load_credentials(&ctx, &err) ||
	    ctrl_registry_load(&ctx.registry, &ctx.cfg, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		goto out;
	}
	if (ctx.cfg.check_only) {
		ctrl_config_print(&ctx.cfg);
		ret = 0;
		goto out;
	}
	if (open_state(&ctx, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		goto out;
	}

	libssh2_init(0);
	if (ctx.cfg.peers && follow(&ctx, argv, &set, &ret))
		goto out_db;

	if (ctrl_inventory_load(&ctx, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		goto out_db;
	}
	if (ctrl_rdzv_init(&ctx, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		goto out_db;
	}
	/*
	 * The local hosts exist before the reconciler's first look: after a
	 * restart it must find the hosts that running jobs are on, or it
	 * would take them for lost. Their agents (adopted, or started now)
	 * register once the HTTP server below is up.
	 */
	if (ctx.cfg.local_hosts > 0 && ctrl_local_start(&ctx, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		ctx.stopping = 1;
		ctrl_local_stop(&ctx);
		goto out_db;
	}
	ctrl_hosts_load_drains(&ctx);
	if (ctrl_reconciler_start(&ctx)) {
		fprintf(stderr, "trainctld: error: cannot start reconciler\n");
		ctx.stopping = 1;
		ctrl_local_stop(&ctx);
		goto out_db;
	}
	sweep_uploads(&ctx);
	if (ctrl_http_start(&ctx, &err)) {
		fprintf(stderr, "trainctld: error: %s\n", err.data);
		ctx.stopping = 1;
		ctrl_local_stop(&ctx);
		goto out_reconciler;
	}
	if (!ctx.auth_enabled)
		log_warn("no --credentials given: requests are not "
			 "authenticated (listening on loopback only)");
	log_info("listening on %s, state in %s", ctx.cfg.listen,
		 ctx.cfg.state_dir);
	if (ctx.cfg.agent_listen)
		log_info("agents and ranks on %s", ctx.cfg.agent_listen);
	sig = serve(&ctx, &set);
	log_info("signal %d: shutting down", sig);
	shut_down(&ctx);
	ret = 0;
out_reconciler:
	ctrl_reconciler_stop(&ctx);
out_db:
	close_state(&ctx);
	libssh2_exit();
out:
	ctrl_ctx_release(&ctx);
	buf_release(&err);
	return ret;
}
