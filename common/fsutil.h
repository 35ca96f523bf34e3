#ifndef COMMON_FSUTIL_H
#define COMMON_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"

/*
 * mkdir -p: creates dir and every missing folder above it, each with mode
 * exactly (whatever the process's umask), and checks that each part that
 * exists is a folder (or a link to one). Returns 0, ERR_IO (err says which part and why) or
 * ERR_CONFLICT (a part exists and is not a folder). err may be NULL.
 */
int fs_mkdir_p(const char *dir, mode_t mode, struct buf *err);

/* Writes all of data to fd, again after EINTR or a short write: 0, or -1
 * when write(2) fails or writes nothing. Only write(2) is called: safe in
 * a child between fork and exec. */
int fs_write_all(int fd, const void *data, size_t len);

/* fs_write_atomic(): fsync the data before the rename. */
#define FS_WRITE_SYNC 1

/*
 * Writes data to path as a whole or not at all: to "<path>.tmp" (a link
 * there is not followed), then renamed over path, so that a reader or a
 * crash of this process never sees half of it. With FS_WRITE_SYNC the data
 * is on disk before the rename, so a crash of the machine cannot leave an
 * empty file either. The file gets mode, less the umask. Returns 0 or ERR_IO (err, when
 * not NULL, says why).
 */
int fs_write_atomic(const char *path, const void *data, size_t len,
		    mode_t mode, int flags, struct buf *err);

/*
 * rm -rf of dir: every file and folder in it, deepest first, and dir
 * itself. A symlink is removed, never followed, and the walk stays on
 * dir's file system. Returns 0 (also when dir is missing) or ERR_IO when
 * the walk itself fails; what cannot be removed is left.
 */
int fs_remove_tree(const char *dir);

/*
 * path (absolute) with its longest existing prefix resolved by realpath()
 * and the rest appended as written. NULL when a prefix cannot be resolved
 * for another reason than its absence. The caller frees it.
 */
char *fs_resolve_existing(const char *path);

/*
 * Whether path (absolute) lies at or under one of the n folders roots
 * (absolute, resolved; "" or "/" stands for every path) once its existing
 * part is resolved (fs_resolve_existing()): a symbolic link that leads
 * out of every root is out.
 */
int fs_path_under(const char *path, char *const *roots, size_t n);

#endif
