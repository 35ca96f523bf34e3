/*
 * Search over training jobs: a tree of filters (common/search_expr.h) turned
 * into one SQL query over jobs, their tags, final metrics and transitions, and
 * the stored request for every other property. Values are always bound,
 * never spliced into the text; property paths spliced into json_extract()
 * are checked by the parser to be [A-Za-z0-9_] segments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "common/search_expr.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

enum kind { K_TEXT, K_NUMBER, K_TIME };

struct param {
	int is_num;
	double num;
	const char *text;
};

struct sql {
	struct buf q;
	struct param *p;
	size_t n, cap;
	struct buf *err;
	int bad;
};

static void bind_text(struct sql *s, const char *text)
{
	ALLOC_GROW(s->p, s->n + 1, s->cap);
	s->p[s->n].is_num = 0;
	s->p[s->n].text = text;
	s->n++;
	(void)buf_addf(&s->q, "?%zu", s->n);
}

static void bind_num(struct sql *s, double num)
{
	ALLOC_GROW(s->p, s->n + 1, s->cap);
	s->p[s->n].is_num = 1;
	s->p[s->n].num = num;
	s->n++;
	(void)buf_addf(&s->q, "?%zu", s->n);
}

/* Columns that are never NULL sort without a NULLs-last term first. */
static const char *const not_null[] = {
	"TrainingJobName", "TrainingJobArn", "TrainingJobStatus",
	"SecondaryStatus", "CreationTime",   "LastModifiedTime",
};

static const struct {
	const char *name;
	const char *sql;
	enum kind kind;
} columns[] = {
	{ "TrainingJobName", "j.name", K_TEXT },
	{ "TrainingJobArn", "j.arn", K_TEXT },
	{ "TrainingJobStatus", "j.status", K_TEXT },
	{ "SecondaryStatus", "j.secondary_status", K_TEXT },
	{ "FailureReason", "j.failure_reason", K_TEXT },
	{ "ModelArtifacts.S3ModelArtifacts", "j.model_artifacts", K_TEXT },
	{ "CreationTime", "j.creation_ms", K_TIME },
	{ "LastModifiedTime", "j.last_modified_ms", K_TIME },
	{ "TrainingStartTime", "nullif(j.start_ms, 0)", K_TIME },
	{ "TrainingEndTime", "nullif(j.end_ms, 0)", K_TIME },
	{ "TrainingTimeInSeconds", "nullif(j.training_s, 0)", K_NUMBER },
	{ "BillableTimeInSeconds", "nullif(j.billable_s, 0)", K_NUMBER },
};

/* Lists kept in their own tables: a nested filter's rows and columns. */
static const struct {
	const char *property;
	const char *from; /* rows of one job j, aliased n */
	const char *member;
	const char *sql;
	enum kind kind;
} nested_columns[] = {
	{ "Tags", "job_tags n WHERE n.job_id = j.id", "Key", "n.key", K_TEXT },
	{ "Tags", NULL, "Value", "n.value", K_TEXT },
	{ "FinalMetricDataList", "final_metrics n WHERE n.job_id = j.id",
	  "MetricName", "n.name", K_TEXT },
	{ "FinalMetricDataList", NULL, "Value", "n.value", K_NUMBER },
	{ "FinalMetricDataList", NULL, "Timestamp", "n.timestamp_ms", K_TIME },
	{ "SecondaryStatusTransitions",
	  "transitions n WHERE n.job_id = j.id", "Status", "n.status",
	  K_TEXT },
	{ "SecondaryStatusTransitions", NULL, "StartTime", "n.start_ms",
	  K_TIME },
	{ "SecondaryStatusTransitions", NULL, "EndTime", "nullif(n.end_ms, 0)",
	  K_TIME },
	{ "SecondaryStatusTransitions", NULL, "StatusMessage", "n.message",
	  K_TEXT },
};

/* The table a nested filter on property reads, or NULL (a JSON list). */
static const char *nested_from(const char *property)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(nested_columns); i++)
		if (nested_columns[i].from &&
		    !strcmp(nested_columns[i].property, property))
			return nested_columns[i].from;
	return NULL;
}

/* Writes json_extract(src, '$.path') with path's dots kept. */
static void json_path(struct sql *s, const char *src, const char *path)
{
	(void)buf_addf(&s->q, "json_extract(%s, '$.%s')", src, path);
}

/*
 * Writes the SQL expression of property name; *kind says how to compare
 * it. under: the nested property the name is below (rows aliased n), or
 * NULL for a property of job j.
 */
static void property_sql(struct sql *s, const char *name, const char *under,
			 enum kind *kind)
{
	size_t i;

	*kind = K_TEXT;
	if (under) {
		const char *rest = name + strlen(under) + 1;

		for (i = 0; i < ARRAY_SIZE(nested_columns); i++) {
			if (!strcmp(nested_columns[i].property, under) &&
			    !strcmp(nested_columns[i].member, rest)) {
				*kind = nested_columns[i].kind;
				(void)buf_adds(&s->q, nested_columns[i].sql);
				return;
			}
		}
		if (nested_from(under)) {
			(void)buf_adds(&s->q, "NULL");
			return;
		}
		json_path(s, "n.value", rest);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(columns); i++) {
		if (!strcmp(columns[i].name, name)) {
			*kind = columns[i].kind;
			(void)buf_adds(&s->q, columns[i].sql);
			return;
		}
	}
	if (!strncmp(name, "Tags.", 5)) {
		(void)buf_adds(&s->q, "(SELECT t.value FROM job_tags t WHERE "
				      "t.job_id = j.id AND t.key = ");
		bind_text(s, name + 5);
		(void)buf_addch(&s->q, ')');
	} else if (!strncmp(name, "Metrics.", 8)) {
		*kind = K_NUMBER;
		(void)buf_adds(&s->q, "(SELECT m.value FROM final_metrics m "
				      "WHERE m.job_id = j.id AND m.name = ");
		bind_text(s, name + 8);
		(void)buf_addch(&s->q, ')');
	} else if (!strncmp(name, "HyperParameters.", 16) ||
		   !strncmp(name, "Environment.", 12)) {
		const char *dot = strchr(name, '.');

		(void)buf_addf(&s->q,
			       "(SELECT e.value FROM json_each(j.request_json, "
			       "'$.%.*s') e WHERE e.key = ",
			       (int)(dot - name), name);
		bind_text(s, dot + 1);
		(void)buf_addch(&s->q, ')');
	} else {
		json_path(s, "j.request_json", name);
	}
}

/* Whether v is a whole number text (then compared as a number). */
static int number_of(const char *v, double *out)
{
	char *end;

	if (!*v)
		return 0;
	*out = strtod(v, &end);
	return !*end && end != v;
}

static const char *const cmp_ops[] = {
	[SEARCH_EQ] = "=",  [SEARCH_NE] = "<>", [SEARCH_GT] = ">",
	[SEARCH_GE] = ">=", [SEARCH_LT] = "<",	[SEARCH_LE] = "<=",
};

/*
 * Properties KEYED.KEY kept as rows of a table: a filter on one becomes a
 * set of job ids from that table's index, as a nested filter on the row
 * with that key.
 */
static const struct {
	const char *prefix;
	const char *table;
	const char *key;
	const char *nested;
	const char *member;
} keyed_rows[] = {
	{ "Tags.", "job_tags", "key", "Tags", "Tags.Value" },
	{ "Metrics.", "final_metrics", "name", "FinalMetricDataList",
	  "FinalMetricDataList.Value" },
};

static void filter_sql(struct sql *s, const struct search_filter *f,
		       const char *under);

/* 1 when f is on a keyed row property and was written. */
static int keyed_filter_sql(struct sql *s, const struct search_filter *f)
{
	struct search_filter g;
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(keyed_rows); i++) {
		n = strlen(keyed_rows[i].prefix);
		if (!strncmp(f->name, keyed_rows[i].prefix, n))
			break;
	}
	if (i == ARRAY_SIZE(keyed_rows))
		return 0;
	(void)buf_addf(&s->q,
		       "(j.id %sIN (SELECT n.job_id FROM %s n WHERE n.%s = ",
		       f->op == SEARCH_NOT_EXISTS ? "NOT " : "",
		       keyed_rows[i].table, keyed_rows[i].key);
	bind_text(s, f->name + n);
	if (f->op != SEARCH_EXISTS && f->op != SEARCH_NOT_EXISTS) {
		g = *f;
		g.name = (char *)keyed_rows[i].member;
		(void)buf_adds(&s->q, " AND ");
		filter_sql(s, &g, keyed_rows[i].nested);
	}
	(void)buf_adds(&s->q, "))");
	return 1;
}

static void filter_sql(struct sql *s, const struct search_filter *f,
		       const char *under)
{
	enum kind kind;
	double num;
	char *tok, *save;
	size_t mark, n_mark;
	int first;

	if (!under && keyed_filter_sql(s, f))
		return;
	(void)buf_addch(&s->q, '(');
	switch (f->op) {
	case SEARCH_EXISTS:
	case SEARCH_NOT_EXISTS:
		property_sql(s, f->name, under, &kind);
		(void)buf_adds(&s->q, f->op == SEARCH_EXISTS ? " IS NOT NULL)" :
							       " IS NULL)");
		return;
	case SEARCH_CONTAINS:
		(void)buf_adds(&s->q, "instr(lower(");
		property_sql(s, f->name, under, &kind);
		(void)buf_adds(&s->q, "), lower(");
		bind_text(s, f->value);
		(void)buf_adds(&s->q, ")) > 0)");
		return;
	case SEARCH_IN:
		property_sql(s, f->name, under, &kind);
		(void)buf_adds(&s->q, " IN (");
		first = 1;
		/* The values are cut in place: f->value is the request's. */
		for (tok = strtok_r(f->value, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ')
				tok++;
			if (!first)
				(void)buf_addch(&s->q, ',');
			first = 0;
			bind_text(s, tok);
		}
		if (first)
			(void)buf_adds(&s->q, "NULL");
		(void)buf_adds(&s->q, "))");
		return;
	default:
		break;
	}
	/* A number compares as one with a property that holds a number. */
	mark = s->q.len;
	n_mark = s->n;
	property_sql(s, f->name, under, &kind);
	if (number_of(f->value, &num) &&
	    (kind != K_TEXT || (f->op != SEARCH_EQ && f->op != SEARCH_NE) ||
	     !strncmp(f->name, "HyperParameters.", 16))) {
		/* Rewritten from the mark: parameters bound again. */
		s->q.len = mark;
		s->q.data[mark] = '\0';
		s->n = n_mark;
		(void)buf_adds(&s->q, "CAST(");
		property_sql(s, f->name, under, &kind);
		(void)buf_addf(&s->q, " AS REAL) %s ", cmp_ops[f->op]);
		bind_num(s, num);
		(void)buf_adds(&s->q, " AND (typeof(");
		property_sql(s, f->name, under, &kind);
		(void)buf_adds(&s->q, ") IN ('integer', 'real') OR trim(");
		property_sql(s, f->name, under, &kind);
		(void)buf_adds(&s->q, ") GLOB '*[0-9]*' AND trim(");
		property_sql(s, f->name, under, &kind);
		(void)buf_adds(&s->q, ") NOT GLOB '*[^0-9eE+.-]*'))");
		return;
	}
	if (kind != K_TEXT) {
		(void)buf_addf(s->err,
			       "Value '%.100s' for '%.255s' must be a number",
			       f->value, f->name);
		s->bad = 1;
	}
	(void)buf_addf(&s->q, " %s ", cmp_ops[f->op]);
	bind_text(s, f->value);
	(void)buf_addch(&s->q, ')');
}

static void expr_sql(struct sql *s, const struct search_expr *e)
{
	const char *join = e->any ? " OR " : " AND ";
	int first = 1;
	size_t i, k;

	(void)buf_addch(&s->q, '(');
	for (i = 0; i < e->n_filters; i++) {
		(void)buf_adds(&s->q, first ? "" : join);
		first = 0;
		filter_sql(s, &e->filters[i], NULL);
	}
	for (i = 0; i < e->n_nested; i++) {
		const struct search_nested *n = &e->nested[i];
		const char *from = nested_from(n->property);

		(void)buf_adds(&s->q, first ? "" : join);
		first = 0;
		if (from) {
			(void)buf_addf(&s->q, "EXISTS (SELECT 1 FROM %s", from);
		} else {
			(void)buf_adds(&s->q, "EXISTS (SELECT 1 FROM json_each(");
			json_path(s, "j.request_json", n->property);
			(void)buf_adds(&s->q, ") n WHERE 1");
		}
		for (k = 0; k < n->n_filters; k++) {
			(void)buf_adds(&s->q, " AND ");
			filter_sql(s, &n->filters[k], n->property);
		}
		(void)buf_addch(&s->q, ')');
	}
	for (i = 0; i < e->n_subs; i++) {
		(void)buf_adds(&s->q, first ? "" : join);
		first = 0;
		expr_sql(s, &e->subs[i]);
	}
	(void)buf_addch(&s->q, ')');
}

static void bind_params(sqlite3_stmt *st, const void *arg)
{
	const struct sql *s = arg;
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->p[i].is_num)
			sqlite3_bind_double(st, (int)i + 1, s->p[i].num);
		else
			db__bind_text(st, (int)i + 1, s->p[i].text);
}

/* One page of names: limit of them, *more once a row lies beyond. */
struct page {
	struct db__vec names;
	size_t limit;
	int *more;
};

static int page_row(sqlite3_stmt *st, void *arg)
{
	struct page *pg = arg;
	char **name;

	if (pg->names.n == pg->limit) {
		*pg->more = 1;
		return 1;
	}
	name = db__vec_push(&pg->names);
	*name = db__col_dup(st, 0);
	return 0;
}

int db_search_jobs(struct db *db, const struct db_search_query *q,
		   char ***names, size_t *n, int *more, struct buf *err)
{
	struct sql s = { BUF_INIT, NULL, 0, 0, err, 0 };
	struct page pg = { DB__VEC_INIT(sizeof(char *)), q->limit, more };
	struct db__query dq = {
		.prepare_what = "cannot prepare search",
		.step_what = "cannot search jobs",
		.bind = bind_params,
		.bind_arg = &s,
	};
	enum kind kind;
	char **out;
	size_t i;
	int ret = 0;

	*names = NULL;
	*n = 0;
	*more = 0;
	(void)buf_adds(&s.q, "SELECT j.name FROM jobs j WHERE 1");
	if (q->owner) {
		(void)buf_adds(&s.q, " AND j.owner = ");
		bind_text(&s, q->owner);
	}
	if (q->expr) {
		(void)buf_adds(&s.q, " AND ");
		expr_sql(&s, q->expr);
	}
	(void)buf_adds(&s.q, " ORDER BY ");
	for (i = 0; i < ARRAY_SIZE(not_null); i++)
		if (!strcmp(not_null[i], q->sort_by))
			break;
	if (i == ARRAY_SIZE(not_null)) {
		property_sql(&s, q->sort_by, NULL, &kind);
		(void)buf_adds(&s.q, " IS NULL, ");
	}
	property_sql(&s, q->sort_by, NULL, &kind);
	(void)buf_addf(&s.q, " %s, j.id %s LIMIT %zu OFFSET %zu",
		       q->descending ? "DESC" : "ASC",
		       q->descending ? "DESC" : "ASC", q->limit + 1,
		       q->offset);
	if (s.bad) {
		ret = ERR_INVALID;
		goto out_free;
	}
	dq.sql = s.q.data;
	ret = db__rows(db, &dq, page_row, &pg, err);
out_free:
	free(s.p);
	buf_release(&s.q);
	out = pg.names.v;
	if (ret) {
		for (i = 0; i < pg.names.n; i++)
			free(out[i]);
		free(out);
		return ret;
	}
	*names = out;
	*n = pg.names.n;
	return 0;
}
