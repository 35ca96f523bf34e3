#ifndef CTRL_FILES_H
#define CTRL_FILES_H

/* Small file helpers the controller's parts share. */
#include <stddef.h>

#include "common/buf.h"

struct ctrl_ctx;

/*
 * Appends the file at path to out, at most max bytes. Returns 0, ERR_IO or
 * ERR_TOOBIG with err naming the file.
 */
int ctrl_read_file(const char *path, size_t max, struct buf *out,
		   struct buf *err);

/* The first line of a small file (a token, a pid), or NULL. Caller frees. */
char *ctrl_read_line(const char *path);

/* Writes text to path atomically (temp, fsync, rename), mode 0600. */
int ctrl_write_small(const char *path, const char *text);

/*
 * The secret stored under name in the store (db/secrets.h): n random
 * bytes as hex, made and stored when there is none, or taken over from
 * the file legacy (may be NULL) where an older controller kept it.
 * *existed says whether it was there before. NULL (logged) when the store
 * fails. Caller frees.
 */
char *ctrl_secret(struct ctrl_ctx *ctx, const char *name, const char *legacy,
		  size_t n, int *existed);

/*
 * The agent token of host name, kept in the store so that it survives a
 * controller restart and a change of leader (agents left running keep
 * working). A new random token is made and stored when there is none;
 * *existed says which. Caller frees.
 */
char *ctrl_host_token(struct ctrl_ctx *ctx, const char *name, int *existed);

/*
 * Whether a job may name path (absolute, from a file:// URI) under the
 * operator's --allow-file-root folders. The part of path that exists is
 * resolved (a symlink inside a root that points out of it is outside), the
 * rest taken as written. Returns 0, or ERR_INVALID with err saying why.
 */
int ctrl_file_path_allowed(const struct ctrl_ctx *ctx, const char *path,
			   struct buf *err);

#endif
