#ifndef DB_TELEMETRY_H
#define DB_TELEMETRY_H

/*
 * The telemetry store: hosts' samples and, per job and algo, the samples of
 * the hosts while they ran the job. It lives in its own SQLite file
 * (<state-dir>/telemetry.db) beside trainctl.db: samples arrive from every
 * host every few seconds, and writing them into the job store would
 * contend with its writer and end every cached DescribeTrainingJob answer
 * (those live until the job store's next commit). A crash may lose the
 * last samples; nothing else depends on them. Rows older than the
 * retention are pruned by time (an index on ts_ms makes that one range
 * delete).
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/tm_sample.h"

struct db_tm;

/* Opens (creating and migrating) the store at path. 0 or ERR_DB with err. */
int db_tm_open(const char *path, struct db_tm **out, struct buf *err);
void db_tm_close(struct db_tm *t);

/* The schema version this build migrates telemetry.db to. */
#define DB_TM_SCHEMA_LATEST 2

/*
 * Stores host's samples s[0..n) and, for each assignment in a sample's
 * ranks, a job row with the host's figures (a sample already stored for
 * that time is kept). Returns 0 or ERR_DB.
 */
int db_tm_add(struct db_tm *t, const char *host, const struct tm_host_sample *s,
	      size_t n, struct buf *err);

/*
 * host's samples with start_ms <= ts_ms < end_ms, oldest first, without
 * ranks. At most limit: when more match, the newest limit and *truncated
 * set. The caller releases each and frees *out (also after ERR_DB).
 */
int db_tm_host_range(struct db_tm *t, const char *host, int64_t start_ms,
		     int64_t end_ms, size_t limit, struct tm_host_sample **out,
		     size_t *n, int *truncated, struct buf *err);

/*
 * Every host with samples since since_ms, its newest sample's time and how
 * many it has since then (a replicated controller's catch-up,
 * controller/reptm.c). The caller frees each name and the arrays. 0 or
 * ERR_DB.
 */
int db_tm_hosts(struct db_tm *t, int64_t since_ms, char ***hosts,
		int64_t **newest_ms, int64_t **count, size_t *n,
		struct buf *err);

/* A job row: the host's figures and the job's processes on it. */
struct db_tm_point {
	int64_t ts_ms;
	double cores_percent; /* host: 0..100 x CPUs (CPUUtilization) */
	double mem_percent;
	double disk_percent;
	double gpu_percent;	/* 0..100 x GPUs */
	double gpu_mem_percent; /* 0..100 x GPUs */
	double cpu_percent;	/* the job's processes, of one core */
	int64_t rss_bytes;
	int attempt;
	int cpus; /* the host's; 0: not known (a row stored before) */
	char *host;
};

/* Frees p[0..n)'s hosts and p. */
void db_tm_points_free(struct db_tm_point *p, size_t n);

/*
 * The rows of (job, uid, algo) with start_ms <= ts_ms < end_ms, oldest
 * first, into *out (db_tm_points_free(), also after ERR_DB). uid NULL:
 * any.
 */
int db_tm_job_range(struct db_tm *t, const char *job, const char *uid,
		    const char *algo, int64_t start_ms, int64_t end_ms,
		    struct db_tm_point **out, size_t *n, struct buf *err);

/*
 * The algos of (job, uid) that have rows, sorted, with each one's newest
 * row time in last_ms[i]. The caller frees each name and both arrays.
 */
int db_tm_job_algos(struct db_tm *t, const char *job, const char *uid,
		    char ***algos, int64_t **last_ms, size_t *n,
		    struct buf *err);

/*
 * Deletes host samples older than host_before_ms and job rows older than
 * job_before_ms. Returns the number of rows deleted, or ERR_DB.
 */
int db_tm_prune(struct db_tm *t, int64_t host_before_ms, int64_t job_before_ms,
		struct buf *err);

#endif
