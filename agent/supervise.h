#ifndef AGENT_SUPERVISE_H
#define AGENT_SUPERVISE_H

/*
 * Output, exits, the workers' reports, adoption after a restart
 * (agent/supervise.c).
 */
#include <stddef.h>

struct agent_ctx;
struct agent_assign;

void agent_sup_on_output(struct agent_ctx *ctx, struct agent_assign *a,
			 size_t rank, int is_stderr);
void agent_sup_on_pidfd(struct agent_ctx *ctx, struct agent_assign *a,
			size_t rank);
void agent_sup_on_task(struct agent_ctx *ctx, struct agent_assign *a);
/* The Pipe mode writer's report pipe is readable (or it ended). */
void agent_sup_on_pipe(struct agent_ctx *ctx, struct agent_assign *a);
/* Reaps every ended child (SIGCHLD arrived). */
void agent_sup_reap(struct agent_ctx *ctx);
/* Finds the assignments of a previous agent in the work directory. */
void agent_sup_adopt_all(struct agent_ctx *ctx);

#endif
