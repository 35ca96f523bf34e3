#ifndef AGENT_PIPE_H
#define AGENT_PIPE_H

/* Channels in Pipe mode (agent/pipe.c, docs/pipe-mode.md). */
#include <stddef.h>

#include "api/agent_proto.h"
#include "common/buf.h"
#include "common/strvec.h"

struct agent_ctx;
struct agent_assign;
struct stor;

/*
 * The order of a channel's n listed objects in an epoch: order[k] is the
 * index of the object at position k; the listing's order unless the
 * channel has a ShuffleConfig, then a shuffle its Seed and the epoch fix
 * (sharding takes positions, so hosts share each epoch anew).
 */
void agent_channel_order(const struct api_channel *c, size_t n, int epoch,
			 size_t *order);
/* <dir>/input/data/<channel>_<epoch>, as a new string. */
char *agent_pipe_path(const char *dir, const char *channel, int epoch);
/*
 * In the staging worker: checks that the channel has objects for this
 * host and options Pipe mode supports, and makes its pipe of epoch 0.
 */
int agent_pipe_stage(struct stor *st, const struct api_assignment *s,
		     const struct api_channel *c, const char *dir, int fd,
		     struct buf *err);
/* Starts the writer of every Pipe channel (none: nothing to do). */
int agent_pipe_start(struct agent_ctx *ctx, struct agent_assign *a,
		     struct buf *err);
/* Kills the writers (the ranks have ended); reaped as any child. */
void agent_pipe_stop(struct agent_assign *a);
/*
 * The writer's report pipe is readable: reads what it said, adding the
 * notes meant for the job's log to notes.
 */
void agent_pipe_on_report(struct agent_assign *a, struct strvec *notes);

#endif
