#ifndef STORAGE_FS_H
#define STORAGE_FS_H

/*
 * Folder primitives behind the file:// backend and the embedded store,
 * public so that the controller's blob endpoint (storage/s3d/blob.c)
 * writes the store exactly as the local backend does.
 */
#include <stdint.h>

#include "common/buf.h"
#include "storage/storage.h"

/*
 * Joins root and a key already checked with stor_key_check() into out
 * ("root/key"). Never fails.
 */
void stor_fs_path(struct buf *out, const char *root, const char *key);

/*
 * Creates dir and its parents (mode 0755). A component that exists but is
 * not a folder, or is a symlink, is refused (ERR_CONFLICT). Returns 0,
 * ERR_CONFLICT or ERR_IO.
 */
int stor_fs_mkdirs(const char *dir, struct buf *err);

/*
 * Opens a new temp file beside path (creating path's folder): *fd gets
 * the descriptor, tmp the temp file's path. Returns 0 or ERR_IO /
 * ERR_CONFLICT; on failure nothing is left behind.
 */
int stor_fs_tmp_open(const char *path, int *fd, struct buf *tmp,
		     struct buf *err);

/*
 * Makes the temp file the file path: fsync (when do_fsync), close,
 * rename over path, fsync of the folder. Always closes fd; on failure the
 * temp file is removed and path is untouched. Returns 0 or ERR_IO /
 * ERR_CONFLICT (path is a folder).
 */
int stor_fs_tmp_commit(int fd, const char *tmp, const char *path, int do_fsync,
		       struct buf *err);

/* Closes fd and removes tmp; for failure paths. */
void stor_fs_tmp_abort(int fd, const char *tmp);

/*
 * Copies in (from its current offset, to its end) to out: copy_file_range
 * where the kernel can, read/write with a large buffer where not.
 * *copied receives the byte count. Returns 0 or ERR_IO.
 */
int stor_fs_copy_fd(int in, int out, int64_t *copied, struct buf *err);

/*
 * Lists the objects under root whose key starts with prefix (S3
 * semantics: "a/b" matches "a/b", "a/bc" and "a/b/c"), sorted, skipping
 * temp files. With file_semantics a prefix naming a file lists just it
 * and one naming a folder lists only that folder's tree. out must be
 * empty; the caller releases it.
 */
int stor_fs_list(const char *root, const char *prefix, int file_semantics,
		 struct stor_list *out, struct buf *err);

/*
 * Removes root/key; with prune also its parent folders up to root while
 * they are empty (the embedded store has no folders of its own; a
 * file:// tree keeps its folders). Missing is not an error.
 */
int stor_fs_delete(const char *root, const char *key, int prune,
		   struct buf *err);

/*
 * Removes the temp files under root that a killed writer left (named
 * STOR_TMP_PREFIX..., last changed at least min_age_s ago), and the
 * folders below root's children that this leaves empty: an object store
 * has no empty folders. Returns how many temp files went.
 */
size_t stor_fs_sweep_tmp(const char *root, int64_t min_age_s);

#endif
