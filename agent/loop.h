#ifndef AGENT_LOOP_H
#define AGENT_LOOP_H

/* The poll loop, signals and reaping (agent/loop.c). */
#include <stddef.h>

struct agent_ctx;
struct agent_assign;

enum agent_poll_kind {
	AGENT_POLL_SIGNAL = 1,
	AGENT_POLL_CURL,
	AGENT_POLL_OUT,
	AGENT_POLL_ERR,
	AGENT_POLL_PIDFD,
	AGENT_POLL_TASK,
	AGENT_POLL_WATCH,
	AGENT_POLL_IMAGES,
	AGENT_POLL_PIPE
};

struct agent_pollref {
	enum agent_poll_kind kind;
	struct agent_assign *a;
	size_t rank;
};

/* Runs the loop until SIGTERM/SIGINT and the children are gone. */
int agent_run(struct agent_ctx *ctx);

#endif
