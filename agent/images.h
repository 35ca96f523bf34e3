#ifndef AGENT_IMAGES_H
#define AGENT_IMAGES_H

/* The host's container images (agent/images.c). */
#include <stdint.h>
#include <sys/types.h>

#include "agent/task.h"

struct agent_ctx;

struct agent_images {
	struct agent_task task; /* a worker: prune (when asked), then list */
	int64_t want;		/* the controller's latest prune request */
	int64_t done;		/* the last request done */
	int64_t running;	/* the request the worker does, 0: list only */
	int refresh;		/* a list is due (start, after a pull) */
	char *list;		/* the last list (JSON array), NULL: none yet */
	char *next;		/* the worker's list, until it has ended */
	int unsent;		/* list not yet delivered with a status */
	int in_flight;		/* ... the status in flight carries it */
};

void agent_images_init(struct agent_ctx *ctx);
/* Starts a worker when a list or a prune is due (every turn). */
void agent_images_tick(struct agent_ctx *ctx);
/* Its report pipe is readable. */
void agent_images_on_task(struct agent_ctx *ctx);
/* Reaps pid if it is the worker: 1, else 0. */
int agent_images_reap(struct agent_ctx *ctx, pid_t pid);
void agent_images_release(struct agent_ctx *ctx);

#endif
