#ifndef API_GOODPUT_H
#define API_GOODPUT_H

/*
 * Goodput on the wire (docs/goodput.md): DescribeTrainingJob's extension
 * member, which botocore's parser skips as it skips any member its model
 * lacks:
 *
 *   "TrainctlGoodput": {
 *     "WallTimeInSeconds": 812.4, "Goodput": 0.91,
 *     "TimeInSeconds": {"Queued": 1.2, "Startup": 3.0, "Productive": ...},
 *     "StepReached": 1200, "StepsRedone": 40,
 *     "Attempts": 2, "AttemptsReporting": 2 }
 *
 * "TimeInSeconds" names each category the controller accounts, in its
 * order; the values add up to "WallTimeInSeconds". "StepReached" is -1
 * when no attempt reported a step.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct api_goodput {
	size_t n;
	char **names;	 /* category names, in order */
	double *seconds; /* seconds per category */
	double wall_s;
	double ratio; /* Goodput: Productive over the wall time, 0..1 */
	int64_t step;
	int64_t steps_redone;
	int attempts;
	int reporting;
};

/*
 * Appends {"TrainctlGoodput": {...}} for g to out. Returns 0 or
 * ERR_NOMEM.
 */
int api_goodput_json(const struct api_goodput *g, struct buf *out);

/*
 * Reads the TrainctlGoodput member of a Describe body into *g (free with
 * api_goodput_release()). Returns 0, ERR_NOTFOUND when the body has none,
 * or ERR_INVALID with err.
 */
int api_goodput_parse(const char *json, size_t len, struct api_goodput *g,
		      struct buf *err);

void api_goodput_release(struct api_goodput *g);

#endif
