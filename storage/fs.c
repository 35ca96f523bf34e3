/*
 * The folder backend: file:// URIs and the embedded store, where a key is
 * a path relative to a root folder. Writes go to a temp file in the
 * destination folder, are fsync'ed and renamed into place, so a reader
 * (or a crash) never sees half a file.
 */
/* copy_file_range(2) and mkostemp(3) are GNU extensions. */
#define _GNU_SOURCE
#define LOG_TAG "storage"

#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "storage/fs.h"
#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

void stor_fs_path(struct buf *out, const char *root, const char *key)
{
	size_t rl = strlen(root);

	(void)buf_adds(out, root);
	if (!rl || root[rl - 1] != '/')
		(void)buf_addch(out, '/');
	(void)buf_adds(out, key);
}

static int io_error(struct buf *err, const char *what, const char *path)
{
	(void)buf_addf(err, "cannot %s '%s': %s", what, path, strerror(errno));
	return ERR_IO;
}

int stor_fs_mkdirs(const char *dir, struct buf *err)
{
	/* Folders are 0755 like the objects' 0644, whatever the process's
	 * umask (the controller's is 077: what must stay private, it makes
	 * so at the top). */
	return fs_mkdir_p(dir, 0755, err);
}

static void dir_of(const char *path, struct buf *out)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		(void)buf_adds(out, ".");
	else if (slash == path)
		(void)buf_adds(out, "/");
	else
		(void)buf_add(out, path, (size_t)(slash - path));
}

/*
 * The deepest folder of dir that exists, into anc. 0, or an error when a
 * part of dir exists and is not a folder (stor_fs_mkdirs() says which).
 */
static int existing_ancestor(const char *dir, struct buf *anc, struct buf *err)
{
	struct stat st;
	char *slash;

	buf_reset(anc);
	(void)buf_adds(anc, dir);
	while (lstat(anc->data, &st)) {
		if (errno != ENOENT || !(slash = strrchr(anc->data, '/')))
			return stor_fs_mkdirs(dir, err);
		if (slash == anc->data)
			slash++; /* "/" itself */
		*slash = '\0';
		anc->len = (size_t)(slash - anc->data);
		if (!anc->len)
			(void)buf_adds(anc, ".");
	}
	return S_ISDIR(st.st_mode) ? 0 : stor_fs_mkdirs(dir, err);
}

/*
 * The temp file goes into the deepest folder of path that exists, and the
 * missing ones are made only at commit: a put killed midway leaves no
 * folder of its own behind (an empty "step-*" folder would look like a
 * checkpoint without its manifest), only a hidden temp file.
 */
int stor_fs_tmp_open(const char *path, int *fd, struct buf *tmp,
		     struct buf *err)
{
	struct buf dir = BUF_INIT, anc = BUF_INIT;
	int ret, tries;

	dir_of(path, &dir);
	/*
	 * A concurrent delete may remove the (empty) folder between the look
	 * and mkstemp; trying again finds what is there.
	 */
	for (tries = 0; tries < 3; tries++) {
		ret = existing_ancestor(dir.data, &anc, err);
		if (ret)
			goto out;
		buf_reset(tmp);
		(void)buf_addf(tmp, "%s/" STOR_TMP_PREFIX "XXXXXX", anc.data);
		*fd = mkostemp(tmp->data, O_CLOEXEC);
		if (*fd >= 0)
			goto out;
		if (errno != ENOENT)
			break;
	}
	ret = io_error(err, "create a temp file in", anc.data);
out:
	buf_release(&dir);
	buf_release(&anc);
	return ret;
}

void stor_fs_tmp_abort(int fd, const char *tmp)
{
	if (fd >= 0)
		close(fd);
	if (tmp && *tmp)
		unlink(tmp);
}

static void fsync_dir(const char *path)
{
	struct buf dir = BUF_INIT;
	int fd;

	dir_of(path, &dir);
	fd = open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	buf_release(&dir);
}

int stor_fs_tmp_commit(int fd, const char *tmp, const char *path, int do_fsync,
		       struct buf *err)
{
	struct stat st;

	/* The temp file has mkstemp's 0600; objects are world-readable. */
	if (fchmod(fd, 0644)) {
		io_error(err, "chmod", tmp);
		goto fail;
	}
	if (do_fsync && fsync(fd)) {
		io_error(err, "fsync", tmp);
		goto fail;
	}
	if (close(fd)) {
		fd = -1;
		io_error(err, "close", tmp);
		goto fail;
	}
	fd = -1;
	if (!lstat(path, &st) && S_ISDIR(st.st_mode)) {
		(void)buf_addf(err, "cannot write '%s': it is a folder", path);
		unlink(tmp);
		return ERR_CONFLICT;
	}
	{
		struct buf dir = BUF_INIT;
		int tries, r = -1;

		dir_of(path, &dir);
		/* The folders the temp file's place lacked; a concurrent
		 * delete may remove an empty one before the rename. */
		for (tries = 0; tries < 3; tries++) {
			if (stor_fs_mkdirs(dir.data, err))
				break;
			r = rename(tmp, path);
			if (!r || errno != ENOENT)
				break;
		}
		buf_release(&dir);
		if (r) {
			if (!err->len)
				io_error(err, "rename into", path);
			goto fail;
		}
	}
	if (do_fsync)
		fsync_dir(path);
	return 0;
fail:
	stor_fs_tmp_abort(fd, tmp);
	return ERR_IO;
}

int stor_fs_copy_fd(int in, int out, int64_t *copied, struct buf *err)
{
	int64_t total = 0;
	char *b = NULL;
	ssize_t n;
	int ret = 0;

	/*
	 * copy_file_range keeps the bytes in the kernel (and reflinks where
	 * the filesystem can); it fails with EXDEV/EINVAL/ENOSYS/EOPNOTSUPP
	 * where it cannot, and only then we copy through a buffer.
	 */
	for (;;) {
		n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0);
		if (n > 0) {
			total += n;
			continue;
		}
		if (n == 0)
			goto out;
		if (errno == EINTR)
			continue;
		if (total == 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
		     errno == EOPNOTSUPP || errno == EBADF))
			break;
		(void)buf_addf(err, "copy failed: %s", strerror(errno));
		ret = ERR_IO;
		goto out;
	}
	b = xmalloc(STOR_IO_CHUNK);
	for (;;) {
		ssize_t w, off = 0;

		n = read(in, b, STOR_IO_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			(void)buf_addf(err, "read failed: %s", strerror(errno));
			ret = ERR_IO;
			goto out;
		}
		if (n == 0)
			break;
		while (off < n) {
			w = write(out, b + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				(void)buf_addf(err, "write failed: %s",
					       strerror(errno));
				ret = ERR_IO;
				goto out;
			}
			off += w;
		}
		total += n;
	}
out:
	free(b);
	if (copied)
		*copied = total;
	return ret;
}

/* --- listing ----------------------------------------------------------- */

static int64_t mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 +
	       st->st_mtim.tv_nsec / 1000000;
}

/*
 * Adds every regular file under root/rel (a folder) whose key starts with
 * prefix. rel is "" or ends with '/'. Symlinks are not followed, so a
 * listing never leaves the root.
 */
static int walk(const char *root, struct buf *rel, const char *prefix,
		struct stor_list *out, struct buf *err)
{
	struct buf path = BUF_INIT;
	size_t plen = strlen(prefix), base = rel->len;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	stor_fs_path(&path, root, rel->data);
	d = opendir(path.data);
	if (!d) {
		if (errno == ENOENT || errno == ENOTDIR)
			goto out;
		ret = io_error(err, "list", path.data);
		goto out;
	}
	while ((de = readdir(d))) {
		struct stat st;
		size_t cmp;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strncmp(de->d_name, STOR_TMP_PREFIX,
			     strlen(STOR_TMP_PREFIX)))
			continue;
		rel->len = base;
		rel->data[base] = '\0';
		(void)buf_adds(rel, de->d_name);
		/* Prune names that cannot lead to the prefix. */
		cmp = rel->len < plen ? rel->len : plen;
		if (memcmp(rel->data, prefix, cmp))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode)) {
			(void)buf_addch(rel, '/');
			ret = walk(root, rel, prefix, out, err);
			if (ret)
				break;
		} else if (S_ISREG(st.st_mode) && rel->len >= plen) {
			stor_list_push(out, rel->data, (int64_t)st.st_size,
				       mtime_ms(&st));
		}
	}
	closedir(d);
	rel->len = base;
	rel->data[base] = '\0';
out:
	buf_release(&path);
	return ret;
}

int stor_fs_list(const char *root, const char *prefix, int file_semantics,
		 struct stor_list *out, struct buf *err)
{
	struct buf rel = BUF_INIT, path = BUF_INIT, pfx = BUF_INIT;
	const char *slash;
	struct stat st;
	int ret = 0;

	(void)buf_adds(&pfx, prefix);
	if (file_semantics && pfx.len) {
		stor_fs_path(&path, root, prefix);
		if (!stat(path.data, &st) && S_ISREG(st.st_mode)) {
			if (pfx.data[pfx.len - 1] != '/')
				stor_list_push(out, prefix, (int64_t)st.st_size,
					       mtime_ms(&st));
			goto out;
		}
		if (!stat(path.data, &st) && S_ISDIR(st.st_mode) &&
		    pfx.data[pfx.len - 1] != '/')
			(void)buf_addch(&pfx, '/');
	}
	/* Start at the deepest folder the prefix names. */
	slash = strrchr(pfx.data, '/');
	if (slash)
		(void)buf_add(&rel, pfx.data, (size_t)(slash - pfx.data) + 1);
	ret = walk(root, &rel, pfx.data, out, err);
	stor_list_sort(out);
out:
	buf_release(&rel);
	buf_release(&path);
	buf_release(&pfx);
	return ret;
}

/* --- objects ------------------------------------------------------------ */

static int fs_stat(struct stor *s, const struct stor_target *t,
		   struct stor_object *out, struct buf *err)
{
	const char *root = t->root, *key = t->uri.key;
	struct buf path = BUF_INIT;
	struct stat st;
	int ret = 0;

	(void)s;
	stor_fs_path(&path, root, key);
	memset(out, 0, sizeof(*out));
	if (stat(path.data, &st) || !S_ISREG(st.st_mode)) {
		(void)buf_addf(err, "'%s': no such object", path.data);
		ret = ERR_NOTFOUND;
		goto out;
	}
	out->key = xstrdup(key);
	out->size = (int64_t)st.st_size;
	out->mtime_ms = mtime_ms(&st);
out:
	buf_release(&path);
	return ret;
}

/*
 * A copy that will be fsync'ed: in slices, each handed to writeback as
 * soon as it is copied (sync_file_range WRITE) and the one before waited
 * for, so the disk writes while the next slice is copied and the final
 * fsync finds little left to do; the page cache never holds more than two
 * slices of dirty data. Falls back to the plain copy where the kernel
 * cannot copy file to file.
 */
#define DURABLE_SLICE (32 << 20)
static int copy_durable(int in, int out, int64_t *copied, struct buf *err)
{
	int64_t total = 0, prev = -1;
	ssize_t n;

	for (;;) {
		n = copy_file_range(in, NULL, out, NULL, DURABLE_SLICE, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && total == 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
		     errno == EOPNOTSUPP || errno == EBADF))
			return stor_fs_copy_fd(in, out, copied, err);
		if (n < 0) {
			(void)buf_addf(err, "copy failed: %s", strerror(errno));
			return ERR_IO;
		}
		if (n == 0)
			break;
		(void)sync_file_range(out, total, n, SYNC_FILE_RANGE_WRITE);
		if (prev >= 0)
			(void)sync_file_range(
				out, prev, total - prev,
				SYNC_FILE_RANGE_WAIT_BEFORE |
					SYNC_FILE_RANGE_WRITE |
					SYNC_FILE_RANGE_WAIT_AFTER);
		prev = total;
		total += n;
	}
	*copied = total;
	return 0;
}

/* Copies the file src to dst through a temp file; fsync when asked. */
static int copy_atomic(const char *src, const char *dst, int do_fsync,
		       struct stor_object *info, struct buf *err)
{
	struct buf tmp = BUF_INIT;
	struct stat st;
	int64_t n = 0;
	int in, out = -1, ret;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		if (errno == ENOENT) {
			(void)buf_addf(err, "'%s': no such file", src);
			return ERR_NOTFOUND;
		}
		return io_error(err, "open", src);
	}
	if (fstat(in, &st) || !S_ISREG(st.st_mode)) {
		(void)buf_addf(err, "'%s' is not a regular file", src);
		ret = S_ISDIR(st.st_mode) ? ERR_NOTFOUND : ERR_INVALID;
		goto out;
	}
	ret = stor_fs_tmp_open(dst, &out, &tmp, err);
	if (ret)
		goto out;
	posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
	ret = do_fsync ? copy_durable(in, out, &n, err) :
			 stor_fs_copy_fd(in, out, &n, err);
	if (!ret && n != (int64_t)st.st_size) {
		(void)buf_addf(err,
			       "'%s' changed while it was copied (%lld of "
			       "%lld bytes)",
			       src, (long long)n, (long long)st.st_size);
		ret = ERR_IO;
	}
	if (ret) {
		stor_fs_tmp_abort(out, tmp.data);
		goto out;
	}
	ret = stor_fs_tmp_commit(out, tmp.data, dst, do_fsync, err);
	if (!ret && info) {
		memset(info, 0, sizeof(*info));
		info->size = n;
		info->mtime_ms = time(NULL) * 1000LL;
	}
out:
	close(in);
	buf_release(&tmp);
	return ret;
}

static int fs_get(struct stor *s, const struct stor_target *t, const char *path,
		  struct stor_object *info, struct buf *err)
{
	const char *root = t->root, *key = t->uri.key;
	struct buf src = BUF_INIT;
	int ret;

	(void)s;
	stor_fs_path(&src, root, key);
	/*
	 * Downloads land in a job's local folder, which is restaged after a
	 * crash: renaming is enough there, fsync is not worth its cost.
	 */
	ret = copy_atomic(src.data, path, 0, info, err);
	if (!ret && info)
		info->key = xstrdup(key);
	buf_release(&src);
	return ret;
}

static int fs_get_stream(struct stor *s, const struct stor_target *t,
			 stor_stream_fn *fn, void *arg, int64_t *size,
			 struct buf *err)
{
	const char *root = t->root, *key = t->uri.key;
	struct buf src = BUF_INIT;
	struct stat st;
	char *b = NULL;
	int64_t total = 0;
	ssize_t n;
	int fd, ret = 0;

	(void)s;
	stor_fs_path(&src, root, key);
	fd = open(src.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = fd < 0 && errno != ENOENT && errno != ENOTDIR ?
			      io_error(err, "open", src.data) :
			      ERR_NOTFOUND;
		if (ret == ERR_NOTFOUND)
			(void)buf_addf(err, "no such object");
		goto out;
	}
	b = xmalloc(STOR_STREAM_CHUNK);
	for (;;) {
		n = read(fd, b, STOR_STREAM_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = io_error(err, "read", src.data);
			break;
		}
		if (n == 0)
			break;
		ret = fn(arg, b, (size_t)n);
		if (ret) {
			(void)buf_addf(err, "stream stopped after %lld bytes",
				       (long long)total);
			break;
		}
		total += n;
	}
out:
	if (fd >= 0)
		close(fd);
	if (size)
		*size = total;
	free(b);
	buf_release(&src);
	return ret;
}

static int fs_put(struct stor *s, const struct stor_target *t, const char *path,
		  struct stor_object *info, struct buf *err)
{
	const char *root = t->root, *key = t->uri.key;
	struct buf dst = BUF_INIT;
	int ret;

	(void)s;
	stor_fs_path(&dst, root, key);
	ret = copy_atomic(path, dst.data, 1, info, err);
	if (!ret && info)
		info->key = xstrdup(key);
	buf_release(&dst);
	return ret;
}

int stor_fs_delete(const char *root, const char *key, int prune,
		   struct buf *err)
{
	struct buf path = BUF_INIT;
	struct stat st;
	int ret = 0;
	char *slash;

	stor_fs_path(&path, root, key);
	if (lstat(path.data, &st)) {
		if (errno != ENOENT)
			ret = io_error(err, "delete", path.data);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		/* Not an object: S3 would find no such key either. */
		goto out;
	}
	if (unlink(path.data)) {
		ret = io_error(err, "delete", path.data);
		goto out;
	}
	/* Drop folders the object leaves empty, never the root itself. */
	while (prune && (slash = strrchr(path.data, '/')) &&
	       (size_t)(slash - path.data) > strlen(root)) {
		*slash = '\0';
		path.len = (size_t)(slash - path.data);
		if (rmdir(path.data))
			break;
	}
out:
	buf_release(&path);
	return ret;
}

/* file:// lists a named file or folder; the embedded store lists by prefix. */
static int fs_list(struct stor *s, const struct stor_target *t,
		   struct stor_list *out, struct buf *err)
{
	(void)s;
	return stor_fs_list(t->root, t->uri.key,
			    t->uri.scheme == STOR_SCHEME_FILE, out, err);
}

/* The embedded store has no folders of its own; a file:// tree does. */
static int fs_delete(struct stor *s, const struct stor_target *t,
		     struct buf *err)
{
	(void)s;
	return stor_fs_delete(t->root, t->uri.key,
			      t->uri.scheme == STOR_SCHEME_S3, err);
}

const struct stor_backend stor__fs_backend = {
	.name = "fs",
	.list = fs_list,
	.stat = fs_stat,
	.get = fs_get,
	.get_stream = fs_get_stream,
	.put = fs_put,
	.delete_object = fs_delete,
};

/* nftw() passes no user data: one sweep at a time (the lock below). */
static struct {
	time_t before;
	size_t removed;
} sweep;

static int sweep_one(const char *path, const struct stat *st, int flag,
		     struct FTW *f)
{
	const char *base = path + f->base;

	if (flag == FTW_F &&
	    !strncmp(base, STOR_TMP_PREFIX, strlen(STOR_TMP_PREFIX)) &&
	    st->st_mtime <= sweep.before && !unlink(path))
		sweep.removed++;
	/* Below a bucket (depth 2 and more): empty folders go. */
	else if (flag == FTW_DP && f->level >= 2)
		(void)rmdir(path);
	return 0;
}

size_t stor_fs_sweep_tmp(const char *root, int64_t min_age_s)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t n;

	pthread_mutex_lock(&lock);
	sweep.before = time(NULL) - (time_t)min_age_s;
	sweep.removed = 0;
	(void)nftw(root, sweep_one, 32, FTW_PHYS | FTW_DEPTH | FTW_MOUNT);
	n = sweep.removed;
	pthread_mutex_unlock(&lock);
	return n;
}
