/*
 * A tuning job and its training jobs, loaded from the store
 * (controller/tuning/job.h).
 */
#include <stdlib.h>
#include <string.h>

#include "api/tuning.h"
#include "controller/ctrl.h"
#include "controller/tuning/job.h"
#include "db/tuning.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

double *ctrl_tuning_parse_point(const char *s, size_t n)
{
	double *x = xcalloc(n ? n : 1, sizeof(*x));
	size_t i;

	for (i = 0; i < n && s && *s; i++) {
		char *end;

		x[i] = strtod(s, &end);
		s = *end == ',' ? end + 1 : end;
	}
	return x;
}

char *ctrl_tuning_format_point(const double *x, size_t n)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++)
		(void)buf_addf(&b, "%s%.17g", i ? "," : "", x[i]);
	if (!n)
		(void)buf_adds(&b, "");
	return buf_detach(&b, NULL);
}

void ctrl_tuning_job_release(struct ctrl_tuning_job *j)
{
	size_t i, k;

	for (i = 0; i < j->n; i++) {
		free(j->kids[i].x);
		for (k = 0; j->kids[i].vals && j->kids[i].vals[k]; k++)
			free(j->kids[i].vals[k]);
		free(j->kids[i].vals);
	}
	free(j->kids);
	db_tuning_children_free(j->rows, j->n);
	api_tuning_release(&j->spec);
	db_tuning_release(&j->t);
	memset(j, 0, sizeof(*j));
}

/* The tuning job's tags, which its training jobs get too. */
static int load_tags(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
		     struct buf *err)
{
	struct db_tag *tags = NULL;
	size_t n = 0, i;
	int ret = db_tuning_tags(ctx->db, j->t.name, &tags, &n, err);

	if (ret || !n)
		return ret;
	j->spec.tags = xcalloc(n, sizeof(*j->spec.tags));
	for (i = 0; i < n; i++) {
		j->spec.tags[i].key = tags[i].key;
		j->spec.tags[i].value = tags[i].value;
	}
	j->spec.n_tags = n;
	free(tags);
	return 0;
}

int ctrl_tuning_job_load(struct ctrl_ctx *ctx, const char *name,
			 struct ctrl_tuning_job *j, struct buf *err)
{
	size_t i;
	int ret;

	memset(j, 0, sizeof(*j));
	ret = db_tuning_get(ctx->db, name, &j->t, err);
	if (ret)
		return ret;
	ret = api_tuning_load(j->t.request_json, &j->spec, err);
	if (ret) {
		db_tuning_release(&j->t);
		return ERR_INTERNAL;
	}
	ret = db_tuning_children(ctx->db, j->t.name, &j->rows, &j->n, err);
	if (!ret)
		ret = load_tags(ctx, j, err);
	if (ret) {
		api_tuning_release(&j->spec);
		db_tuning_release(&j->t);
		return ret;
	}
	j->kids = xcalloc(j->n ? j->n : 1, sizeof(*j->kids));
	for (i = 0; i < j->n; i++) {
		const struct api_tuning_def *d =
			ctrl_tuning_def_of(j, j->rows[i].def);

		j->kids[i].c = &j->rows[i];
		j->kids[i].x =
			ctrl_tuning_parse_point(j->rows[i].point, d->n_ranges);
		j->kids[i].vals = api_tuning_values(d, j->kids[i].x);
	}
	ctrl_tuning_summarize(j);
	return 0;
}

/* The names of d's ranges, as an array the child view points at. */
char **ctrl_tuning_range_names(const struct api_tuning_def *d)
{
	char **names = xcalloc(d->n_ranges + 1, sizeof(*names));
	size_t i;

	for (i = 0; i < d->n_ranges; i++)
		names[i] = d->ranges[i].name;
	return names;
}

void ctrl_tuning_parents_load(struct ctrl_ctx *ctx,
			      const struct ctrl_tuning_job *j,
			      struct ctrl_tuning_job **parents, size_t *n)
{
	struct buf err = BUF_INIT;
	size_t i;

	*parents = xcalloc(j->spec.n_parents + 1, sizeof(**parents));
	*n = 0;
	for (i = 0; i < j->spec.n_parents; i++) {
		buf_reset(&err);
		if (!ctrl_tuning_job_load(ctx, j->spec.parents[i],
					  &(*parents)[*n], &err))
			(*n)++;
	}
	buf_release(&err);
}

void ctrl_tuning_parents_free(struct ctrl_tuning_job *parents, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ctrl_tuning_job_release(&parents[i]);
	free(parents);
}
