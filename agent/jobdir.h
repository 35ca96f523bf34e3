#ifndef AGENT_JOBDIR_H
#define AGENT_JOBDIR_H

/* Job folders and their state.json (agent/jobdir.c). */
#include "api/agent_proto.h"
#include "common/buf.h"

struct agent_ident;

/* <work>/jobs/<job>[.<uid>]/<attempt>/<algo> */
int agent_jobdir_path(const char *work_dir, const char *job, const char *uid,
		      int attempt, const char *algo, struct buf *out,
		      struct buf *err);
/* Makes the /opt/ml tree; with id set, gives the job's part of it to id. */
int agent_jobdir_create(const char *dir, const struct api_assignment *spec,
			const struct agent_ident *id, struct buf *err);
/* <dir>/.trainagent/scratch/<name>: archives the job's workers make. */
char *agent_jobdir_scratch(const char *dir, const char *name);
/* Writes st (one assignment's report) to <dir>/state.json. */
int agent_jobdir_save_state(const char *dir, const struct api_status *st,
			    struct buf *err);
char *agent_jobdir_read_failure(const char *dir);
int agent_jobdir_remove(const char *work_dir, const char *dir);
/* --keep-jobs: renames state.json so the next agent does not adopt it. */
void agent_jobdir_retire(const char *dir);
/* Calls fn(data, ...) with the state.json of every job folder. */
typedef void agent_state_fn(void *data, const char *dir,
			    const struct api_report *r);
void agent_jobdir_scan(const char *work_dir, agent_state_fn *fn, void *data);
/*
 * <dir>/.trainagent/rank<N>.<stream>: a rank's named pipe ("stdout",
 * "stderr") or its keeper's exit file ("exit"), as a new string.
 */
char *agent_fifo_path(const char *dir, int rank, const char *stream);
/* The host path of the checkpoint folder (mapped from /opt/ml/...). */
char *agent_jobdir_checkpoint_path(const char *dir, const char *local_path);

/* 1 when the channel's input mode (as the controller resolved it) is Pipe. */
int agent_channel_is_pipe(const struct api_channel *c);

#endif
