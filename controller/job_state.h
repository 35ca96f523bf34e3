#ifndef CTRL_JOB_STATE_H
#define CTRL_JOB_STATE_H

#include <stdint.h>

#include "common/buf.h"

struct ctrl_ctx;

/*
 * A job's state: SageMaker's SecondaryStatus, each of which implies one
 * TrainingJobStatus (contract section 3). ctrl_job_transition() is the only
 * writer.
 */
enum ctrl_job_state {
	CTRL_JOB_STARTING = 0, /* InProgress: accepted, waiting for hosts */
	CTRL_JOB_PENDING,      /* InProgress: waiting for capacity */
	CTRL_JOB_DOWNLOADING,  /* InProgress: staging input channels */
	CTRL_JOB_TRAINING,     /* InProgress: processes running */
	CTRL_JOB_UPLOADING,    /* InProgress: packing and uploading the model */
	CTRL_JOB_RESTARTING,   /* InProgress: an attempt failed, retrying */
	CTRL_JOB_INTERRUPTED,  /* InProgress: preempted, ranks stopping */
	CTRL_JOB_STOPPING,     /* Stopping: stop or MaxRuntime, killing ranks */
	CTRL_JOB_STOPPED,      /* Stopped: by StopTrainingJob */
	CTRL_JOB_MAX_RUNTIME,  /* Stopped/MaxRuntimeExceeded */
	CTRL_JOB_MAX_WAIT,     /* Stopped/MaxWaitTimeExceeded */
	CTRL_JOB_COMPLETED,    /* Completed */
	CTRL_JOB_FAILED,       /* Failed */
	CTRL_JOB_NSTATES
};

/* SecondaryStatus text of s. */
const char *ctrl_job_state_secondary(enum ctrl_job_state s);

/* TrainingJobStatus text of s. */
const char *ctrl_job_state_primary(enum ctrl_job_state s);

/* Parses a SecondaryStatus text. Returns 0 or ERR_INVALID. */
int ctrl_job_state_parse(const char *secondary, enum ctrl_job_state *out);

/* Whether the table allows from -> to. */
int ctrl_job_transition_allowed(enum ctrl_job_state from,
				enum ctrl_job_state to);

/* Whether s is terminal (Completed, Failed, Stopped*). */
int ctrl_job_state_terminal(enum ctrl_job_state s);
/* Whether a TrainingJobStatus text is that of a terminal state. */
int ctrl_job_status_terminal(const char *status);

/*
 * Whether a failure reason names a fault of the service (it starts with
 * "InternalServerError"): the one failure SageMaker retries, and that
 * may recur in no attempt. NULL: no.
 */
int ctrl_failure_internal(const char *reason);

/*
 * Moves job name from state from to state to, recording a transition with
 * message and, when not NULL, the failure reason. Fails with ERR_CONFLICT
 * when the table forbids it or the job is no longer in from (another
 * writer was first); ERR_NOTFOUND; ERR_DB. Logs the change.
 */
int ctrl_job_transition(struct ctrl_ctx *ctx, const char *name,
			enum ctrl_job_state from, enum ctrl_job_state to,
			const char *message, const char *failure_reason,
			struct buf *err);

/*
 * As ctrl_job_transition() to a terminal state (ERR_INVALID for another),
 * also storing the job's model artifacts URI when model is not NULL.
 */
int ctrl_job_end(struct ctrl_ctx *ctx, const char *name,
		 enum ctrl_job_state from, enum ctrl_job_state to,
		 const char *message, const char *failure_reason,
		 const char *model, struct buf *err);

#endif
