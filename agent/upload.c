/*
 * After a run: pack model/ into model.tar.gz and output/data/ into
 * output.tar.gz (storage/'s tar.gz pack, in a forked worker), then PUT each
 * to the controller's artifact endpoint, streamed from the file. Also the
 * checkpoint mirror: while a rank runs, and once more before packing, a
 * worker copies changed files of the checkpoint folder to its S3 URI.
 */
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assignment.h"
#include "agent/http.h"
#include "agent/ident.h"
#include "agent/jobdir.h"
#include "agent/memckpt.h"
#include "agent/peerckpt.h"
#include "agent/stage.h"
#include "agent/task.h"
#include "agent/upload.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define UPLOAD_TRIES 10

static const char *const artifact[] = { "model.tar.gz", "output.tar.gz" };

struct pack_job {
	struct agent_ctx *ctx;
	struct agent_assign *a;
	int pack;  /* 0: checkpoint sync only */
	int final; /* the ranks have ended: every file is complete */
};

/*
 * The copies also to the next host of the job (agent/peerckpt.h), for a
 * retry on a host that replaced this one. Like the copy, a failure costs
 * only the speed of that restore.
 */
static void push_to_peer(struct pack_job *pj, const char *root, int fd)
{
	struct agent_peerckpt_push pp;
	struct buf err = BUF_INIT;

	if (agent_peerckpt_push(&pj->ctx->cfg, &pj->a->spec, root, &pp, &err))
		agent_task_say(fd, "log checkpoint: no copy on %s: %s",
			       pp.to ? pp.to : "the next host", err.data);
	else if (pp.folders)
		agent_task_say(fd,
			       "log checkpoint: %zu folders (%lld bytes) "
			       "copied to %s's memory",
			       pp.folders, (long long)pp.bytes, pp.to);
	buf_release(&err);
}

/*
 * After the mirror: the newest checkpoints also into the host's memory
 * (agent/memckpt.h), for a retry on this host. A failure here costs only
 * the speed of that restore: it is logged, the sync still succeeds.
 */
static void keep_in_memory(struct pack_job *pj, const char *ckpt, int fd)
{
	const struct agent_config *cfg = &pj->ctx->cfg;
	const struct api_assignment *s = &pj->a->spec;
	struct agent_memckpt_stats ms;
	struct buf err = BUF_INIT;
	char *root;

	if (cfg->memckpt_mb <= 0 || !s->job_uid)
		return;
	root = agent_memckpt_root(cfg->memckpt_dir, cfg->host);
	if (agent_memckpt_keep(root, s->job_uid, s->attempt, ckpt,
			       (int64_t)cfg->memckpt_mb << 20, &ms, &err))
		agent_task_say(fd, "log checkpoint: no copy in memory: %s",
			       err.data);
	else if (ms.folders || ms.skipped)
		agent_task_say(fd,
			       "log checkpoint: %zu folders (%lld bytes) "
			       "kept in memory%s",
			       ms.folders, (long long)ms.bytes,
			       ms.skipped ? "; some over the limit "
					    "(--memory-checkpoint-mb)" :
					    "");
	push_to_peer(pj, root, fd);
	free(root);
	buf_release(&err);
}

static int sync_checkpoints(struct pack_job *pj, int fd, struct buf *err)
{
	const struct api_assignment *s = &pj->a->spec;
	struct stor_ckpt_sync opt;
	struct stor_sync_stats stats;
	struct stor_config cfg;
	struct stor *st = NULL;
	char *ckpt;
	int ret;

	if (!pj->a->have_spec || !s->checkpoint_s3_uri ||
	    !*s->checkpoint_s3_uri)
		return 0;
	ckpt = agent_jobdir_checkpoint_path(pj->a->dir,
					    s->checkpoint_local_path);
	agent_stor_config(pj->ctx, s, &cfg);
	/*
	 * Through the blob endpoint, checkpoints name their attempt: the
	 * controller commits an object only while this attempt is the job's
	 * current one (the fence; docs/distributed.md). A host that shares
	 * the store's folder writes it directly, as fast as a local disk.
	 */
	if (cfg.blob_url && !cfg.state_dir && s->job_uid) {
		struct buf f = BUF_INIT;

		(void)buf_addf(&f, "%s/%s/%d", s->job, s->job_uid, s->attempt);
		cfg.fence = buf_detach(&f, NULL);
	}
	memset(&stats, 0, sizeof(stats));
	opt.since_ms = pj->a->started_ms;
	opt.complete = &pj->a->watch.complete;
	opt.final = pj->final;
	ret = stor_open(&cfg, &st, err);
	if (!ret)
		ret = stor_sync_checkpoints(st, ckpt, s->checkpoint_s3_uri,
					    &opt, &stats, err);
	if (!ret && stats.files)
		agent_task_say(fd,
			       "log checkpoint: %zu files (%lld bytes) "
			       "copied to %s",
			       stats.files, (long long)stats.bytes,
			       s->checkpoint_s3_uri);
	if (!ret)
		keep_in_memory(pj, ckpt, fd);
	if (st)
		stor_close(st);
	stor_config_release(&cfg);
	free(ckpt);
	return ret;
}

/*
 * A folder of the job mirrored to S3: its files go to s3_uri at their
 * relative paths, those new or changed since the last copy.
 * TensorBoardOutputConfig's LocalPath, DebugHookConfig's LocalPath (to
 * <S3OutputPath>/<job>/debug-output) and the profiler's folder. Files that
 * grow while the program runs (event files) are copied as they are then;
 * the copy after the ranks ended has them whole.
 */
static int sync_mirror(struct pack_job *pj, int fd, const char *what,
		       const char *s3_uri, const char *local_path,
		       struct buf *err)
{
	const struct api_assignment *s = &pj->a->spec;
	struct stor_sync_stats stats;
	struct stor_config cfg;
	struct stor *st = NULL;
	struct stat sb;
	char *dir;
	int ret;

	if (!pj->a->have_spec || !s3_uri || !*s3_uri || !local_path)
		return 0;
	dir = agent_jobdir_checkpoint_path(pj->a->dir, local_path);
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		free(dir);
		return 0;
	}
	agent_stor_config(pj->ctx, s, &cfg);
	if (cfg.blob_url && !cfg.state_dir && s->job_uid) {
		struct buf f = BUF_INIT;

		(void)buf_addf(&f, "%s/%s/%d", s->job, s->job_uid, s->attempt);
		cfg.fence = buf_detach(&f, NULL);
	}
	memset(&stats, 0, sizeof(stats));
	ret = stor_open(&cfg, &st, err);
	if (!ret)
		ret = stor_put_dir(st, dir, s3_uri, STOR_SYNC_CHANGED, &stats,
				   err);
	if (!ret && stats.files)
		agent_task_say(fd,
			       "log %s: %zu files (%lld bytes) copied to %s",
			       what, stats.files, (long long)stats.bytes,
			       s3_uri);
	if (st)
		stor_close(st);
	stor_config_release(&cfg);
	free(dir);
	return ret;
}

static int sync_mirrors(struct pack_job *pj, int fd, struct buf *err)
{
	const struct api_assignment *s = &pj->a->spec;
	int ret;

	ret = sync_mirror(pj, fd, "tensorboard", s->tensorboard_s3_uri,
			  s->tensorboard_local_path, err);
	if (!ret)
		ret = sync_mirror(pj, fd, "debugger", s->debug_s3_uri,
				  s->debug_local_path, err);
	if (!ret)
		ret = sync_mirror(pj, fd, "profiler", s->profiler_s3_uri,
				  s->profiler_local_path, err);
	return ret;
}

/* Runs in the worker. */
static int pack_main(void *arg, int fd)
{
	struct pack_job *pj = arg;
	const char *dir = pj->a->dir;
	struct buf src = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	const char *dirs[1];
	int ret;

	ret = sync_checkpoints(pj, fd, &err);
	if (!ret)
		ret = sync_mirrors(pj, fd, &err);
	if (ret || !pj->pack)
		goto out;
	(void)buf_addf(&src, "%s/model", dir);
	(void)buf_addf(&out, "%s/.trainagent/scratch/%s", dir, artifact[0]);
	dirs[0] = src.data;
	ret = stor_archive_pack(dirs, 1, out.data, &err);
	if (ret)
		goto out;
	buf_reset(&src);
	buf_reset(&out);
	(void)buf_addf(&src, "%s/output/data", dir);
	(void)buf_addf(&out, "%s/.trainagent/scratch/%s", dir, artifact[1]);
	dirs[0] = src.data;
	ret = stor_archive_pack(dirs, 1, out.data, &err);
out:
	if (ret)
		agent_task_say(fd, "error %s",
			       err.len ? err.data : err_str(ret));
	else
		agent_task_say(fd, "ok");
	buf_release(&src);
	buf_release(&out);
	buf_release(&err);
	return ret ? 1 : 0;
}

static int start_worker(struct agent_ctx *ctx, struct agent_assign *a, int pack,
			int final, struct buf *err)
{
	struct pack_job pj = { ctx, a, pack, final };
	int ret;

	a->task_ok = 0;
	FREE_AND_NULL(a->task_error);
	ret = agent_ident_resolve(&a->ident, a->spec.run_as, err);
	if (!ret)
		ret = agent_task_start(&a->task, pack_main, &pj, &a->ident,
				       err);
	if (!ret)
		a->task_kind = pack ? AGENT_TASK_PACK : AGENT_TASK_SYNC;
	return ret;
}

static int pack_start(struct agent_ctx *ctx, struct agent_assign *a,
		      struct buf *err)
{
	return start_worker(ctx, a, 1, 1, err);
}

int agent_ckpt_sync_start(struct agent_ctx *ctx, struct agent_assign *a,
			  int final, struct buf *err)
{
	return start_worker(ctx, a, 0, final, err);
}

/* A worker that has finished: its outcome, and the task slot freed. */
static int worker_result(struct agent_assign *a, struct buf *why)
{
	int ok = a->task_ok;

	if (!ok) {
		if (a->task_error)
			(void)buf_adds(why, a->task_error);
		else
			(void)buf_addf(why, "worker ended with status %d",
				       a->task.status);
	}
	agent_task_release(&a->task);
	a->task_kind = AGENT_TASK_NONE;
	return ok;
}

void agent_ckpt_sync_done(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct buf why = BUF_INIT;

	if (!worker_result(a, &why))
		log_warn("%s/%d/%s: checkpoint sync failed: %s", a->job,
			 a->attempt, a->algo, why.data);
	if (ctx->cfg.memckpt_mb > 0) {
		char *root =
			agent_memckpt_root(ctx->cfg.memckpt_dir, ctx->cfg.host);

		agent_memckpt_sweep(root, a->job_uid);
		free(root);
	}
	buf_release(&why);
}

enum agent_put_result agent_upload_put_done(struct agent_assign *a,
					    const struct agent_req *req,
					    int *lost, struct buf *msg)
{
	int64_t delay;
	size_t n;

	a->up_req = NULL;
	*lost = 0;
	if (req->status >= 200 && req->status < 300) {
		log_info("%s/%d/%s: %s uploaded", a->job, a->attempt, a->algo,
			 artifact[a->up_step == AGENT_UP_MODEL ? 0 : 1]);
		a->up_step = a->up_step == AGENT_UP_MODEL ? AGENT_UP_OUTPUT :
							    AGENT_UP_FINISHED;
		a->up_tries = 0;
		a->up_retry_at = 0;
		return AGENT_PUT_UPLOADED;
	}
	if (req->status == 409) {
		n = req->resp.len < 300 ? req->resp.len : 300;
		(void)buf_addf(msg, "the controller refused %s: %.*s",
			       artifact[a->up_step == AGENT_UP_MODEL ? 0 : 1],
			       (int)n, req->resp.data);
		return AGENT_PUT_FAILED;
	}
	if (req->status == 401 || req->status == 404)
		*lost = 1;
	a->up_tries++;
	if (a->up_tries >= UPLOAD_TRIES) {
		(void)buf_addf(msg, "upload of %s failed %d times: %s",
			       artifact[a->up_step == AGENT_UP_MODEL ? 0 : 1],
			       a->up_tries,
			       req->status ? "HTTP error" : req->errbuf);
		if (req->status)
			(void)buf_addf(msg, " %ld", req->status);
		return AGENT_PUT_FAILED;
	}
	delay = 200LL << (a->up_tries < 5 ? a->up_tries : 5);
	a->up_retry_at = time_mono_ms() + delay;
	(void)buf_addf(msg, "upload failed (%s%ld), retrying in %lld ms",
		       req->status ? "HTTP " : "",
		       req->status ? req->status : (long)req->curl_code,
		       (long long)delay);
	return AGENT_PUT_RETRY;
}

static int put_one(struct agent_ctx *ctx, struct agent_assign *a,
		   const char *file, agent_req_fn *put_done, struct buf *err)
{
	struct buf path = BUF_INIT, url = BUF_INIT;
	struct stat st;
	int fd;

	(void)buf_addf(&path, "%s/.trainagent/scratch/%s", a->dir, file);
	/*
	 * The scratch folder is the job user's: only a plain file of that
	 * user is sent, never what a link put in its place points at.
	 */
	fd = open(path.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && !fstat(fd, &st) &&
	    (!S_ISREG(st.st_mode) ||
	     (a->ident.set && st.st_uid != a->ident.uid))) {
		close(fd);
		fd = -1;
		errno = EPERM;
	}
	if (fd < 0 || fstat(fd, &st)) {
		(void)buf_addf(err, "%s: %s", path.data, strerror(errno));
		if (fd >= 0)
			close(fd);
		buf_release(&path);
		return ERR_IO;
	}
	(void)buf_addf(&url, "/v1/agents/%s/artifacts/%s/%d/%s/%s",
		       ctx->cfg.host, a->job, a->attempt, a->algo, file);
	if (a->job_uid)
		(void)buf_addf(&url, "?job_uid=%s", a->job_uid);
	a->up_req = agent_http_put_file(ctx, url.data, fd, (int64_t)st.st_size,
					put_done, a);
	buf_release(&path);
	buf_release(&url);
	if (!a->up_req) {
		(void)buf_adds(err, "cannot start an upload");
		return ERR_IO;
	}
	return 0;
}

static void remove_archives(const struct agent_assign *a)
{
	struct buf path = BUF_INIT;
	size_t i;

	for (i = 0; i < 2; i++) {
		buf_reset(&path);
		(void)buf_addf(&path, "%s/.trainagent/scratch/%s", a->dir,
			       artifact[i]);
		(void)unlink(path.data);
	}
	buf_release(&path);
}

enum agent_upload_result agent_upload_step(struct agent_ctx *ctx,
					   struct agent_assign *a, int64_t now,
					   agent_req_fn *put_done,
					   struct buf *err)
{
	struct buf why = BUF_INIT;
	enum agent_upload_result ret = AGENT_UPLOAD_WAIT;

	switch (a->up_step) {
	case AGENT_UP_NONE:
		/* A checkpoint sync may still be running: let it finish. */
		if (agent_task_busy(&a->task))
			break;
		if (a->task_kind == AGENT_TASK_SYNC)
			agent_ckpt_sync_done(ctx, a);
		else if (a->task_kind != AGENT_TASK_NONE)
			(void)worker_result(a, &why);
		if (pack_start(ctx, a, err)) {
			ret = AGENT_UPLOAD_FAILED;
			break;
		}
		a->up_step = AGENT_UP_PACKING;
		break;
	case AGENT_UP_PACKING:
		if (agent_task_busy(&a->task))
			break;
		if (!worker_result(a, &why)) {
			(void)buf_addf(err, "packing artifacts: %s", why.data);
			ret = AGENT_UPLOAD_FAILED;
			break;
		}
		a->up_step = AGENT_UP_MODEL;
		/* fall through */
	case AGENT_UP_MODEL:
	case AGENT_UP_OUTPUT:
		if (a->up_req || now < a->up_retry_at || !ctx->sess.registered)
			break;
		if (put_one(ctx, a,
			    artifact[a->up_step == AGENT_UP_MODEL ? 0 : 1],
			    put_done, err))
			ret = AGENT_UPLOAD_FAILED;
		break;
	case AGENT_UP_FINISHED:
		remove_archives(a);
		ret = AGENT_UPLOAD_DONE;
		break;
	}
	buf_release(&why);
	return ret;
}

void agent_upload_cancel(struct agent_ctx *ctx, struct agent_assign *a)
{
	if (a->up_req) {
		agent_http_cancel(ctx, a->up_req);
		a->up_req = NULL;
	}
}
