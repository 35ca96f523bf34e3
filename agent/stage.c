/*
 * Staging an assignment, in a forked worker (task.c): restore the
 * checkpoint prefix into the checkpoint folder, download every channel
 * into input/data/<channel>/ (phase downloading), unpack the submit
 * directory into code/ and install its requirements.txt (pyenv.c). The
 * worker reports "phase downloading", "log ...", "note ...", "stdout ...",
 * "stderr ..." and "runtime ..." (the versions a script runs, fwcheck.c)
 * lines, and "ok" or "error <why>".
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
#include "agent/ident.h"
#include "agent/jobdir.h"
#include "agent/locations.h"
#include "agent/memckpt.h"
#include "agent/peerckpt.h"
#include "agent/pipe.h"
#include "agent/podman.h"
#include "agent/fwcheck.h"
#include "agent/pyenv.h"
#include "agent/stage.h"
#include "agent/task.h"
#include "api/manifest.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int is_dir(const char *path)
{
	struct stat st;

	return path && !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* s without a trailing suffix (and slashes), as a new string. */
static char *strip_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	while (n > 1 && s[n - 1] == '/')
		n--;
	if (n >= m && !strncmp(s + n - m, suffix, m))
		n -= m;
	return xstrndup(s, n);
}

void agent_stor_config(struct agent_ctx *ctx, const struct api_assignment *s,
		       struct stor_config *cfg)
{
	struct buf err = BUF_INIT;
	char *v;

	stor_config_init(cfg);
	/*
	 * The assignment names the embedded store's folder (local_root =
	 * <state_dir>/s3) and the controller's blob endpoint (<url>/v1/blobs);
	 * storage/ wants the state folder and the controller's base URL.
	 */
	/* The job's own user has no business in the controller's files:
	 * its workers go through the blob endpoint. */
	if (s->local_root && !s->run_as && is_dir(s->local_root)) {
		v = strip_suffix(s->local_root, "/s3");
		stor_config_set(&cfg->state_dir, v);
		free(v);
	}
	if (s->blob_url && *s->blob_url) {
		v = strip_suffix(s->blob_url, "/v1/blobs");
		stor_config_set(&cfg->blob_url, v);
		free(v);
		stor_config_set(&cfg->blob_token, ctx->token);
		/* The controller allows what the job's owner may reach. */
		stor_config_set(&cfg->job, s->job);
	}
	if (stor_config_from_env(cfg, &err))
		log_warn("storage settings from the environment: %s", err.data);
	stor_config_fill_defaults(cfg);
	buf_release(&err);
}

/* The URI of key in the bucket (or file tree) of u. */
static void object_uri(const struct stor_uri *u, const char *key,
		       struct buf *out)
{
	if (u->scheme == STOR_SCHEME_FILE)
		(void)buf_addf(out, "file:///%s", key);
	else
		(void)buf_addf(out, "s3://%s/%s", u->bucket, key);
}

static int mkdir_parent(const char *path)
{
	char *p = xstrdup(path);
	char *slash = strrchr(p, '/');
	int ret = 0;

	if (slash && slash != p) {
		*slash = '\0';
		ret = fs_mkdir_p(p, 0755, NULL);
	}
	free(p);
	return ret;
}

/*
 * Between how many hosts a ShardedByS3Key channel is split, and this host's
 * share: the channel's own (InstanceGroupNames: the hosts of those groups),
 * else every host of the job.
 */
static size_t shard_count(const struct api_assignment *s,
			  const struct api_channel *c)
{
	if (c->shard_count > 0)
		return (size_t)c->shard_count;
	return s->n_hosts ? s->n_hosts : 1;
}

static size_t shard_index(const struct api_assignment *s,
			  const struct api_channel *c)
{
	return c->shard_count > 0 ? (size_t)c->shard_index :
				    (size_t)s->host_index;
}

/*
 * Which of n listed objects this host takes: all, or with ShardedByS3Key
 * those at positions shard_index modulo shard_count of the listing
 * (shuffled first when the channel has a ShuffleConfig). A new array of n
 * flags.
 */
static char *my_share(const struct api_assignment *s,
		      const struct api_channel *c, size_t n)
{
	size_t hosts = shard_count(s, c), me = shard_index(s, c), k;
	size_t *order = xcalloc(n ? n : 1, sizeof(*order));
	char *mine = xcalloc(n ? n : 1, 1);
	int sharded = c->distribution &&
		      !strcmp(c->distribution, "ShardedByS3Key");

	agent_channel_order(c, n, 0, order);
	for (k = 0; k < n; k++)
		mine[order[k]] = !sharded || k % hosts == me;
	free(order);
	return mine;
}

/*
 * Downloads the objects of one S3Prefix channel; with ShardedByS3Key only
 * this host's share (my_share()).
 */
static int stage_prefix(struct stor *st, const struct api_assignment *s,
			const struct api_channel *c, const char *dest, int fd,
			struct buf *err)
{
	struct stor_list l = STOR_LIST_INIT;
	struct stor_uri u;
	struct buf uri = BUF_INIT, local = BUF_INIT, why = BUF_INIT;
	size_t i, plen, n = 0;
	int sharded = c->distribution &&
		      !strcmp(c->distribution, "ShardedByS3Key");
	int64_t bytes = 0;
	const char *rel;
	char *mine = NULL;
	int ret;

	ret = stor_uri_parse(c->s3_uri, &u, err);
	if (ret)
		return ret;
	ret = stor_list(st, c->s3_uri, &l, err);
	if (ret)
		goto out;
	if (l.n == 0) {
		(void)buf_addf(err, "channel '%s': no objects under %s",
			       c->name, c->s3_uri);
		ret = ERR_NOTFOUND;
		goto out;
	}
	plen = strlen(u.key);
	mine = my_share(s, c, l.n);
	for (i = 0; i < l.n; i++) {
		if (!mine[i])
			continue;
		rel = l.v[i].key;
		if (!strncmp(rel, u.key, plen))
			rel += plen;
		while (*rel == '/')
			rel++;
		if (!*rel) {
			/* The URI names one object: keep its base name. */
			rel = strrchr(l.v[i].key, '/');
			rel = rel ? rel + 1 : l.v[i].key;
		}
		buf_reset(&why);
		if (stor_key_check(rel, 0, &why)) {
			(void)buf_addf(err, "channel '%s': refusing '%s': %s",
				       c->name, l.v[i].key, why.data);
			ret = ERR_INVALID;
			goto out;
		}
		buf_reset(&uri);
		buf_reset(&local);
		object_uri(&u, l.v[i].key, &uri);
		(void)buf_addf(&local, "%s/%s", dest, rel);
		if (mkdir_parent(local.data)) {
			(void)buf_addf(err,
				       "cannot create the folder of %s: %s",
				       local.data, strerror(errno));
			ret = ERR_IO;
			goto out;
		}
		ret = stor_get(st, uri.data, local.data, NULL, err);
		if (ret)
			goto out;
		n++;
		bytes += l.v[i].size;
	}
	agent_task_say(fd,
		       "log channel '%s': %zu of %zu objects (%lld bytes)%s",
		       c->name, n, l.n, (long long)bytes,
		       sharded ? ", sharded by key" : "");
out:
	free(mine);
	stor_list_release(&l);
	stor_uri_release(&u);
	buf_release(&uri);
	buf_release(&local);
	buf_release(&why);
	return ret;
}

#define MANIFEST_MAX (64 << 20)

/*
 * ManifestFile: the channel's URI names a manifest listing a prefix and
 * keys under it; each key lands at its relative path, sharded like
 * S3Prefix objects (by position in the manifest).
 */
static int stage_manifest(struct stor *st, const struct api_assignment *s,
			  const struct api_channel *c, const char *dest, int fd,
			  struct buf *err)
{
	struct buf tmp = BUF_INIT, text = BUF_INIT_MAX(MANIFEST_MAX);
	struct buf uri = BUF_INIT, local = BUF_INIT, why = BUF_INIT;
	int sharded = c->distribution &&
		      !strcmp(c->distribution, "ShardedByS3Key");
	char *prefix = NULL;
	char **keys = NULL;
	char chunk[65536];
	char *mine = NULL;
	size_t n = 0, i, got = 0;
	ssize_t r;
	int mfd;
	int ret;

	(void)buf_addf(&tmp, "%s/.manifest-%s", dest, c->name);
	ret = stor_get(st, c->s3_uri, tmp.data, NULL, err);
	if (ret)
		goto out;
	mfd = open(tmp.data, O_RDONLY | O_CLOEXEC);
	while (mfd >= 0 && (r = read(mfd, chunk, sizeof(chunk))) > 0) {
		if (buf_add(&text, chunk, (size_t)r)) {
			(void)buf_addf(err,
				       "channel '%s': manifest is larger "
				       "than %d bytes",
				       c->name, MANIFEST_MAX);
			ret = ERR_TOOBIG;
			break;
		}
	}
	if (mfd >= 0)
		close(mfd);
	(void)unlink(tmp.data);
	if (ret)
		goto out;
	ret = api_manifest_parse(text.data, text.len, &prefix, &keys, &n, &why);
	if (ret) {
		(void)buf_addf(err, "channel '%s': %s: %s", c->name, c->s3_uri,
			       why.data);
		goto out;
	}
	mine = my_share(s, c, n);
	for (i = 0; i < n; i++) {
		size_t plen = strlen(prefix);

		if (!mine[i])
			continue;
		buf_reset(&why);
		if (stor_key_check(keys[i], 0, &why)) {
			(void)buf_addf(err,
				       "channel '%s': refusing manifest "
				       "key '%s': %s",
				       c->name, keys[i], why.data);
			ret = ERR_INVALID;
			goto out;
		}
		buf_reset(&uri);
		buf_reset(&local);
		(void)buf_addf(&uri, "%s%s%s", prefix,
			       plen && prefix[plen - 1] == '/' ? "" : "/",
			       keys[i]);
		ret = agent_manifest_uri_check(s, c, uri.data, err);
		if (ret)
			goto out;
		(void)buf_addf(&local, "%s/%s", dest, keys[i]);
		if (mkdir_parent(local.data)) {
			(void)buf_addf(err,
				       "cannot create the folder of %s: %s",
				       local.data, strerror(errno));
			ret = ERR_IO;
			goto out;
		}
		ret = stor_get(st, uri.data, local.data, NULL, err);
		if (ret)
			goto out;
		got++;
	}
	agent_task_say(fd, "log channel '%s': %zu of %zu manifest objects%s",
		       c->name, got, n, sharded ? ", sharded by key" : "");
out:
	free(mine);
	api_manifest_release(prefix, keys, n);
	buf_release(&tmp);
	buf_release(&text);
	buf_release(&uri);
	buf_release(&local);
	buf_release(&why);
	return ret;
}

static int stage_channel(struct stor *st, const struct api_assignment *s,
			 const struct api_channel *c, const char *dir, int fd,
			 struct buf *err)
{
	struct buf dest = BUF_INIT;
	int ret;

	if (!c->s3_uri || !*c->s3_uri) {
		(void)buf_addf(err, "channel '%s' has no URI", c->name);
		return ERR_INVALID;
	}
	ret = agent_channel_uri_check(s, c, c->s3_uri, err);
	if (ret)
		return ret;
	/* FastFile arrives as File: downloaded like it. */
	if (agent_channel_is_pipe(c))
		return agent_pipe_stage(st, s, c, dir, fd, err);
	(void)buf_addf(&dest, "%s/input/data/%s", dir, c->name);
	ret = fs_mkdir_p(dest.data, 0755, NULL);
	if (ret)
		(void)buf_addf(err, "cannot create %s: %s", dest.data,
			       strerror(errno));
	else if (c->s3_data_type && !strcmp(c->s3_data_type, "ManifestFile"))
		ret = stage_manifest(st, s, c, dest.data, fd, err);
	else
		ret = stage_prefix(st, s, c, dest.data, fd, err);
	buf_release(&dest);
	return ret;
}

/* A URI of the assignment that is not a channel's, before it is fetched. */
static int check_uri(const struct api_assignment *s, const char *what,
		     const char *uri, struct buf *err)
{
	struct buf why = BUF_INIT;
	int ret = agent_uri_allowed(s, uri, &why);

	if (ret)
		(void)buf_addf(err, "%s: refusing %.300s: %s", what, uri,
			       why.data);
	buf_release(&why);
	return ret ? ERR_INVALID : 0;
}

static int stage_code(struct stor *st, const struct api_assignment *s,
		      const char *dir, int fd, struct buf *err)
{
	struct buf tmp = BUF_INIT, code = BUF_INIT;
	int ret;

	(void)buf_addf(&tmp, "%s/.trainagent/scratch/sourcedir.tar.gz", dir);
	(void)buf_addf(&code, "%s/code", dir);
	ret = check_uri(s, "code", s->submit_directory, err);
	if (!ret)
		ret = stor_get(st, s->submit_directory, tmp.data, NULL, err);
	if (!ret)
		ret = stor_archive_unpack(tmp.data, code.data, NULL, err);
	if (!ret)
		agent_task_say(fd, "log code: %s unpacked into code/",
			       s->submit_directory);
	(void)unlink(tmp.data);
	buf_release(&tmp);
	buf_release(&code);
	return ret;
}

struct stage_job {
	struct agent_ctx *ctx;
	struct agent_assign *a;
};

/*
 * A container's image, pulled as root; then the worker becomes the job's
 * user for the rest, as other jobs' workers are from the start.
 */
static int stage_image(struct stage_job *sj, int fd, struct buf *err)
{
	const struct api_assignment *s = &sj->a->spec;
	int64_t t0 = time_mono_ms();
	int pulled = 0, ret;

	agent_task_say(fd, "phase downloading");
	ret = agent_podman_pull(sj->ctx->cfg.work_dir, sj->a->dir, s, &pulled,
				err);
	/* In the job's log too: what the start of a job cost. */
	if (!ret && pulled)
		agent_task_say(fd, "note image %s: pulled in %.1f s", s->image,
			       (double)(time_mono_ms() - t0) / 1000.0);
	if (!ret && pulled)
		agent_task_say(fd, "pulled");
	else if (!ret)
		agent_task_say(fd, "note image %s: already on this host",
			       s->image);
	if (!ret && agent_ident_become(&sj->a->ident)) {
		(void)buf_addf(err, "cannot run as the job's user: %s",
			       strerror(errno));
		ret = ERR_IO;
	}
	return ret;
}

/* Runs in the worker. */
/* Whether staging fetches anything: channels, code, a checkpoint. */
static int has_downloads(const struct api_assignment *s)
{
	return s->n_channels ||
	       (s->checkpoint_s3_uri && *s->checkpoint_s3_uri) ||
	       (s->launch_mode == API_LAUNCH_SCRIPT && s->submit_directory &&
		*s->submit_directory);
}

/*
 * Once per host and attempt, before any rank starts: the job's
 * requirements.txt, then which Python and framework it runs.
 */
static int prepare_python(const struct api_assignment *s, const char *dir,
			  int fd, struct buf *err)
{
	int ret = 0;

	if (agent_pyenv_wanted(s, dir))
		ret = agent_pyenv_install(s, dir, fd, err);
	if (!ret && agent_fwcheck_wanted(s))
		ret = agent_fwcheck_run(s, dir, fd, err);
	return ret;
}

/*
 * A retry restores from this host's copy in memory (agent/memckpt.h), or
 * from a copy another host of the job holds (agent/peerckpt.h), when it
 * is the published checkpoint: 1 when done, 0 when the store restores as
 * before. The log line names the source of each folder.
 */
static int restore_from_memory(struct stage_job *sj, struct stor *st,
			       const char *ckpt, int fd)
{
	const struct agent_config *cfg = &sj->ctx->cfg;
	const struct api_assignment *s = &sj->a->spec;
	struct agent_memckpt_restore r;
	struct agent_memckpt_peers pe;
	struct buf err = BUF_INIT;
	int64_t t0 = time_mono_ms();
	char *root;
	int ret;

	if (cfg->memckpt_mb <= 0 || !s->job_uid)
		return 0;
	root = agent_memckpt_root(cfg->memckpt_dir, cfg->host);
	agent_peerckpt_holders(cfg, s, &pe);
	ret = agent_memckpt_restore(st, s->checkpoint_s3_uri, root, s->job_uid,
				    ckpt, &pe, &r, &err);
	if (!ret)
		agent_task_say(fd,
			       "note checkpoint: step %lld restored in %lld ms "
			       "(source: %s): %zu folders (%lld bytes) from "
			       "memory, %zu (%lld bytes) from other hosts, "
			       "%zu (%lld bytes) from %s; %s",
			       r.step, (long long)(time_mono_ms() - t0),
			       r.from_peer ? "peer" : "memory", r.from_mem,
			       (long long)r.mem_bytes, r.from_peer,
			       (long long)r.peer_bytes, r.from_stor,
			       (long long)r.stor_bytes, s->checkpoint_s3_uri,
			       r.record.data);
	else if (ret != ERR_NOTFOUND)
		agent_task_say(fd,
			       "log checkpoint: no restore from a copy (%s); "
			       "from the store instead",
			       err.data);
	agent_peerckpt_holders_release(&pe);
	buf_release(&r.record);
	free(root);
	buf_release(&err);
	return !ret;
}

/* The checkpoint folder restored: from memory when it can, else the
 * whole prefix from the store; the job's log says which. */
static int stage_checkpoint(struct stage_job *sj, struct stor *st, int fd,
			    struct buf *err)
{
	const struct api_assignment *s = &sj->a->spec;
	struct stor_sync_stats stats;
	char *ckpt;
	int64_t t0;
	int ret;

	ckpt = agent_jobdir_checkpoint_path(sj->a->dir,
					    s->checkpoint_local_path);
	memset(&stats, 0, sizeof(stats));
	ret = check_uri(s, "checkpoint", s->checkpoint_s3_uri, err);
	if (!ret && fs_mkdir_p(ckpt, 0755, NULL)) {
		(void)buf_addf(err, "cannot create %s: %s", ckpt,
			       strerror(errno));
		ret = ERR_IO;
	}
	if (ret || restore_from_memory(sj, st, ckpt, fd))
		goto out;
	t0 = time_mono_ms();
	ret = stor_get_prefix(st, s->checkpoint_s3_uri, ckpt, &stats, err);
	if (!ret)
		agent_task_say(fd,
			       "note checkpoint: %zu files (%lld bytes) "
			       "restored in %lld ms from %s (source: store)",
			       stats.files, (long long)stats.bytes,
			       (long long)(time_mono_ms() - t0),
			       s->checkpoint_s3_uri);
out:
	free(ckpt);
	return ret;
}

static int stage_main(void *arg, int fd)
{
	struct stage_job *sj = arg;
	const struct api_assignment *s = &sj->a->spec;
	const char *dir = sj->a->dir;
	struct stor_config cfg;
	struct stor *st = NULL;
	struct buf err = BUF_INIT;
	size_t i;
	int ret;

	agent_stor_config(sj->ctx, s, &cfg);
	ret = s->launch_mode == API_LAUNCH_CONTAINER ?
		      stage_image(sj, fd, &err) :
		      0;
	ret = ret ? ret : stor_open(&cfg, &st, &err);
	if (ret)
		goto out;
	if (s->checkpoint_s3_uri && *s->checkpoint_s3_uri)
		ret = stage_checkpoint(sj, st, fd, &err);
	if (ret)
		goto out;
	if (has_downloads(s))
		agent_task_say(fd, "phase downloading");
	for (i = 0; i < s->n_channels && !ret; i++)
		ret = stage_channel(st, s, &s->channels[i], dir, fd, &err);
	if (!ret && s->launch_mode == API_LAUNCH_SCRIPT &&
	    s->submit_directory && *s->submit_directory)
		ret = stage_code(st, s, dir, fd, &err);
	if (!ret)
		ret = prepare_python(s, dir, fd, &err);
out:
	if (ret)
		agent_task_say(fd, "error %s",
			       err.len ? err.data : err_str(ret));
	else
		agent_task_say(fd, "ok");
	if (st)
		stor_close(st);
	stor_config_release(&cfg);
	buf_release(&err);
	return ret ? 1 : 0;
}

int agent_stage_needed(const struct agent_ctx *ctx,
		       const struct api_assignment *s)
{
	return (s->launch_mode == API_LAUNCH_CONTAINER &&
		agent_podman_has_image(ctx->cfg.work_dir, s->image) != 1) ||
	       (s->checkpoint_s3_uri && *s->checkpoint_s3_uri) ||
	       s->n_channels ||
	       (s->launch_mode == API_LAUNCH_SCRIPT && s->submit_directory &&
		*s->submit_directory) ||
	       agent_fwcheck_wanted(s);
}

int agent_stage_start(struct agent_ctx *ctx, struct agent_assign *a,
		      struct buf *err)
{
	struct stage_job sj = { ctx, a };

	/* sj is copied into the worker by fork; it need not outlive us. A
	 * container's worker pulls as root first (stage_image). */
	return agent_task_start(
		&a->task, stage_main, &sj,
		a->spec.launch_mode == API_LAUNCH_CONTAINER ? NULL : &a->ident,
		err);
}
