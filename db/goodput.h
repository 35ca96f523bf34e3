#ifndef DB_GOODPUT_H
#define DB_GOODPUT_H

/*
 * What goodput accounting keeps (docs/goodput.md): per attempt of a job,
 * the progress its ranks reported (steps and checkpoint stalls, read
 * from their log lines), and the cluster's settled totals per category:
 * the splits of jobs that ended, added once each.
 */
#include <stddef.h>
#include <stdint.h>

#include "db/db.h"
#include "common/buf.h"

/* The progress of one batch of lines of one attempt, folded together. */
struct db_progress {
	int64_t first_ms; /* the earliest step report, 0: none */
	int64_t first_step;
	int64_t last_ms; /* the latest step report */
	int64_t max_step;
	int64_t max_ms; /* when max_step was first reported */
	/*
	 * The step reports in time order, so that the store finds when the
	 * attempt first went past the steps earlier attempts reached.
	 */
	const int64_t *steps;
	const int64_t *steps_ms;
	size_t n_steps;
	int64_t ckpt_ms; /* checkpoint stalls reported in the batch */
	/* The job's uid the lines carried (NULL: any), so that lines of an
	 * earlier job of the same name are not counted. */
	const char *job_uid;
};

/*
 * Adds p to the progress of attempt `attempt` of job. Returns 0 or ERR_DB
 * (an unknown job or attempt is no error: nothing is stored).
 */
int db_progress_add(struct db *db, const char *job, int attempt,
		    const struct db_progress *p, struct buf *err);

/* One attempt of a job with its progress (db_goodput_attempts()). */
struct db_goodput_attempt {
	int attempt;
	int64_t started_ms;
	int64_t ended_ms; /* 0: running */
	int planned;	  /* enum db_attempt_planned (db/run.h) */
	int64_t first_ms; /* first step report, 0: none */
	int64_t first_step;
	int64_t last_ms;
	int64_t max_step;
	/* When a step past every earlier attempt's max_step was first
	 * reported; 0: not yet. */
	int64_t passed_ms;
	int64_t ckpt_ms;
};

/*
 * The attempts of job in order into *out (free()), with their progress.
 * Returns 0, ERR_NOTFOUND or ERR_DB, with nothing to free.
 */
int db_goodput_attempts(struct db *db, const char *job,
			struct db_goodput_attempt **out, size_t *n,
			struct buf *err);

/*
 * When job was created, when it ended (0: it has not) and when its row
 * last changed (LastModifiedTime). Returns 0, ERR_NOTFOUND or ERR_DB.
 */
int db_goodput_times(struct db *db, const char *job, int64_t *created_ms,
		     int64_t *end_ms, int64_t *modified_ms, struct buf *err);

/*
 * The names of jobs that ended and were not settled yet, at most limit,
 * into *names (free each and the array). Returns 0 or ERR_DB.
 */
int db_goodput_unsettled(struct db *db, size_t limit, char ***names, size_t *n,
			 struct buf *err);

/*
 * Settles job: adds ms[i] to the total of category names[i] for i < n
 * and marks the job settled, in one transaction; a job settled already
 * adds nothing. Returns 0 or ERR_DB.
 */
int db_goodput_settle(struct db *db, const char *job, const char *const *names,
		      const int64_t *ms, size_t n, struct buf *err);

/*
 * The settled total of each category names[i] into ms[i] (0: none).
 * Returns 0 or ERR_DB.
 */
int db_goodput_totals(struct db *db, const char *const *names, int64_t *ms,
		      size_t n, struct buf *err);

/*
 * The names of the jobs that run an attempt now (InProgress or Stopping
 * with a started attempt), into *names (free each and the array), and the
 * summed age at now_ms of those still waiting for their first attempt in
 * *queued_ms. Returns 0 or ERR_DB.
 */
int db_goodput_live(struct db *db, int64_t now_ms, char ***names, size_t *n,
		    int64_t *queued_ms, struct buf *err);

#endif
