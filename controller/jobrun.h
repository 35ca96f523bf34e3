#ifndef CTRL_JOBRUN_H
#define CTRL_JOBRUN_H

/*
 * The job half of the reconciler: places waiting jobs on free hosts,
 * follows each attempt through the agents' reports, and ends it (Completed,
 * Failed, Stopped, MaxRuntimeExceeded), collecting the model.
 */
struct ctrl_ctx;
struct db_job;
struct db_assignment;

struct buf;

/*
 * One pass. full: every active job and the queue. Else only the jobs
 * named (those whose facts changed), and the queue when the last pass
 * freed hosts; time-based checks (MaxRuntimeInSeconds, waits for a spare)
 * come with the full passes the reconciler makes at least every
 * CTRL_FULL_PASS_MS.
 */
void ctrl_jobs_reconcile(struct ctrl_ctx *ctx, char *const *names,
			 size_t n_names, int full);

#define CTRL_FULL_PASS_MS 1000

/* Sets every host's action of job's attempt (as[0..n)): "stop",
 * "abort" or "run"; the hosts are told at once. */
void ctrl_job_set_actions(struct ctrl_ctx *ctx, const struct db_job *job,
			  const struct db_assignment *as, size_t n,
			  const char *action);

/*
 * Preempts job name's running attempt to free its hosts for another job:
 * Interrupted, its ranks stopped as a Stop does (SIGTERM, the grace
 * period, a last checkpoint sync); once they settled the job waits in
 * the queue again and, placed, resumes from that checkpoint. A preempted
 * attempt spends no retry. why goes into the transition's message.
 * Returns 0, ERR_INVALID (not running: queued, uploading, ending; err
 * says so), ERR_CONFLICT (its state changed meanwhile), ERR_NOTFOUND or
 * ERR_DB.
 */
int ctrl_job_preempt(struct ctrl_ctx *ctx, const char *name, const char *why,
		     struct buf *err);

/*
 * Starts queued job name on hosts[0..n), the scheduler's choice, when
 * they are all still free (else it stays queued, saying which host was
 * taken); a job whose image cannot run fails as it starts.
 */
void ctrl_job_place(struct ctrl_ctx *ctx, const char *name,
		    const char *const *hosts, size_t n, int *busy_valid);


#endif
