/*
 * The search space's one rule that both the wire and the optimizer need
 * (common/tune_space.h).
 */
#include "common/tune_space.h"

enum tune_scale tune_scale_auto(const struct tune_param *p)
{
	if (p->kind != TUNE_CATEGORICAL && p->min > 0 && p->max >= 100 * p->min)
		return TUNE_SCALE_LOG;
	return TUNE_SCALE_LINEAR;
}
