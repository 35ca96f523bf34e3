#ifndef CTRL_MOVES_H
#define CTRL_MOVES_H

/*
 * Planned moves (controller/moves.c): the attempt ends as a move that
 * spends no retry, and the next one starts on other or more hosts. Each
 * returns 1 when the move began, 0 when the job stays as it is.
 */
#include <stddef.h>

#include "controller/job_state.h"

struct ctrl_ctx;
struct db_job;
struct db_assignment;
struct ctrl_plan_summary;

/* Off drained hosts, when a free host can take each drained place. */
int ctrl_move_off_drained(struct ctrl_ctx *ctx, const struct db_job *job,
			  enum ctrl_job_state cur,
			  const struct db_assignment *as, size_t n);

/* An elastic job short of hosts, now that enough are free
 * (controller/elastic.h). */
int ctrl_move_grow_back(struct ctrl_ctx *ctx, const struct db_job *job,
			enum ctrl_job_state cur, const struct db_assignment *as,
			size_t n);

/* Off the host that failed its infrastructure checks (s->check_failed),
 * drained with the reason, when a spare is free. */
int ctrl_move_replace_failed_check(struct ctrl_ctx *ctx,
				   const struct db_job *job,
				   enum ctrl_job_state cur,
				   const struct ctrl_plan_summary *s,
				   const struct db_assignment *as, size_t n);

#endif
