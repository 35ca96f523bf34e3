/*
 * tar.gz packing and safe unpacking with libarchive: model.tar.gz and
 * output.tar.gz (one folder, or several merged as SageMaker merges every
 * host's /opt/ml/model) and script mode's source tarballs.
 *
 * Unpacking treats the archive as hostile: every name is checked before
 * anything is written (absolute, '..', through a symlink, link targets
 * that leave the folder, device nodes), sizes are checked against the
 * caps from the header before the data is read and again while it is
 * written, and libarchive's own SECURE_* checks stay on underneath.
 */
#define LOG_TAG "storage"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "storage/fs.h"
#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define ARCHIVE_BLOCK (1024 * 1024)

/* --- packing ------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in path, sorted so that archives are reproducible. */
static int read_names(const char *path, struct strvec *names, struct buf *err)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d) {
		(void)buf_addf(err, "cannot read folder '%s': %s", path,
			       strerror(errno));
		return ERR_IO;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strncmp(de->d_name, STOR_TMP_PREFIX,
			     strlen(STOR_TMP_PREFIX)))
			continue;
		strvec_push(names, de->d_name);
	}
	closedir(d);
	if (names->n > 1)
		qsort(names->v, names->n, sizeof(*names->v), cmp_str);
	return 0;
}

static int write_file_data(struct archive *a, const char *path, char *blk,
			   struct buf *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0) {
		(void)buf_addf(err, "cannot open '%s': %s", path,
			       strerror(errno));
		return ERR_IO;
	}
	while ((n = read(fd, blk, ARCHIVE_BLOCK)) > 0) {
		if (archive_write_data(a, blk, (size_t)n) != n) {
			(void)buf_addf(err, "cannot archive '%s': %s", path,
				       archive_error_string(a));
			close(fd);
			return ERR_IO;
		}
	}
	if (n < 0) {
		(void)buf_addf(err, "cannot read '%s': %s", path,
			       strerror(errno));
		close(fd);
		return ERR_IO;
	}
	close(fd);
	return 0;
}

/* Adds the tree under dir/rel ("" for the top) to a. */
static int pack_tree(struct archive *a, const char *dir, struct buf *rel,
		     char *blk, struct buf *err)
{
	struct buf path = BUF_INIT, target = BUF_INIT;
	struct archive_entry *e = archive_entry_new();
	struct strvec names = STRVEC_INIT;
	size_t i, base = rel->len;
	int ret;

	stor_fs_path(&path, dir, rel->data);
	ret = read_names(path.data, &names, err);
	for (i = 0; !ret && i < names.n; i++) {
		struct stat st;

		rel->len = base;
		rel->data[base] = '\0';
		(void)buf_adds(rel, names.v[i]);
		buf_reset(&path);
		stor_fs_path(&path, dir, rel->data);
		if (lstat(path.data, &st))
			continue;
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
		    !S_ISLNK(st.st_mode))
			continue; /* sockets, fifos, devices */
		archive_entry_clear(e);
		archive_entry_copy_stat(e, &st);
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_copy_pathname(e, rel->data);
		if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t tl = readlink(path.data, t, sizeof(t) - 1);

			if (tl < 0)
				continue;
			t[tl] = '\0';
			buf_reset(&target);
			(void)buf_adds(&target, t);
			archive_entry_copy_symlink(e, target.data);
		}
		if (archive_write_header(a, e) != ARCHIVE_OK) {
			(void)buf_addf(err, "cannot archive '%s': %s",
				       path.data, archive_error_string(a));
			ret = ERR_IO;
			break;
		}
		if (S_ISREG(st.st_mode))
			ret = write_file_data(a, path.data, blk, err);
		else if (S_ISDIR(st.st_mode)) {
			(void)buf_addch(rel, '/');
			ret = pack_tree(a, dir, rel, blk, err);
		}
	}
	strvec_release(&names);
	rel->len = base;
	rel->data[base] = '\0';
	archive_entry_free(e);
	buf_release(&path);
	buf_release(&target);
	return ret;
}

int stor_archive_pack(const char *const *dirs, size_t ndirs,
		      const char *out_path, struct buf *err)
{
	struct archive *a = archive_write_new();
	struct buf tmp = BUF_INIT, rel = BUF_INIT;
	char *blk = xmalloc(ARCHIVE_BLOCK);
	size_t i;
	int fd = -1, ret;

	ret = stor_fs_tmp_open(out_path, &fd, &tmp, err);
	if (ret)
		goto out;
	if (archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(a, 64 * 1024) != ARCHIVE_OK ||
	    archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		(void)buf_addf(err, "cannot start '%s': %s", out_path,
			       archive_error_string(a));
		ret = ERR_IO;
		goto fail;
	}
	for (i = 0; i < ndirs && !ret; i++) {
		buf_reset(&rel);
		ret = pack_tree(a, dirs[i], &rel, blk, err);
	}
	if (!ret && archive_write_close(a) != ARCHIVE_OK) {
		(void)buf_addf(err, "cannot finish '%s': %s", out_path,
			       archive_error_string(a));
		ret = ERR_IO;
	}
	if (ret)
		goto fail;
	ret = stor_fs_tmp_commit(fd, tmp.data, out_path, 1, err);
	goto out;
fail:
	stor_fs_tmp_abort(fd, tmp.data);
out:
	archive_write_free(a);
	free(blk);
	buf_release(&tmp);
	buf_release(&rel);
	return ret;
}

/* --- unpacking -------------------------------------------------------------
 */

/*
 * Normalises an entry name: drops leading "./" and repeated or trailing
 * slashes; refuses absolute names and "..". Empty result: the top folder.
 */
static int clean_name(const char *name, struct buf *out, struct buf *err)
{
	const char *c, *p;

	if (name[0] == '/') {
		(void)buf_addf(err, "entry '%.300s' has an absolute name",
			       name);
		return ERR_INVALID;
	}
	for (c = name; *c; c = p) {
		size_t len;

		while (*c == '/')
			c++;
		p = c + strcspn(c, "/");
		len = (size_t)(p - c);
		if (!len || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			(void)buf_addf(err,
				       "entry '%.300s' has a '..' component",
				       name);
			return ERR_INVALID;
		}
		if (out->len)
			(void)buf_addch(out, '/');
		(void)buf_add(out, c, len);
	}
	return 0;
}

/*
 * Checks that a symlink at `name` pointing at `target` stays inside the
 * folder, resolving the target lexically from name's folder.
 */
static int link_stays_inside(const char *name, const char *target)
{
	int depth = 0;
	const char *c, *p;

	if (target[0] == '/' || !target[0])
		return 0;
	for (c = name; (p = strchr(c, '/')); c = p + 1)
		depth++;
	for (c = target; *c; c = p) {
		size_t len;

		while (*c == '/')
			c++;
		p = c + strcspn(c, "/");
		len = (size_t)(p - c);
		if (!len || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			if (--depth < 0)
				return 0;
		} else {
			depth++;
		}
	}
	return 1;
}

/* Refuses a name whose folders (already on disk) include a symlink. */
static int no_symlink_on_path(const char *root, const char *name,
			      struct buf *err)
{
	struct buf p = BUF_INIT;
	const char *c;
	int ret = 0;

	for (c = name; (c = strchr(c, '/')); c++) {
		struct stat st;

		buf_reset(&p);
		stor_fs_path(&p, root, "");
		(void)buf_add(&p, name, (size_t)(c - name));
		if (!lstat(p.data, &st) && S_ISLNK(st.st_mode)) {
			(void)buf_addf(err,
				       "entry '%.300s' would be written "
				       "through the symlink '%.*s'",
				       name, (int)(c - name), name);
			ret = ERR_INVALID;
			break;
		}
	}
	buf_release(&p);
	return ret;
}

static int copy_data(struct archive *in, struct archive *out, const char *name,
		     int64_t *total, int64_t max, struct buf *err)
{
	const void *blk;
	size_t len;
	la_int64_t off;
	int r;

	for (;;) {
		r = archive_read_data_block(in, &blk, &len, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK) {
			(void)buf_addf(err, "cannot read entry '%.300s': %s",
				       name, archive_error_string(in));
			return ERR_INVALID;
		}
		*total += (int64_t)len;
		if (*total > max) {
			(void)buf_addf(err,
				       "archive holds more than %lld bytes "
				       "(at entry '%.300s')",
				       (long long)max, name);
			return ERR_TOOBIG;
		}
		if (archive_write_data_block(out, blk, len, off) !=
		    ARCHIVE_OK) {
			(void)buf_addf(err, "cannot write '%.300s': %s", name,
				       archive_error_string(out));
			return ERR_IO;
		}
	}
}

/* Bytes an unprivileged writer may still use in dir's filesystem. */
static int64_t free_bytes(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv))
		return INT64_MAX;
	return (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
}

/* Checks one header and rewrites its names under root. */
static int check_entry(struct archive_entry *e, const char *root,
		       const struct buf *name, int64_t total, int64_t max,
		       struct buf *err)
{
	const char *raw = archive_entry_pathname(e);
	const char *hl = archive_entry_hardlink(e);
	const char *sl = archive_entry_symlink(e);
	mode_t type = archive_entry_filetype(e);
	struct buf full = BUF_INIT, target = BUF_INIT;
	int ret = 0;

	if (hl) {
		struct buf why = BUF_INIT;

		ret = clean_name(hl, &target, &why);
		if (ret || !target.len) {
			(void)buf_addf(err,
				       "hard link '%.300s' -> '%.300s' points "
				       "outside the folder",
				       raw, hl);
			ret = ERR_INVALID;
		}
		buf_release(&why);
		if (ret)
			goto out;
		ret = no_symlink_on_path(root, target.data, err);
		if (ret)
			goto out;
		buf_reset(&full);
		stor_fs_path(&full, root, target.data);
		archive_entry_copy_hardlink(e, full.data);
	} else if (type == AE_IFLNK) {
		if (!sl || !link_stays_inside(name->data, sl)) {
			(void)buf_addf(err,
				       "symlink '%.300s' -> '%.300s' points "
				       "outside the folder",
				       raw, sl ? sl : "");
			ret = ERR_INVALID;
			goto out;
		}
	} else if (type != AE_IFREG && type != AE_IFDIR) {
		(void)buf_addf(
			err, "entry '%.300s' is a device, fifo or socket", raw);
		ret = ERR_INVALID;
		goto out;
	}
	if (archive_entry_size_is_set(e) &&
	    archive_entry_size(e) > max - total) {
		(void)buf_addf(err,
			       "entry '%.300s' claims %lld bytes, over the "
			       "archive limit of %lld bytes",
			       raw, (long long)archive_entry_size(e),
			       (long long)max);
		ret = ERR_TOOBIG;
		goto out;
	}
	if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0 &&
	    archive_entry_size(e) > free_bytes(root)) {
		(void)buf_addf(err,
			       "entry '%.300s' claims %lld bytes, more than "
			       "the %lld bytes free in '%s'",
			       raw, (long long)archive_entry_size(e),
			       (long long)free_bytes(root), root);
		ret = ERR_TOOBIG;
		goto out;
	}
	ret = no_symlink_on_path(root, name->data, err);
	if (ret)
		goto out;
	buf_reset(&full);
	stor_fs_path(&full, root, name->data);
	archive_entry_copy_pathname(e, full.data);
	/* No set-id bits, no foreign owners. */
	archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
out:
	buf_release(&full);
	buf_release(&target);
	return ret;
}

int stor_archive_unpack(const char *archive_path, const char *dir,
			const struct stor_unpack_limits *lim, struct buf *err)
{
	struct archive *in = archive_read_new();
	struct archive *out = archive_write_disk_new();
	struct archive_entry *e;
	struct buf name = BUF_INIT, msg = BUF_INIT;
	int64_t max_bytes = lim && lim->max_bytes > 0 ? lim->max_bytes :
							STOR_UNPACK_MAX_BYTES;
	int64_t max_entries = lim && lim->max_entries > 0 ?
				      lim->max_entries :
				      STOR_UNPACK_MAX_ENTRIES;
	int64_t total = 0, entries = 0;
	char *root = NULL;
	int r, ret;

	ret = stor_fs_mkdirs(dir, err);
	if (ret)
		goto out;
	/* libarchive's symlink check walks the whole path: resolve it. */
	root = realpath(dir, NULL);
	if (!root) {
		(void)buf_addf(err, "cannot resolve '%s': %s", dir,
			       strerror(errno));
		ret = ERR_IO;
		goto out;
	}
	archive_read_support_filter_all(in);
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_write_disk_set_options(
		out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
			     ARCHIVE_EXTRACT_SECURE_NODOTDOT |
			     ARCHIVE_EXTRACT_UNLINK);
	if (archive_read_open_filename(in, archive_path, ARCHIVE_BLOCK) !=
	    ARCHIVE_OK) {
		(void)buf_addf(err, "cannot open archive '%s': %s",
			       archive_path, archive_error_string(in));
		ret = ERR_INVALID;
		goto out;
	}
	for (;;) {
		r = archive_read_next_header(in, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			(void)buf_addf(&msg, "%s", archive_error_string(in));
			ret = ERR_INVALID;
			break;
		}
		if (++entries > max_entries) {
			(void)buf_addf(&msg, "more than %lld entries",
				       (long long)max_entries);
			ret = ERR_TOOBIG;
			break;
		}
		buf_reset(&name);
		ret = clean_name(archive_entry_pathname(e), &name, &msg);
		if (ret)
			break;
		if (!name.len)
			continue; /* "./" itself */
		ret = check_entry(e, root, &name, total, max_bytes, &msg);
		if (ret)
			break;
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			(void)buf_addf(&msg, "cannot extract '%.300s': %s",
				       name.data, archive_error_string(out));
			ret = ERR_INVALID;
			break;
		}
		if (archive_entry_size(e) > 0) {
			ret = copy_data(in, out, name.data, &total, max_bytes,
					&msg);
			if (ret)
				break;
		}
		if (archive_write_finish_entry(out) != ARCHIVE_OK) {
			(void)buf_addf(&msg, "cannot finish '%.300s': %s",
				       name.data, archive_error_string(out));
			ret = ERR_IO;
			break;
		}
	}
	if (ret)
		(void)buf_addf(err, "refusing archive '%s': %s", archive_path,
			       msg.data);
out:
	archive_read_free(in);
	archive_write_free(out);
	free(root);
	buf_release(&name);
	buf_release(&msg);
	return ret;
}
