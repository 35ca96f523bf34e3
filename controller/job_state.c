#define LOG_TAG "ctrl"

#include <string.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/job_state.h"
#include "db/db.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/banned.h"

static const struct {
	const char *primary;
	const char *secondary;
} names[CTRL_JOB_NSTATES] = {
	[CTRL_JOB_STARTING] = { "InProgress", "Starting" },
	[CTRL_JOB_PENDING] = { "InProgress", "Pending" },
	[CTRL_JOB_DOWNLOADING] = { "InProgress", "Downloading" },
	[CTRL_JOB_TRAINING] = { "InProgress", "Training" },
	[CTRL_JOB_UPLOADING] = { "InProgress", "Uploading" },
	[CTRL_JOB_RESTARTING] = { "InProgress", "Restarting" },
	[CTRL_JOB_INTERRUPTED] = { "InProgress", "Interrupted" },
	[CTRL_JOB_STOPPING] = { "Stopping", "Stopping" },
	[CTRL_JOB_STOPPED] = { "Stopped", "Stopped" },
	[CTRL_JOB_MAX_RUNTIME] = { "Stopped", "MaxRuntimeExceeded" },
	[CTRL_JOB_MAX_WAIT] = { "Stopped", "MaxWaitTimeExceeded" },
	[CTRL_JOB_COMPLETED] = { "Completed", "Completed" },
	[CTRL_JOB_FAILED] = { "Failed", "Failed" },
};

#define B(s) (1u << (s))
/* allowed[from] is the set of states a job may move to from `from`. */
static const unsigned allowed[CTRL_JOB_NSTATES] = {
	[CTRL_JOB_STARTING] = B(CTRL_JOB_PENDING) | B(CTRL_JOB_DOWNLOADING) |
			      B(CTRL_JOB_TRAINING) | B(CTRL_JOB_RESTARTING) |
			      B(CTRL_JOB_INTERRUPTED) | B(CTRL_JOB_STOPPING) |
			      B(CTRL_JOB_FAILED),
	[CTRL_JOB_PENDING] = B(CTRL_JOB_STARTING) | B(CTRL_JOB_STOPPING) |
			     B(CTRL_JOB_FAILED),
	[CTRL_JOB_DOWNLOADING] = B(CTRL_JOB_TRAINING) | B(CTRL_JOB_RESTARTING) |
				 B(CTRL_JOB_INTERRUPTED) | B(CTRL_JOB_STOPPING) |
				 B(CTRL_JOB_FAILED),
	[CTRL_JOB_TRAINING] = B(CTRL_JOB_UPLOADING) | B(CTRL_JOB_RESTARTING) |
			      B(CTRL_JOB_INTERRUPTED) | B(CTRL_JOB_STOPPING) |
			      B(CTRL_JOB_FAILED),
	[CTRL_JOB_UPLOADING] = B(CTRL_JOB_COMPLETED) | B(CTRL_JOB_RESTARTING) |
			       B(CTRL_JOB_STOPPING) | B(CTRL_JOB_FAILED),
	[CTRL_JOB_RESTARTING] = B(CTRL_JOB_STARTING) | B(CTRL_JOB_STOPPING) |
				B(CTRL_JOB_FAILED),
	[CTRL_JOB_INTERRUPTED] = B(CTRL_JOB_STARTING) | B(CTRL_JOB_STOPPING) |
				 B(CTRL_JOB_FAILED),
	[CTRL_JOB_STOPPING] = B(CTRL_JOB_STOPPED) | B(CTRL_JOB_MAX_RUNTIME) |
			      B(CTRL_JOB_MAX_WAIT) | B(CTRL_JOB_FAILED),
};
#undef B

const char *ctrl_job_state_secondary(enum ctrl_job_state s)
{
	return (unsigned)s < CTRL_JOB_NSTATES ? names[s].secondary : "Unknown";
}

const char *ctrl_job_state_primary(enum ctrl_job_state s)
{
	return (unsigned)s < CTRL_JOB_NSTATES ? names[s].primary : "Unknown";
}

int ctrl_job_state_parse(const char *secondary, enum ctrl_job_state *out)
{
	int i;

	for (i = 0; i < CTRL_JOB_NSTATES; i++) {
		if (!strcmp(names[i].secondary, secondary)) {
			*out = (enum ctrl_job_state)i;
			return 0;
		}
	}
	return ERR_INVALID;
}

int ctrl_job_transition_allowed(enum ctrl_job_state from,
				enum ctrl_job_state to)
{
	if ((unsigned)from >= CTRL_JOB_NSTATES ||
	    (unsigned)to >= CTRL_JOB_NSTATES)
		return 0;
	return (allowed[from] >> to) & 1u;
}

int ctrl_job_state_terminal(enum ctrl_job_state s)
{
	return s == CTRL_JOB_STOPPED || s == CTRL_JOB_MAX_RUNTIME ||
	       s == CTRL_JOB_MAX_WAIT || s == CTRL_JOB_COMPLETED ||
	       s == CTRL_JOB_FAILED;
}

int ctrl_job_status_terminal(const char *status)
{
	int s;

	for (s = 0; status && s < CTRL_JOB_NSTATES; s++)
		if (ctrl_job_state_terminal((enum ctrl_job_state)s) &&
		    !strcmp(ctrl_job_state_primary((enum ctrl_job_state)s),
			    status))
			return 1;
	return 0;
}

/* The one writer of a job's state; model is stored when not NULL. */
static int transition(struct ctrl_ctx *ctx, const char *name,
		      enum ctrl_job_state from, enum ctrl_job_state to,
		      const char *message, const char *failure_reason,
		      const char *model, struct buf *err)
{
	struct db_state_change ch = { 0 };
	const char *why = failure_reason ? failure_reason : message;
	int ret;

	if (!ctrl_job_transition_allowed(from, to)) {
		(void)buf_addf(err, "job '%s' cannot move from %s to %s", name,
			       ctrl_job_state_secondary(from),
			       ctrl_job_state_secondary(to));
		return ERR_CONFLICT;
	}
	ch.expect_status = ctrl_job_state_primary(from);
	ch.expect_secondary = ctrl_job_state_secondary(from);
	ch.status = ctrl_job_state_primary(to);
	ch.secondary = ctrl_job_state_secondary(to);
	ch.message = message;
	ch.failure_reason = failure_reason;
	ch.model_artifacts = model;
	ch.now_ms = time_now_ms();
	ch.set_start = to == CTRL_JOB_DOWNLOADING || to == CTRL_JOB_TRAINING;
	ch.set_end = ctrl_job_state_terminal(to);
	ret = db_job_change_state(ctx->db, name, &ch, err);
	if (ret)
		return ret;
	ctrl_jobs_changed(ctx);
	log_info("job '%s' %s -> %s%s%s", name, ctrl_job_state_secondary(from),
		 ctrl_job_state_secondary(to), why ? ": " : "", why ? why : "");
	return 0;
}

int ctrl_job_transition(struct ctrl_ctx *ctx, const char *name,
			enum ctrl_job_state from, enum ctrl_job_state to,
			const char *message, const char *failure_reason,
			struct buf *err)
{
	return transition(ctx, name, from, to, message, failure_reason, NULL,
			  err);
}

int ctrl_job_end(struct ctrl_ctx *ctx, const char *name,
		 enum ctrl_job_state from, enum ctrl_job_state to,
		 const char *message, const char *failure_reason,
		 const char *model, struct buf *err)
{
	if (!ctrl_job_state_terminal(to)) {
		(void)buf_addf(err, "job '%s': %s is not an end", name,
			       ctrl_job_state_secondary(to));
		return ERR_INVALID;
	}
	return transition(ctx, name, from, to, message, failure_reason, model,
			  err);
}

int ctrl_failure_internal(const char *reason)
{
	static const char prefix[] = "InternalServerError";

	return reason && !strncmp(reason, prefix, sizeof(prefix) - 1);
}
