#ifndef COMMON_TUNE_SPACE_H
#define COMMON_TUNE_SPACE_H

/*
 * The words of a hyperparameter search space, shared by the folder that
 * reads one off the wire (api/tuning.h) and the one that searches it
 * (tuner/tuner.h), so that neither includes the other. Plain data and one
 * pure function; the optimizer itself is in tuner/.
 *
 * Points are one double per parameter: the value for continuous and
 * integer parameters (integers are whole), the index of the value for
 * categorical ones.
 */
#include <stddef.h>

enum tune_kind { TUNE_CONTINUOUS, TUNE_INTEGER, TUNE_CATEGORICAL };

/* ScalingType; Auto is resolved by the caller (tune_scale_auto()). */
enum tune_scale { TUNE_SCALE_LINEAR, TUNE_SCALE_LOG, TUNE_SCALE_REVLOG };

struct tune_param {
	const char *name;
	enum tune_kind kind;
	enum tune_scale scale;
	double min; /* continuous and integer: inclusive bounds */
	double max;
	size_t n_values; /* categorical: indexes 0 .. n_values - 1 */
};

struct tune_space {
	const struct tune_param *params;
	size_t n;
};

enum tune_strategy { TUNE_RANDOM, TUNE_GRID, TUNE_BAYESIAN, TUNE_HYPERBAND };

/* Auto: Logarithmic for a positive range spanning 100x or more, else
 * Linear (categorical: Linear). */
enum tune_scale tune_scale_auto(const struct tune_param *p);

#endif
