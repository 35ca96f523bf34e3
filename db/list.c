#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Keyset pagination. A token names the sort order and the key of the last
 * row of the previous page: "1|<sort>|<desc>|<creation_ms>|<id>|<text>",
 * where text is the name or the status for those orders, hex-encoded so the
 * token is opaque and URL-safe. The next page starts strictly after that
 * key, so rows inserted in the meantime never shift a page boundary.
 */
#define TOKEN_MAX 4096

struct page_key {
	int sort;
	int desc;
	int64_t creation_ms;
	int64_t id;
	char *text;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static char *token_encode(const struct page_key *k)
{
	struct buf raw = BUF_INIT;
	struct buf hex = BUF_INIT;
	size_t i;

	if (buf_addf(&raw, "1|%d|%d|%" PRId64 "|%" PRId64 "|%s", k->sort,
		     k->desc, k->creation_ms, k->id, k->text ? k->text : ""))
		BUG("unbounded buffer reported too big");
	for (i = 0; i < raw.len; i++)
		if (buf_addf(&hex, "%02x", (unsigned char)raw.data[i]))
			BUG("unbounded buffer reported too big");
	buf_release(&raw);
	return buf_detach(&hex, NULL);
}

static int token_decode(const char *tok, struct page_key *k)
{
	size_t len = strlen(tok);
	char *raw;
	char *p;
	char *end;
	size_t i;
	int hi, lo;
	int ret = ERR_INVALID;

	memset(k, 0, sizeof(*k));
	if (len == 0 || len % 2 || len > TOKEN_MAX)
		return ERR_INVALID;
	raw = xmalloc(len / 2 + 1);
	for (i = 0; i < len / 2; i++) {
		hi = hexval(tok[2 * i]);
		lo = hexval(tok[2 * i + 1]);
		if (hi < 0 || lo < 0)
			goto out;
		raw[i] = (char)(hi * 16 + lo);
		if (!raw[i])
			goto out;
	}
	raw[len / 2] = '\0';
	p = raw;
	if (strncmp(p, "1|", 2))
		goto out;
	p += 2;
	k->sort = (int)strtol(p, &end, 10);
	if (*end != '|' || k->sort < 0 || k->sort > DB_SORT_STATUS)
		goto out;
	k->desc = (int)strtol(end + 1, &end, 10);
	if (*end != '|')
		goto out;
	k->creation_ms = strtoll(end + 1, &end, 10);
	if (*end != '|')
		goto out;
	k->id = strtoll(end + 1, &end, 10);
	if (*end != '|')
		goto out;
	k->text = xstrdup(end + 1);
	ret = 0;
out:
	free(raw);
	return ret;
}

/* The ORDER BY keys and the keyset comparison for each order. */
static void add_order(struct buf *sql, int sort, int desc, int have_key)
{
	const char *cmp = desc ? "<" : ">";
	const char *dir = desc ? " DESC" : "";
	int r = 0;

	if (have_key) {
		if (sort == DB_SORT_NAME)
			r |= buf_addf(sql, " AND (name, id) %s (?20, ?21)",
				      cmp);
		else if (sort == DB_SORT_STATUS)
			r |= buf_addf(sql,
				      " AND (status, creation_ms, id) %s "
				      "(?22, ?23, ?21)",
				      cmp);
		else
			r |= buf_addf(sql,
				      " AND (creation_ms, id) %s (?23, ?21)",
				      cmp);
	}
	if (sort == DB_SORT_NAME)
		r |= buf_addf(sql, " ORDER BY name%s, id%s", dir, dir);
	else if (sort == DB_SORT_STATUS)
		r |= buf_addf(sql, " ORDER BY status%s, creation_ms%s, id%s",
			      dir, dir, dir);
	else
		r |= buf_addf(sql, " ORDER BY creation_ms%s, id%s", dir, dir);
	r |= buf_adds(sql, " LIMIT ?30");
	if (r)
		BUG("unbounded buffer reported too big");
}

/*
 * The page key that q's token names. A token of another sort order would
 * start the page at a key of the wrong column: refused.
 */
static int list_key(const struct db_list_query *q, struct page_key *key,
		    struct buf *err)
{
	if (token_decode(q->token, key) || key->sort != (int)q->sort ||
	    key->desc != q->descending) {
		free(key->text);
		key->text = NULL;
		(void)buf_adds(err, "Invalid pagination token: NextToken "
				    "does not belong to this sort order");
		return ERR_INVALID;
	}
	return 0;
}

/*
 * The instance type filter. Newest first it reads jobs_by_type; in name
 * or status order the unary + keeps the planner off that index, which
 * would give every job of a common type to be sorted, and on the order's
 * own index, which fills a page after a few rows of a common type (a
 * rare type reads more of it).
 */
static const char *list_type_term(const struct db_list_query *q)
{
	return q->sort == DB_SORT_CREATION ? " AND instance_type = ?18" :
					     " AND +instance_type = ?18";
}

/*
 * A tag that few jobs have (at most TAG_FEW): the jobs are found through
 * the tag's index and sorted, instead of testing the tag of every job in
 * the order's index until a page is full (18 ms at 100,000 jobs for a tag
 * of 0.1 %, a full scan for one of none).
 */
#define TAG_FEW 1000

static const char *const tag_term[2] = {
	" AND EXISTS (SELECT 1 FROM job_tags t WHERE t.job_id = jobs.id AND "
	"t.key = ?24 AND (?25 IS NULL OR t.value = ?25))",
	" AND id IN (SELECT job_id FROM job_tags WHERE key = ?24 AND (?25 IS "
	"NULL OR value = ?25))",
};

/*
 * The one number sql counts (COUNT(*) of a subquery with LIMIT ?3), with
 * ?1 = a and ?2 = b (NULL: left unbound); -1 with err naming what was
 * counted when it fails.
 */
static int count_capped(sqlite3 *conn, const char *sql, const char *a,
			const char *b, int cap, const char *what,
			struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int n = -1;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, a, -1, SQLITE_TRANSIENT);
		if (b)
			sqlite3_bind_text(st, 2, b, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 3, cap);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int(st, 0);
	}
	if (n < 0)
		(void)buf_addf(err, "cannot count %s: %s", what,
			       sqlite3_errmsg(conn));
	sqlite3_finalize(st);
	return n;
}

/* How many jobs have q's tag, counted up to TAG_FEW + 1; -1: error. */
static int tag_count(sqlite3 *conn, const struct db_list_query *q,
		     struct buf *err)
{
	return count_capped(conn,
			    "SELECT COUNT(*) FROM (SELECT 1 FROM job_tags "
			    "WHERE key = ?1 AND (?2 IS NULL OR value = ?2) "
			    "LIMIT ?3)",
			    q->tag_key, q->tag_value, TAG_FEW + 1,
			    "tagged jobs", err);
}

/*
 * A user's own jobs (a key that is not the admin's) in name or status
 * order: the planner reads them all through jobs_owner and sorts them
 * (250 ms for 99,000 of 100,000). An owner of more than OWNER_FEW jobs is
 * tested along the order's own index instead (+owner), which fills a page
 * after about jobs/owned x 50 rows; one of fewer keeps the sort (4 ms for
 * 1,000), which a walk of the whole index would not beat.
 */
#define OWNER_FEW 2000

/* Whether q's owner has more than OWNER_FEW jobs; -1: error. */
static int owner_many(sqlite3 *conn, const struct db_list_query *q,
		      struct buf *err)
{
	int n = count_capped(conn,
			     "SELECT COUNT(*) FROM (SELECT 1 FROM jobs "
			     "INDEXED BY jobs_owner WHERE owner = ?1 "
			     "LIMIT ?3)",
			     q->owner, NULL, OWNER_FEW + 1, "the owner's jobs",
			     err);

	return n < 0 ? -1 : n > OWNER_FEW;
}

/*
 * A created window in status order: the planner reads the window's jobs
 * through jobs_by_creation and sorts them all (18 ms for 10,000 of
 * 100,000). Naming the statuses there are (found by one index seek each)
 * lets it read jobs_by_status one status at a time, the window's range of
 * each in order: no sort, and a page ends the read.
 */
static int status_by_window(const struct db_list_query *q)
{
	return q->sort == DB_SORT_STATUS && !q->status &&
	       (q->created_after_ms || q->created_before_ms);
}

static const char statuses_cte[] =
	"WITH RECURSIVE statuses(x) AS (SELECT min(status) FROM jobs "
	"UNION ALL SELECT (SELECT min(status) FROM jobs WHERE status > x) "
	"FROM statuses WHERE x IS NOT NULL) ";

/* The SELECT's head and q's warm-pool and owner terms. */
static int list_head(struct buf *sql, const struct db_list_query *q,
		     int many_owned)
{
	return (status_by_window(q) && buf_adds(sql, statuses_cte)) ||
	       buf_adds(
		       sql,
		       "SELECT id, name, arn, status, secondary_status, "
		       "failure_reason, model_artifacts, NULL, instance_type, "
		       "instance_count, creation_ms, last_modified_ms, start_ms, "
		       "end_ms, training_s, billable_s, attempt, owner, "
		       "wp_status, wp_since_ms, wp_end_ms, wp_reused_by "
		       "FROM jobs WHERE 1") ||
	       (q->warm_pool_status && buf_adds(sql, " AND wp_status = ?17")) ||
	       (q->owner && buf_adds(sql, many_owned ? " AND +owner = ?16" :
						       " AND owner = ?16"));
}

/* q's name, status, time, type and tag terms. */
static int list_filters(struct buf *sql, const struct db_list_query *q,
			int few_tags)
{
	return (q->name_contains &&
		buf_adds(sql, " AND name LIKE ?10 ESCAPE '\\'")) ||
	       (q->status && buf_adds(sql, " AND status = ?11")) ||
	       (status_by_window(q) &&
		buf_adds(sql, " AND status IN (SELECT x FROM statuses)")) ||
	       (q->created_after_ms &&
		buf_adds(sql, " AND creation_ms > ?12")) ||
	       (q->created_before_ms &&
		buf_adds(sql, " AND creation_ms < ?13")) ||
	       (q->modified_after_ms &&
		buf_adds(sql, " AND last_modified_ms > ?14")) ||
	       (q->modified_before_ms &&
		buf_adds(sql, " AND last_modified_ms < ?15")) ||
	       (q->instance_type && buf_adds(sql, list_type_term(q))) ||
	       (q->tag_key && buf_adds(sql, tag_term[!!few_tags]));
}

/*
 * The SELECT for q: its filters, then the order and the keyset; few_tags:
 * q's tag is on at most TAG_FEW jobs; many_owned: q's owner has more than
 * OWNER_FEW.
 */
static void list_sql(struct buf *sql, const struct db_list_query *q,
		     int have_key, int few_tags, int many_owned)
{
	if (list_head(sql, q, many_owned) || list_filters(sql, q, few_tags))
		BUG("unbounded buffer reported too big");
	add_order(sql, q->sort, q->descending, have_key);
}

/*
 * The LIKE pattern of a name that contains s: LIKE folds ASCII case as
 * lower() did, without a lowered copy of every name the scan tests (half
 * the time of instr(lower(name), lower(s)) at 100,000 names).
 */
static char *contains_pattern(const char *s)
{
	struct buf b = BUF_INIT;
	int r = buf_addch(&b, '%');

	for (; *s; s++) {
		if (*s == '%' || *s == '_' || *s == '\\')
			r |= buf_addch(&b, '\\');
		r |= buf_addch(&b, *s);
	}
	r |= buf_addch(&b, '%');
	if (r)
		BUG("unbounded buffer reported too big");
	return buf_detach(&b, NULL);
}

/* Binds the parameters that list_sql() wrote. */
static void list_bind(sqlite3_stmt *st, const struct db_list_query *q,
		      const struct page_key *key, int have_key, int limit)
{
	if (q->name_contains)
		sqlite3_bind_text(st, 10, contains_pattern(q->name_contains),
				  -1, free);
	if (q->status)
		sqlite3_bind_text(st, 11, q->status, -1, SQLITE_TRANSIENT);
	if (q->owner)
		sqlite3_bind_text(st, 16, q->owner, -1, SQLITE_TRANSIENT);
	if (q->warm_pool_status)
		sqlite3_bind_text(st, 17, q->warm_pool_status, -1,
				  SQLITE_TRANSIENT);
	if (q->created_after_ms)
		sqlite3_bind_int64(st, 12, q->created_after_ms);
	if (q->created_before_ms)
		sqlite3_bind_int64(st, 13, q->created_before_ms);
	if (q->modified_after_ms)
		sqlite3_bind_int64(st, 14, q->modified_after_ms);
	if (q->modified_before_ms)
		sqlite3_bind_int64(st, 15, q->modified_before_ms);
	if (q->instance_type)
		sqlite3_bind_text(st, 18, q->instance_type, -1,
				  SQLITE_TRANSIENT);
	if (q->tag_key) {
		sqlite3_bind_text(st, 24, q->tag_key, -1, SQLITE_TRANSIENT);
		if (q->tag_value)
			sqlite3_bind_text(st, 25, q->tag_value, -1,
					  SQLITE_TRANSIENT);
	}
	if (have_key) {
		sqlite3_bind_text(st, 20, key->text, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 21, key->id);
		sqlite3_bind_text(st, 22, key->text, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 23, key->creation_ms);
	}
	/* One row more than asked tells whether another page exists. */
	sqlite3_bind_int(st, 30, limit + 1);
}

/* A row of list_sql()'s SELECT: the job without its transitions. */
static void list_row(sqlite3_stmt *st, struct db_job *j)
{
	j->id = sqlite3_column_int64(st, 0);
	j->name = xstrdup((const char *)sqlite3_column_text(st, 1));
	j->arn = xstrdup((const char *)sqlite3_column_text(st, 2));
	j->status = xstrdup((const char *)sqlite3_column_text(st, 3));
	j->secondary_status = xstrdup((const char *)sqlite3_column_text(st, 4));
	if (sqlite3_column_text(st, 8))
		j->instance_type =
			xstrdup((const char *)sqlite3_column_text(st, 8));
	j->instance_count = sqlite3_column_int(st, 9);
	j->attempt = sqlite3_column_int(st, 16);
	j->owner = xstrdup((const char *)sqlite3_column_text(st, 17));
	j->creation_ms = sqlite3_column_int64(st, 10);
	j->last_modified_ms = sqlite3_column_int64(st, 11);
	j->start_ms = sqlite3_column_int64(st, 12);
	j->end_ms = sqlite3_column_int64(st, 13);
	if (sqlite3_column_text(st, 18))
		j->wp_status =
			xstrdup((const char *)sqlite3_column_text(st, 18));
	j->wp_since_ms = sqlite3_column_int64(st, 19);
	j->wp_end_ms = sqlite3_column_int64(st, 20);
	if (sqlite3_column_text(st, 21))
		j->wp_reused_by =
			xstrdup((const char *)sqlite3_column_text(st, 21));
}

/* The token of the page after the one whose last row is last. */
static char *list_next_token(const struct db_list_query *q,
			     const struct db_job *last)
{
	struct page_key nk = { (int)q->sort, q->descending, last->creation_ms,
			       last->id,
			       q->sort == DB_SORT_NAME	 ? last->name :
			       q->sort == DB_SORT_STATUS ? last->status :
							   NULL };

	return token_encode(&nk);
}

int db_job_list(struct db *db, const struct db_list_query *q,
		struct db_job **jobs, size_t *n, char **next_token,
		struct buf *err)
{
	struct buf sql = BUF_INIT;
	struct page_key key = { 0 };
	struct db_job *out = NULL;
	sqlite3_stmt *st = NULL;
	void *handle;
	sqlite3 *conn;
	size_t count = 0;
	int have_key = 0, tagged = 0, many_owned = 0;
	int limit = q->limit < 1 ? 10 : q->limit > 1000 ? 1000 : q->limit;
	int ret = 0;
	int rc;

	*jobs = NULL;
	*n = 0;
	*next_token = NULL;
	if (q->token) {
		if (list_key(q, &key, err))
			return ERR_INVALID;
		have_key = 1;
	}
	conn = db__reader_acquire(db, &handle);
	if (q->tag_key) {
		tagged = tag_count(conn, q, err);
		if (tagged <= 0) {
			/* No job has it: nothing to list. */
			ret = tagged < 0 ? ERR_DB : 0;
			out = xcalloc(1, sizeof(*out));
			goto out;
		}
	}
	if (q->owner && q->sort != DB_SORT_CREATION) {
		many_owned = owner_many(conn, q, err);
		if (many_owned < 0) {
			ret = ERR_DB;
			goto out;
		}
	}
	list_sql(&sql, q, have_key, q->tag_key && tagged <= TAG_FEW,
		 many_owned);
	if (sqlite3_prepare_v2(conn, sql.data, -1, &st, NULL) != SQLITE_OK) {
		(void)buf_addf(err, "cannot prepare list: %s",
			       sqlite3_errmsg(conn));
		ret = ERR_DB;
		goto out;
	}
	list_bind(st, q, &key, have_key, limit);
	out = xcalloc((size_t)limit + 1, sizeof(*out));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		list_row(st, &out[count++]);
	if (rc != SQLITE_DONE) {
		(void)buf_addf(err, "cannot list jobs: %s",
			       sqlite3_errmsg(conn));
		ret = ERR_DB;
		goto out;
	}
	if (count > (size_t)limit) {
		*next_token = list_next_token(q, &out[limit - 1]);
		db_job_release(&out[limit]);
		count = (size_t)limit;
	}
out:
	sqlite3_finalize(st);
	db__reader_release(db, handle);
	buf_release(&sql);
	free(key.text);
	if (ret) {
		while (count)
			db_job_release(&out[--count]);
		free(out);
		out = NULL;
	}
	*jobs = out;
	*n = count;
	return ret;
}
