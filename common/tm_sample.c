/*
 * Telemetry samples: freeing, copying and the derived percentages
 * (common/tm_sample.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/tm_sample.h"
#include "common/xalloc.h"
#include "common/banned.h"

void tm_host_sample_release(struct tm_host_sample *s)
{
	size_t i;

	for (i = 0; s->ranks && i < s->n_ranks; i++) {
		free(s->ranks[i].job);
		free(s->ranks[i].job_uid);
		free(s->ranks[i].algo);
	}
	free(s->ranks);
	free(s->gpus);
	memset(s, 0, sizeof(*s));
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void tm_host_sample_copy(struct tm_host_sample *dst,
			 const struct tm_host_sample *src)
{
	size_t i;

	*dst = *src;
	dst->gpus = xcalloc(src->n_gpus + 1, sizeof(*dst->gpus));
	if (src->n_gpus)
		memcpy(dst->gpus, src->gpus, src->n_gpus * sizeof(*src->gpus));
	dst->ranks = xcalloc(src->n_ranks + 1, sizeof(*dst->ranks));
	for (i = 0; i < src->n_ranks; i++) {
		dst->ranks[i] = src->ranks[i];
		dst->ranks[i].job = dup_or_null(src->ranks[i].job);
		dst->ranks[i].job_uid = dup_or_null(src->ranks[i].job_uid);
		dst->ranks[i].algo = dup_or_null(src->ranks[i].algo);
	}
}

static double pct(int64_t part, int64_t whole)
{
	if (whole <= 0 || part <= 0)
		return 0.0;
	return part >= whole ? 100.0 : 100.0 * (double)part / (double)whole;
}

double tm_host_sample_mem_percent(const struct tm_host_sample *s)
{
	int64_t total = s->mem_total;

	if (s->mem_limit > 0 && (total <= 0 || s->mem_limit < total))
		total = s->mem_limit;
	return pct(s->mem_used, total);
}

double tm_host_sample_disk_percent(const struct tm_host_sample *s)
{
	return pct(s->fs_used, s->fs_total);
}

double tm_host_sample_gpu_percent(const struct tm_host_sample *s)
{
	double sum = 0.0;
	size_t i;

	for (i = 0; i < s->n_gpus; i++)
		sum += s->gpus[i].util_percent;
	return sum;
}

double tm_host_sample_gpu_mem_percent(const struct tm_host_sample *s)
{
	double sum = 0.0;
	size_t i;

	for (i = 0; i < s->n_gpus; i++)
		sum += pct(s->gpus[i].mem_used, s->gpus[i].mem_total);
	return sum;
}

double tm_host_sample_cores_percent(const struct tm_host_sample *s)
{
	return s->cpu_percent * (s->cpus > 0 ? s->cpus : 1);
}
