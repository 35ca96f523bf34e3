/*
 * Tests controller/jobrt.c on a real store: a runtime is loaded from the
 * store once and then found (through a table that grows past its first
 * buckets), carries the parsed distribution, is dropped and loaded again;
 * a create's put keeps its spec, is not replaced by a load of the same
 * job, and replaces a runtime of an earlier job of the same name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/distribution.h"
#include "api/job_spec.h"
#include "controller/ctrl.h"
#include "controller/jobrt.h"
#include "db/db.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"

#define REQUEST                                                               \
	"{\"TrainingJobName\":\"%s\","                                        \
	"\"AlgorithmSpecification\":{\"TrainingImage\":\"file:///bin/true\"," \
	"\"TrainingInputMode\":\"File\",\"MetricDefinitions\":[{\"Name\":"    \
	"\"loss\",\"Regex\":\"loss=([0-9.]+)\"}]},"                           \
	"\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","                   \
	"\"HyperParameters\":{\"sagemaker_distributed_dataparallel_"          \
	"enabled\":\"false\",\"sagemaker_mpi_enabled\":\"%s\"},"              \
	"\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/o\"},"               \
	"\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\","               \
	"\"InstanceCount\":%d,\"VolumeSizeInGB\":1},"                         \
	"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":60}}"

struct fixture {
	char dir[256];
	struct ctrl_ctx ctx;
};

static void request(struct buf *b, const char *name, int mpi, int count)
{
	buf_reset(b);
	assert_int_equal(
		buf_addf(b, REQUEST, name, mpi ? "true" : "false", count), 0);
}

/* Stores job name; its uid in *uid when uid is not NULL. */
static void insert_job(struct fixture *f, const char *name, int mpi, int count,
		       char **uid)
{
	struct buf err = BUF_INIT;
	struct buf body = BUF_INIT;
	struct db_job j;

	request(&body, name, mpi, count);
	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:0:training-job/x";
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Starting";
	j.request_json = body.data;
	j.spec_json = body.data;
	j.instance_count = count;
	j.creation_ms = time_now_ms();
	assert_int_equal(
		db_job_insert_uid(f->ctx.db, &j, "Starting", uid, &err), 0);
	buf_release(&body);
	buf_release(&err);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct buf err = BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];

	log_set_level(LOG_ERROR);
	snprintf(f->dir, sizeof(f->dir), "%s/tctl-jobrt-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	ctrl_ctx_init(&f->ctx);
	snprintf(path, sizeof(path), "%s/trainctl.db", f->dir);
	assert_int_equal(db_open(path, 1, &f->ctx.db, &err), 0);
	buf_release(&err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char p[PATH_MAX];
	const char *const files[] = { "trainctl.db", "trainctl.db-wal",
				      "trainctl.db-shm" };
	size_t i;

	db_close(f->ctx.db);
	f->ctx.db = NULL;
	ctrl_ctx_release(&f->ctx);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, files[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct ctrl_jobrt *get(struct fixture *f, const char *name)
{
	struct ctrl_jobrt *rt;

	pthread_mutex_lock(&f->ctx.jobs_lock);
	rt = ctrl_jobrt_get(&f->ctx, name);
	pthread_mutex_unlock(&f->ctx.jobs_lock);
	return rt;
}

static struct ctrl_jobrt *find(struct fixture *f, const char *name)
{
	struct ctrl_jobrt *rt;

	pthread_mutex_lock(&f->ctx.jobs_lock);
	rt = ctrl_jobrt_find(&f->ctx, name);
	pthread_mutex_unlock(&f->ctx.jobs_lock);
	return rt;
}

static void test_load_find_drop(void **state)
{
	struct fixture *f = *state;
	const struct api_distribution *d;
	struct ctrl_jobrt *rt;
	struct buf err = BUF_INIT;
	char name[32];
	char *uid = NULL;
	int i;

	assert_null(find(f, "job-0"));
	assert_null(get(f, "no-such-job"));
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "job-%d", i);
		insert_job(f, name, i % 2, 1 + i % 3, i ? NULL : &uid);
		assert_non_null(get(f, name));
	}
	assert_int_equal(ctrl_jobrt_count(&f->ctx), 200);
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "job-%d", i);
		rt = find(f, name);
		assert_non_null(rt);
		assert_ptr_equal(get(f, name), rt);
		assert_string_equal(rt->name, name);
		assert_int_equal(rt->spec.instance_count, 1 + i % 3);
		assert_int_equal(rt->metrics->n, 1);
		assert_int_equal(ctrl_jobrt_dist(rt, &d, &err), 0);
		assert_int_equal(d->mode == API_DIST_MPI, i % 2);
	}
	rt = find(f, "job-0");
	assert_non_null(uid);
	assert_string_equal(rt->uid, uid);
	ctrl_jobrt_drop(&f->ctx, "job-7");
	assert_null(find(f, "job-7"));
	assert_int_equal(ctrl_jobrt_count(&f->ctx), 199);
	rt = get(f, "job-7");
	assert_non_null(rt);
	assert_int_equal(rt->spec.instance_count, 1 + 7 % 3);
	ctrl_jobrt_drop(&f->ctx, "never-loaded");
	assert_int_equal(ctrl_jobrt_count(&f->ctx), 200);
	free(uid);
	buf_release(&err);
}

/* The spec and distribution of job name as a create parses them. */
static void parsed(const char *name, int mpi, struct api_job_spec *spec,
		   struct api_distribution *dist)
{
	struct buf body = BUF_INIT;
	struct buf err = BUF_INIT;

	request(&body, name, mpi, 2);
	assert_int_equal(api_job_spec_parse(body.data, body.len, spec, &err),
			 0);
	assert_int_equal(api_distribution_parse(spec, dist, &err), 0);
	buf_release(&body);
	buf_release(&err);
}

static void test_put(void **state)
{
	struct fixture *f = *state;
	struct api_job_spec spec;
	struct api_distribution dist;
	struct ctrl_jobrt *rt;
	struct db_job j;
	char *uid = NULL;

	insert_job(f, "job-p", 1, 2, &uid);
	memset(&j, 0, sizeof(j));
	j.name = (char *)"job-p";
	j.uid = uid;
	j.owner = (char *)"alice";
	parsed("job-p", 1, &spec, &dist);
	ctrl_jobrt_put(&f->ctx, &j, &spec, &dist);
	/* Taken: the caller is left nothing to free. */
	assert_null(spec.name);
	assert_null(spec.metrics);
	rt = find(f, "job-p");
	assert_non_null(rt);
	assert_string_equal(rt->uid, uid);
	assert_string_equal(rt->owner, "alice");
	assert_int_equal(rt->dist.mode, API_DIST_MPI);
	assert_null(rt->dist_err);
	assert_ptr_equal(get(f, "job-p"), rt);

	/* The same job again (a load that won the race): the first stays. */
	parsed("job-p", 1, &spec, &dist);
	ctrl_jobrt_put(&f->ctx, &j, &spec, &dist);
	assert_ptr_equal(find(f, "job-p"), rt);
	assert_int_equal(ctrl_jobrt_count(&f->ctx), 1);

	/* An earlier job of the same name (another uid) is replaced. */
	j.uid = (char *)"another";
	parsed("job-p", 0, &spec, &dist);
	ctrl_jobrt_put(&f->ctx, &j, &spec, &dist);
	rt = find(f, "job-p");
	assert_string_equal(rt->uid, "another");
	assert_int_not_equal(rt->dist.mode, API_DIST_MPI);
	assert_int_equal(ctrl_jobrt_count(&f->ctx), 1);
	free(uid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load_find_drop, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_put, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
