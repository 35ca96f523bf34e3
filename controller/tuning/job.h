#ifndef CTRL_TUNING_JOB_H
#define CTRL_TUNING_JOB_H

/*
 * A tuning job with its training jobs, as the operations and the step
 * load it from the store (struct ctrl_tuning_job, controller/tuning/
 * plan.h). Internal to controller/tuning/.
 */
#include <stddef.h>

#include "controller/tuning/plan.h"
#include "common/buf.h"

struct ctrl_ctx;

/*
 * Loads tuning job name, its spec, tags and training jobs into *j and
 * summarizes it (ctrl_tuning_summarize()). Returns 0 (release *j with
 * ctrl_tuning_job_release()), or an ERR_* code with err saying why and
 * nothing to release.
 */
int ctrl_tuning_job_load(struct ctrl_ctx *ctx, const char *name,
			 struct ctrl_tuning_job *j, struct buf *err);
void ctrl_tuning_job_release(struct ctrl_tuning_job *j);

/*
 * The warm-start parents of j that could be loaded, as an array of *n
 * jobs; free with ctrl_tuning_parents_free().
 */
void ctrl_tuning_parents_load(struct ctrl_ctx *ctx,
			      const struct ctrl_tuning_job *j,
			      struct ctrl_tuning_job **parents, size_t *n);
void ctrl_tuning_parents_free(struct ctrl_tuning_job *parents, size_t n);

/* A point as stored ("%.17g" values separated by ','), n values; the
 * caller frees the results. */
double *ctrl_tuning_parse_point(const char *s, size_t n);
char *ctrl_tuning_format_point(const double *x, size_t n);

/* The names of d's ranges, NULL-terminated; the caller frees the array
 * (not the names, which d owns). */
char **ctrl_tuning_range_names(const struct api_tuning_def *d);

#endif
