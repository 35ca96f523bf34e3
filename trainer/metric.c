/*
 * Metric lines. trainctl (and a SageMaker MetricDefinition) scrapes the
 * program's stdout, so the line is the whole interface: one line per
 * value, flushed at once so that a crash loses nothing already reported.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trainer/internal.h"
#include "common/banned.h"

#define METRIC_NAME_MAX 255

static int metric_name_valid(const char *name)
{
	size_t n = 0;
	const char *p;

	for (p = name; *p; p++, n++) {
		char c = *p;

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == ':' || c == '.' ||
		      c == '_' || c == '/' || c == '-'))
			return 0;
	}
	return n > 0 && n <= METRIC_NAME_MAX;
}

int trainer_metric(struct trainer *t, const char *name, double value,
		   int64_t step)
{
	FILE *f;

	if (!t)
		return TRAINER_EINVAL;
	if (!name || !metric_name_valid(name))
		return trainer__err(t, TRAINER_EINVAL,
				    "metric name '%s' is not "
				    "[A-Za-z0-9:._/-]{1,255}",
				    name ? name : "(null)");
	if (!isfinite(value))
		return trainer__err(t, TRAINER_EINVAL,
				    "metric '%s': value is not finite", name);
	if (step < 0)
		return trainer__err(t, TRAINER_EINVAL,
				    "metric '%s': step %" PRId64 " is negative",
				    name, step);
	f = t->metric_stream ? t->metric_stream : stdout;
	if (fprintf(f, "#metric %s=%.8g step=%" PRId64 "\n", name, value,
		    step) < 0 ||
	    fflush(f) != 0)
		return trainer__err(t, TRAINER_EIO, "metric '%s': write failed",
				    name);
	return 0;
}

void trainer_metric_stream(struct trainer *t, FILE *f)
{
	if (t)
		t->metric_stream = f;
}
