#ifndef TESTS_CONTROLLER_CTX_FIXTURE_H
#define TESTS_CONTROLLER_CTX_FIXTURE_H

/*
 * What the controller's unit tests share: a controller context on a fresh
 * store in a temporary folder of its own, and its end. Included by one
 * test file each (after cmocka.h).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctrl.h"
#include "db/db.h"
#include "common/buf.h"
#include "common/log.h"

/*
 * Makes dir (dir_len bytes) a new folder $TMPDIR/tctl-<tag>-XXXXXX and
 * opens ctx (initialized) on a store in it. Returns 0, or -1 when the
 * folder cannot be made (ctx untouched) or the store cannot be opened.
 */
static inline int ctx_fixture_open(struct ctrl_ctx *ctx, char *dir,
				   size_t dir_len, const char *tag)
{
	struct buf err = BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	int ret;

	log_set_level(LOG_ERROR);
	snprintf(dir, dir_len, "%s/tctl-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
		 tag);
	if (!mkdtemp(dir))
		return -1;
	ctrl_ctx_init(ctx);
	snprintf(path, sizeof(path), "%s/trainctl.db", dir);
	ret = db_open(path, 1, &ctx->db, &err);
	if (ret)
		fprintf(stderr, "db_open: %s\n", err.data);
	buf_release(&err);
	return ret ? -1 : 0;
}

/* Closes the store, releases ctx and removes dir with its files. */
static inline void ctx_fixture_close(struct ctrl_ctx *ctx, const char *dir)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d;

	db_close(ctx->db);
	ctx->db = NULL;
	ctrl_ctx_release(ctx);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

#endif
