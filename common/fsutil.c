#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int io_error(struct buf *err, const char *what, const char *path)
{
	if (err)
		(void)buf_addf(err, "cannot %s '%s': %s", what, path,
			       strerror(errno));
	return ERR_IO;
}

int fs_mkdir_p(const char *dir, mode_t mode, struct buf *err)
{
	struct buf p = BUF_INIT;
	struct stat st;
	size_t i;
	int ret = 0;

	if (buf_adds(&p, dir))
		return ERR_IO;
	/* Fast path: the folder usually exists already. */
	if (!stat(p.data, &st) && S_ISDIR(st.st_mode))
		goto out;
	for (i = 1; i <= p.len; i++) {
		char saved = p.data[i];

		if (saved != '/' && saved != '\0')
			continue;
		p.data[i] = '\0';
		if (!mkdir(p.data, mode))
			(void)chmod(p.data, mode);
		else if (errno != EEXIST) {
			ret = io_error(err, "create folder", p.data);
			goto out;
		}
		/* A link to a folder is a folder, as for mkdir -p. */
		if (stat(p.data, &st)) {
			ret = io_error(err, "inspect", p.data);
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (err)
				(void)buf_addf(err,
					       "cannot create folder '%s': "
					       "'%s' exists and is not a folder",
					       dir, p.data);
			ret = ERR_CONFLICT;
			goto out;
		}
		p.data[i] = saved;
	}
out:
	buf_release(&p);
	return ret;
}

int fs_write_all(int fd, const void *data, size_t left)
{
	const char *p = data;

	while (left > 0) {
		ssize_t w = write(fd, p, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		left -= (size_t)w;
	}
	return 0;
}

int fs_write_atomic(const char *path, const void *data, size_t len,
		    mode_t mode, int flags, struct buf *err)
{
	struct buf tmp = BUF_INIT;
	int fd, ret = 0;

	if (buf_addf(&tmp, "%s.tmp", path))
		return ERR_IO;
	fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  mode);
	if (fd < 0) {
		ret = io_error(err, "create", tmp.data);
		goto out;
	}
	if (fs_write_all(fd, data, len) ||
	    ((flags & FS_WRITE_SYNC) && fsync(fd)))
		ret = io_error(err, "write", tmp.data);
	if (close(fd) && !ret)
		ret = io_error(err, "write", tmp.data);
	if (!ret && rename(tmp.data, path))
		ret = io_error(err, "rename onto", path);
	if (ret)
		(void)unlink(tmp.data);
out:
	buf_release(&tmp);
	return ret;
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		(void)rmdir(path);
	else
		(void)unlink(path);
	return 0;
}

int fs_remove_tree(const char *dir)
{
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) &&
	    errno != ENOENT)
		return ERR_IO;
	return 0;
}

char *fs_resolve_existing(const char *path)
{
	struct buf head = BUF_INIT;
	struct buf out = BUF_INIT;
	char *real;
	char *slash;
	size_t kept;

	(void)buf_adds(&head, path);
	for (;;) {
		real = realpath(head.data, NULL);
		if (real || (errno != ENOENT && errno != ENOTDIR))
			break;
		slash = strrchr(head.data, '/');
		if (!slash || slash == head.data) {
			head.len = 0;
			real = xstrdup("/");
			break;
		}
		*slash = '\0';
		head.len = (size_t)(slash - head.data);
	}
	kept = head.len;
	buf_release(&head);
	if (!real)
		return NULL;
	(void)buf_addf(&out, "%s%s", strcmp(real, "/") ? real : "",
		       path + kept);
	free(real);
	return buf_detach(&out, NULL);
}

int fs_path_under(const char *path, char *const *roots, size_t n)
{
	char *real = path[0] == '/' ? fs_resolve_existing(path) : NULL;
	size_t i, len;
	int ok = 0;

	for (i = 0; real && i < n && !ok; i++) {
		len = strlen(roots[i]);
		if (len == 1 && roots[i][0] == '/')
			len = 0;
		ok = !strncmp(real, roots[i], len) &&
		     (real[len] == '/' || real[len] == '\0');
	}
	free(real);
	return ok;
}
