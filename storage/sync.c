/*
 * The two tree transfers built on single objects: a prefix down to a
 * folder, and a folder up to a prefix, with the checkpoint-sync rules
 * (which files are settled, which stored checkpoints were superseded).
 */
#define LOG_TAG "storage"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fs.h"
#include "storage/stor_internal.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/log.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* "s3://b/p" + "x/y" -> "s3://b/p/x/y"; a prefix ending in '/' keeps one. */
static void join_uri(struct buf *out, const char *uri, const char *rel)
{
	size_t n = strlen(uri);

	(void)buf_adds(out, uri);
	if (n && uri[n - 1] != '/')
		(void)buf_addch(out, '/');
	(void)buf_adds(out, rel);
}

/*
 * A fetched file takes its object's time, as `aws s3 sync` does: a
 * restored checkpoint is then older than anything the program writes
 * (the checkpoint mirror stores only files newer than the run's start,
 * whose clock ticks coarsely).
 */
static void set_mtime(const char *path, int64_t ms)
{
	struct timespec ts[2];

	if (ms <= 0)
		return;
	ts[0].tv_sec = ts[1].tv_sec = (time_t)(ms / 1000);
	ts[0].tv_nsec = ts[1].tv_nsec = (long)(ms % 1000) * 1000000L;
	(void)utimensat(AT_FDCWD, path, ts, 0);
}

int stor_get_prefix(struct stor *s, const char *uri, const char *dir,
		    struct stor_sync_stats *stats, struct buf *err)
{
	struct stor_list l = STOR_LIST_INIT;
	struct stor_target t;
	struct buf src = BUF_INIT, dst = BUF_INIT, why = BUF_INIT;
	struct stor_sync_stats local = { 0 };
	size_t i, plen;
	int ret;

	ret = stor__resolve(s, uri, &t, err);
	if (ret)
		return ret;
	plen = strlen(t.uri.key);
	ret = stor_list(s, uri, &l, err);
	if (ret)
		goto out;
	ret = stor_fs_mkdirs(dir, err);
	if (ret)
		goto out;
	for (i = 0; i < l.n; i++) {
		const char *key = l.v[i].key, *rel = key + plen;
		const char *slash;

		while (*rel == '/')
			rel++;
		if (!*rel) {
			/* The prefix is the object itself. */
			slash = strrchr(key, '/');
			rel = slash ? slash + 1 : key;
		}
		if (key[strlen(key) - 1] == '/')
			continue; /* a folder marker, not an object */
		buf_reset(&why);
		if (stor_key_check(rel, 0, &why)) {
			(void)buf_addf(err,
				       "%s: object '%s' would land outside "
				       "'%s': %s",
				       uri, key, dir, why.data);
			ret = ERR_INVALID;
			goto out;
		}
		buf_reset(&src);
		buf_reset(&dst);
		if (t.uri.scheme == STOR_SCHEME_FILE)
			(void)buf_addf(&src, "file:///%s", key);
		else
			(void)buf_addf(&src, "s3://%s/%s", t.uri.bucket, key);
		stor_fs_path(&dst, dir, rel);
		ret = stor_get(s, src.data, dst.data, NULL, err);
		if (ret)
			goto out;
		set_mtime(dst.data, l.v[i].mtime_ms);
		local.files++;
		local.bytes += l.v[i].size;
	}
out:
	if (stats)
		*stats = local;
	stor__target_release(&t);
	stor_list_release(&l);
	buf_release(&src);
	buf_release(&dst);
	buf_release(&why);
	return ret;
}

/* Collects the regular files under dir/rel as relative paths. */
static int collect(const char *dir, struct buf *rel, struct stor_list *out,
		   struct buf *err)
{
	struct buf path = BUF_INIT;
	size_t base = rel->len;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	stor_fs_path(&path, dir, rel->data);
	d = opendir(path.data);
	if (!d) {
		(void)buf_addf(err, "cannot read folder '%s': %s", path.data,
			       strerror(errno));
		buf_release(&path);
		return ERR_IO;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strncmp(de->d_name, STOR_TMP_PREFIX,
			     strlen(STOR_TMP_PREFIX)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		rel->len = base;
		rel->data[base] = '\0';
		(void)buf_adds(rel, de->d_name);
		if (S_ISDIR(st.st_mode)) {
			(void)buf_addch(rel, '/');
			ret = collect(dir, rel, out, err);
			if (ret)
				break;
		} else if (S_ISREG(st.st_mode)) {
			stor_list_push(out, rel->data, (int64_t)st.st_size,
				       (int64_t)st.st_mtim.tv_sec * 1000 +
					       st.st_mtim.tv_nsec / 1000000);
		}
	}
	closedir(d);
	rel->len = base;
	rel->data[base] = '\0';
	buf_release(&path);
	return ret;
}

static int is_manifest(const char *key)
{
	const char *b = strrchr(key, '/');

	return !strcmp(b ? b + 1 : key, "MANIFEST.json");
}

static int in_tmp(const char *key)
{
	return !strncmp(key, ".tmp-", 5) || strstr(key, "/.tmp-");
}

/*
 * Which checkpoint files may go now (docs/distributed.md): a file of a
 * saved libtrainer checkpoint (its folder has a MANIFEST.json; those
 * folders are complete once renamed into place); a file the caller saw
 * complete (closed after writing, or renamed into place) and unchanged
 * since (same size and mtime); every file once the program has ended
 * (final); and, as a last resort, a file nothing wrote for STOR_QUIET_MS
 * (one that was completed while nobody watched).
 */
#define STOR_QUIET_MS 2000

struct settle_rule {
	const struct stor_list *files;
	const struct stor_list *complete; /* sorted; may be NULL */
	int final;
	int64_t now_ms;
};

static int settled(const struct settle_rule *r, const struct stor_object *f)
{
	const char *slash = strrchr(f->key, '/');
	const struct stor_object *c;
	struct buf m = BUF_INIT;
	int ok;

	if (r->final || r->now_ms - f->mtime_ms >= STOR_QUIET_MS)
		return 1;
	c = r->complete ? stor__list_find(r->complete, f->key) : NULL;
	if (c && c->size == f->size && c->mtime_ms == f->mtime_ms)
		return 1;
	if (slash)
		(void)buf_add(&m, f->key, (size_t)(slash - f->key) + 1);
	(void)buf_adds(&m, "MANIFEST.json");
	ok = stor__list_find(r->files, m.data) != NULL;
	buf_release(&m);
	return ok;
}

/* Length of key's folder part with its '/', 0 at the top. */
static size_t folder_len(const char *key)
{
	const char *slash = strrchr(key, '/');

	return slash ? (size_t)(slash - key) + 1 : 0;
}

/*
 * A libtrainer checkpoint folder "<parent>/step-<digits>.rank-<r>/"
 * (docs/checkpoints.md): *parent_len is the length of "<parent>/".
 */
static int trainer_folder(const char *folder, size_t len, size_t *parent_len,
			  long long *step, long *rank)
{
	char name[128], *end;
	size_t p = 0, i;

	if (!len || folder[len - 1] != '/')
		return 0;
	for (i = 0; i + 1 < len; i++)
		if (folder[i] == '/')
			p = i + 1;
	if (len - 1 - p >= sizeof(name) || strncmp(folder + p, "step-", 5))
		return 0;
	memcpy(name, folder + p, len - 1 - p);
	name[len - 1 - p] = '\0';
	*step = strtoll(name + 5, &end, 10);
	if (end == name + 5 || strncmp(end, ".rank-", 6))
		return 0;
	*rank = strtol(end + 6, &end, 10);
	if (*end)
		return 0;
	*parent_len = p;
	return 1;
}

/* A strvec used as a small set of strings given by (k, len). */
static int strset_has(const struct strvec *s, const char *k, size_t len)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && !strncmp(s->v[i], k, len))
			return 1;
	return 0;
}

static void strset_add(struct strvec *s, const char *k, size_t len)
{
	if (!strset_has(s, k, len))
		strvec_pushf(s, "%.*s", (int)len, k);
}

/* Whether local has a complete checkpoint of the same parent and rank,
 * newer than step and written since since_ms (the remote folder was
 * pruned here, by the program writing that rank's checkpoints). */
static int superseded(const struct stor_list *local, const char *folder,
		      size_t parent_len, long long step, long rank,
		      int64_t since_ms)
{
	size_t i;

	for (i = 0; i < local->n; i++) {
		const char *k = local->v[i].key;
		size_t fl = folder_len(k), pl;
		long long st;
		long rk;

		if (!is_manifest(k) || local->v[i].mtime_ms < since_ms ||
		    !trainer_folder(k, fl, &pl, &st, &rk))
			continue;
		if (pl == parent_len && !strncmp(k, folder, pl) && rk == rank &&
		    st > step)
			return 1;
	}
	return 0;
}

/* Deletes the remote objects of folder (its manifest first). */
static void delete_folder(struct stor *s, const char *uri,
			  const struct stor_list *remote, size_t base,
			  const char *folder, size_t len)
{
	struct buf dst = BUF_INIT, e = BUF_INIT;
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < remote->n; i++) {
			const char *k = remote->v[i].key;

			if (strlen(k) <= base ||
			    strncmp(k + base, folder, len) ||
			    folder_len(k + base) != len ||
			    is_manifest(k) != !pass)
				continue;
			buf_reset(&dst);
			join_uri(&dst, uri, k + base);
			(void)stor_delete(s, dst.data, &e);
			buf_reset(&e);
		}
	buf_release(&dst);
	buf_release(&e);
}

/*
 * What of a folder removed while it was copied went up in this pass (its
 * manifest never did: manifests go last, and not for a removed folder).
 */
static void delete_stored(struct stor *s, const char *uri,
			  const struct strvec *stored, const char *folder)
{
	struct buf dst = BUF_INIT, e = BUF_INIT;
	size_t i, len = strlen(folder);

	for (i = 0; i < stored->n; i++) {
		if (strncmp(stored->v[i], folder, len) ||
		    folder_len(stored->v[i]) != len)
			continue;
		buf_reset(&dst);
		join_uri(&dst, uri, stored->v[i]);
		(void)stor_delete(s, dst.data, &e);
		buf_reset(&e);
	}
	buf_release(&dst);
	buf_release(&e);
}

/* Whether key's folder (fl bytes, with its '/') is a libtrainer
 * checkpoint's (step-N.rank-R). */
static int trainer_ckpt_folder(const char *key, size_t fl)
{
	size_t pl;
	long long step;
	long rank;

	return trainer_folder(key, fl, &pl, &step, &rank);
}

/* Whether the local folder of key (fl bytes, with its '/') is gone. */
static int folder_gone(const char *dir, const char *key, size_t fl)
{
	struct buf k = BUF_INIT, path = BUF_INIT;
	int gone;

	(void)buf_add(&k, key, fl - 1);
	stor_fs_path(&path, dir, k.data ? k.data : "");
	gone = access(path.data, F_OK) != 0;
	buf_release(&k);
	buf_release(&path);
	return gone;
}

/*
 * The files of the checkpoint mirror (put_checkpoints() below), manifests
 * last; the folders of files removed while they were copied go to gone,
 * the keys stored (relative to dir) to stored.
 * base: the length of the target's key with its '/'.
 */
static int put_ckpt_files(struct stor *s, const char *dir, const char *uri,
			  const struct stor_target *t, size_t base,
			  const struct stor_list *files,
			  const struct stor_list *remote,
			  const struct stor_ckpt_sync *opt, struct strvec *gone,
			  struct strvec *stored, struct stor_sync_stats *st,
			  struct buf *err)
{
	struct strvec failed = STRVEC_INIT;
	struct buf src = BUF_INIT, dst = BUF_INIT, k = BUF_INIT;
	struct settle_rule rule = { files, opt->complete, opt->final,
				    time_now_ms() };
	int64_t since_ms = opt->since_ms;
	int pass, ret = 0;
	size_t i;

	for (pass = 0; pass < 2 && !ret; pass++)
		for (i = 0; i < files->n && !ret; i++) {
			const struct stor_object *f = &files->v[i], *r;
			size_t fl = folder_len(f->key);

			if (in_tmp(f->key) || is_manifest(f->key) != pass ||
			    f->mtime_ms < since_ms || !settled(&rule, f) ||
			    strset_has(gone, f->key, fl) ||
			    (pass && strset_has(&failed, f->key, fl)))
				continue;
			buf_reset(&k);
			(void)buf_adds(&k, t->uri.key);
			if (base > strlen(t->uri.key))
				(void)buf_addch(&k, '/');
			(void)buf_adds(&k, f->key);
			r = stor__list_find(remote, k.data);
			if (r && r->size == f->size &&
			    r->mtime_ms >= f->mtime_ms) {
				st->skipped++;
				continue;
			}
			buf_reset(&src);
			buf_reset(&dst);
			stor_fs_path(&src, dir, f->key);
			join_uri(&dst, uri, f->key);
			ret = stor_put(s, src.data, dst.data, NULL, err);
			if (ret && access(src.data, F_OK)) {
				/* Removed while we copied: not an error. A
				 * checkpoint folder is being pruned (rm -rf
				 * takes its files first), another folder only
				 * when it is gone; else the file, renamed into
				 * place, say, goes alone. */
				if (fl && (trainer_ckpt_folder(f->key, fl) ||
					   folder_gone(dir, f->key, fl)))
					strset_add(gone, f->key, fl);
				buf_reset(err);
				ret = 0;
				continue;
			}
			if (ret)
				strset_add(&failed, f->key, fl);
			if (!ret) {
				st->files++;
				st->bytes += f->size;
				strvec_push(stored, f->key);
			}
		}
	strvec_release(&failed);
	buf_release(&src);
	buf_release(&dst);
	buf_release(&k);
	return ret;
}

/* Stored checkpoint folders of this host's ranks pruned here. */
static void delete_pruned(struct stor *s, const char *uri, size_t base,
			  const struct stor_list *files,
			  const struct stor_list *remote, int64_t since_ms)
{
	struct strvec seen = STRVEC_INIT;
	struct buf k = BUF_INIT;
	size_t i;

	for (i = 0; i < remote->n; i++) {
		const char *rk = remote->v[i].key;
		size_t fl, pl;
		long long step;
		long rank;

		if (strlen(rk) <= base)
			continue;
		rk += base;
		fl = folder_len(rk);
		if (strset_has(&seen, rk, fl) ||
		    !trainer_folder(rk, fl, &pl, &step, &rank))
			continue;
		strset_add(&seen, rk, fl);
		buf_reset(&k);
		(void)buf_add(&k, rk, fl);
		(void)buf_adds(&k, "MANIFEST.json");
		if (stor__list_find(files, k.data) ||
		    !superseded(files, rk, pl, step, rank, since_ms))
			continue;
		delete_folder(s, uri, remote, base, rk, fl);
	}
	strvec_release(&seen);
	buf_release(&k);
}

/*
 * The checkpoint mirror (STOR_SYNC_CHECKPOINT | STOR_SYNC_CHANGED): a
 * folder's manifest goes only after every other file of the folder went
 * (or was there already); a folder the program removed meanwhile (it
 * keeps the newest few) is skipped and what of it was stored is deleted,
 * manifest first; stored libtrainer checkpoints that the program pruned
 * here (a newer one of the same rank exists) are deleted the same way, so
 * the store holds no torn and no stale checkpoint of this host's ranks.
 * Files older than since_ms (restored from the store, or left from
 * before) are never stored again: several hosts restore the same
 * checkpoints, and only the one whose program writes them mirrors them.
 */
static int put_checkpoints(struct stor *s, const char *dir, const char *uri,
			   const struct stor_target *t,
			   const struct stor_list *files,
			   const struct stor_list *remote,
			   const struct stor_ckpt_sync *opt,
			   struct stor_sync_stats *st, struct buf *err)
{
	struct strvec gone = STRVEC_INIT, stored = STRVEC_INIT;
	size_t base = strlen(t->uri.key), i;
	int ret;

	if (base && t->uri.key[base - 1] != '/')
		base++;
	ret = put_ckpt_files(s, dir, uri, t, base, files, remote, opt, &gone,
			     &stored, st, err);
	for (i = 0; i < gone.n; i++) {
		delete_folder(s, uri, remote, base, gone.v[i],
			      strlen(gone.v[i]));
		delete_stored(s, uri, &stored, gone.v[i]);
	}
	delete_pruned(s, uri, base, files, remote, opt->since_ms);
	strvec_release(&gone);
	strvec_release(&stored);
	return ret;
}

static int put_dir(struct stor *s, const char *dir, const char *uri,
		   unsigned flags, const struct stor_ckpt_sync *opt,
		   struct stor_sync_stats *stats, struct buf *err);

int stor_put_dir(struct stor *s, const char *dir, const char *uri,
		 unsigned flags, struct stor_sync_stats *stats, struct buf *err)
{
	struct stor_ckpt_sync opt = { 0, NULL, 0 };

	return put_dir(s, dir, uri, flags, &opt, stats, err);
}

int stor_sync_checkpoints(struct stor *s, const char *dir, const char *uri,
			  const struct stor_ckpt_sync *opt,
			  struct stor_sync_stats *stats, struct buf *err)
{
	return put_dir(s, dir, uri, STOR_SYNC_CHANGED | STOR_SYNC_CHECKPOINT,
		       opt, stats, err);
}

static int put_dir(struct stor *s, const char *dir, const char *uri,
		   unsigned flags, const struct stor_ckpt_sync *opt,
		   struct stor_sync_stats *stats, struct buf *err)
{
	struct settle_rule rule;
	int pass;
	struct stor_list files = STOR_LIST_INIT, remote = STOR_LIST_INIT;
	struct stor_sync_stats local = { 0 };
	struct buf rel = BUF_INIT, src = BUF_INIT, dst = BUF_INIT;
	struct stor_target t;
	size_t i;
	int ret;

	ret = stor__resolve(s, uri, &t, err);
	if (ret)
		return ret;
	ret = collect(dir, &rel, &files, err);
	if (ret)
		goto out;
	stor_list_sort(&files);
	if (flags & STOR_SYNC_CHANGED) {
		ret = stor_list(s, uri, &remote, err);
		if (ret)
			goto out;
	}
	if ((flags & STOR_SYNC_CHECKPOINT) && (flags & STOR_SYNC_CHANGED)) {
		ret = put_checkpoints(s, dir, uri, &t, &files, &remote, opt,
				      &local, err);
		goto out;
	}
	rule.files = &files;
	rule.complete = opt->complete;
	rule.final = opt->final;
	rule.now_ms = time_now_ms();
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < files.n; i++) {
			const struct stor_object *f = &files.v[i], *r;

			if (flags & STOR_SYNC_CHECKPOINT) {
				if (in_tmp(f->key) ||
				    is_manifest(f->key) != pass ||
				    !settled(&rule, f))
					continue;
			} else if (pass) {
				break;
			}
			buf_reset(&src);
			buf_reset(&dst);
			join_uri(&dst, uri, f->key);
			if (flags & STOR_SYNC_CHANGED) {
				size_t plen = strlen(t.uri.key);
				struct buf k = BUF_INIT;

				(void)buf_adds(&k, t.uri.key);
				if (plen && t.uri.key[plen - 1] != '/')
					(void)buf_addch(&k, '/');
				(void)buf_adds(&k, f->key);
				r = stor__list_find(&remote, k.data);
				buf_release(&k);
				if (r && r->size == f->size &&
				    r->mtime_ms >= f->mtime_ms) {
					local.skipped++;
					continue;
				}
			}
			stor_fs_path(&src, dir, f->key);
			ret = stor_put(s, src.data, dst.data, NULL, err);
			if (ret)
				goto out;
			local.files++;
			local.bytes += f->size;
		}
out:
	if (stats)
		*stats = local;
	stor__target_release(&t);
	stor_list_release(&files);
	stor_list_release(&remote);
	buf_release(&rel);
	buf_release(&src);
	buf_release(&dst);
	return ret;
}
