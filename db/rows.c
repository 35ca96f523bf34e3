/*
 * One read query on a pooled reader, row by row: the prepare, bind, step
 * loop, finalize and release that the list and lookup queries share.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

int db__rows(struct db *db, const struct db__query *q, db__row_fn *row,
	     void *arg, struct buf *err)
{
	void *h;
	sqlite3 *conn = db__reader_acquire(db, &h);
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(conn, q->sql, -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, q->prepare_what, err);
		goto out;
	}
	if (q->bind)
		q->bind(st, q->bind_arg);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ret = row(st, arg);
		if (ret)
			break;
	}
	if (ret > 0)
		ret = 0; /* row stopped the scan */
	else if (!ret && rc != SQLITE_DONE)
		ret = db__error(conn, q->step_what, err);
out:
	sqlite3_finalize(st);
	db__reader_release(db, h);
	return ret;
}

void db__bind_text1(sqlite3_stmt *st, const void *text)
{
	db__bind_text(st, 1, text);
}

void *db__vec_push(struct db__vec *a)
{
	char *p;

	if (a->n + 1 > a->alloc) {
		a->alloc = ALLOC_NR(a->alloc) < a->n + 1 ? a->n + 1 :
							   ALLOC_NR(a->alloc);
		a->v = xrealloc(a->v, xmul(a->alloc, a->size));
	}
	p = (char *)a->v + a->n++ * a->size;
	memset(p, 0, a->size);
	return p;
}

static int name_row(sqlite3_stmt *st, void *arg)
{
	char **name = db__vec_push(arg);

	*name = db__col_dup(st, 0);
	return 0;
}

int db__names(struct db *db, const struct db__query *q, char ***names,
	      size_t *n, struct buf *err)
{
	struct db__vec a = DB__VEC_INIT(sizeof(char *));
	int ret = db__rows(db, q, name_row, &a, err);
	char **v = a.v;
	size_t i;

	if (ret) {
		for (i = 0; i < a.n; i++)
			free(v[i]);
		free(v);
		v = NULL;
		a.n = 0;
	}
	*names = v;
	*n = a.n;
	return ret;
}
