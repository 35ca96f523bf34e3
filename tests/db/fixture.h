#ifndef TESTS_DB_FIXTURE_H
#define TESTS_DB_FIXTURE_H

/*
 * What the store's unit tests share: a fresh database in its own
 * temporary directory per test (cmocka setup/teardown), and a job row as
 * controller/ops.c would insert it. Included by one test file each.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "common/buf.h"

#define T0 1700000000000LL /* an epoch-ms base for creation times */

struct fixture {
	char dir[256];
	char path[PATH_MAX];
	struct db *db;
};

static inline void remove_tree(const char *dir)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct buf err = BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	int ret;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/tctl-db-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/trainctl.db", f->dir);
	ret = db_open(f->path, 2, &f->db, &err);
	if (ret)
		fprintf(stderr, "db_open: %s\n", err.data);
	buf_release(&err);
	*state = f;
	return ret ? -1 : 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;

	db_close(f->db);
	remove_tree(f->dir);
	free(f);
	return 0;
}

/* A job as ops.c would insert it; strings point into static storage. */
static inline struct db_job make_job(const char *name, const char *status,
				     const char *secondary, int64_t creation_ms)
{
	struct db_job j;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/x";
	j.status = (char *)status;
	j.secondary_status = (char *)secondary;
	j.request_json = (char *)"{\"RoleArn\":\"r\"}";
	j.instance_type = (char *)"ml.m5.xlarge";
	j.instance_count = 2;
	j.creation_ms = creation_ms;
	return j;
}

static inline void get(struct db *db, const char *name, struct db_job *out)
{
	struct buf err = BUF_INIT;
	int ret = db_job_get(db, name, out, &err);

	if (ret)
		fprintf(stderr, "get %s: %s\n", name, err.data);
	assert_int_equal(ret, 0);
	buf_release(&err);
}

#endif
