/*
 * Tests db/list.c: keyset pagination over every sort order, the opaque
 * token, and the ListTrainingJobs filters. The group shares one database
 * of N_JOBS jobs whose expected order the test computes itself; tests that
 * write use their own database.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "db/db.h"
#include "common/buf.h"
#include "common/err.h"

#define T0 1700000000000LL
#define N_JOBS 250
#define N_EXTRA 8

static const char *const statuses[] = { "InProgress", "Completed", "Failed",
					"Stopped", "Stopping" };

/* What the test knows about each job it inserted. */
struct model_job {
	int64_t id;
	char name[40];
	const char *status;
	int64_t creation_ms;
	int64_t modified_ms;
};

struct fixture {
	char dir[256];
	char path[PATH_MAX];
	struct db *db;
	struct model_job jobs[N_JOBS + N_EXTRA];
	size_t n;
};

static void remove_tree(const char *dir)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static int open_fresh(struct fixture *f)
{
	struct buf err = BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	int ret;

	snprintf(f->dir, sizeof(f->dir), "%s/tctl-list-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/trainctl.db", f->dir);
	ret = db_open(f->path, 2, &f->db, &err);
	if (ret)
		fprintf(stderr, "db_open: %s\n", err.data);
	buf_release(&err);
	return ret ? -1 : 0;
}

static int model_insert(struct fixture *f, const char *name, const char *status,
			int64_t creation_ms)
{
	struct model_job *m = &f->jobs[f->n];
	struct buf err = BUF_INIT;
	struct db_job j;
	int ret;

	memset(&j, 0, sizeof(j));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->status = status;
	m->creation_ms = creation_ms;
	m->modified_ms = creation_ms;
	j.name = m->name;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/x";
	j.status = (char *)status;
	j.secondary_status = (char *)status;
	j.request_json = (char *)"{}";
	j.instance_count = 1;
	j.creation_ms = creation_ms;
	ret = db_job_insert(f->db, &j, NULL, &err);
	if (ret)
		fprintf(stderr, "insert %s: %s\n", name, err.data);
	buf_release(&err);
	m->id = j.id;
	f->n++;
	return ret;
}

/*
 * 250 jobs, inserted in a scrambled order so that row ids, names and
 * creation times each order them differently. Jobs 0..29 share creation
 * times in threes (ties broken by id); some names are upper-case, which
 * sorts case-insensitively like the name's collation; statuses cycle.
 * Every seventh job is modified later, for the LastModifiedTime filters.
 */
static int setup_group(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int k;

	if (!f || open_fresh(f)) {
		free(f);
		return -1;
	}
	for (k = 0; k < N_JOBS; k++) {
		int i = (k * 97) % N_JOBS; /* 97 is prime to 250 */
		int64_t creation = i < 30 ? T0 + (i / 3) * 1000 :
					    T0 + (int64_t)i * 1000;
		char name[40];

		snprintf(name, sizeof(name), "%s-%03d-%s",
			 i % 11 == 0 ? "Job" : "job", (i * 37) % N_JOBS,
			 i % 2 ? "odd" : "even");
		if (model_insert(f, name, statuses[i % 5], creation))
			return -1;
	}
	for (k = 0; k < N_JOBS; k += 7) {
		struct db_state_change ch;
		struct buf err = BUF_INIT;

		memset(&ch, 0, sizeof(ch));
		ch.status = f->jobs[k].status;
		ch.secondary = f->jobs[k].status;
		ch.now_ms = T0 + 10000000 + k;
		if (db_job_change_state(f->db, f->jobs[k].name, &ch, &err)) {
			fprintf(stderr, "change: %s\n", err.data);
			return -1;
		}
		buf_release(&err);
		f->jobs[k].modified_ms = ch.now_ms;
	}
	*state = f;
	return 0;
}

static int teardown_group(void **state)
{
	struct fixture *f = *state;

	db_close(f->db);
	remove_tree(f->dir);
	free(f);
	return 0;
}

static int sort_key;
static int sort_desc;

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int model_cmp(const void *pa, const void *pb)
{
	const struct model_job *a = pa;
	const struct model_job *b = pb;
	int c;

	if (sort_key == DB_SORT_NAME) {
		c = strcasecmp(a->name, b->name);
		if (!c)
			c = cmp_i64(a->id, b->id);
	} else if (sort_key == DB_SORT_STATUS) {
		c = strcmp(a->status, b->status);
		if (!c)
			c = cmp_i64(a->creation_ms, b->creation_ms);
		if (!c)
			c = cmp_i64(a->id, b->id);
	} else {
		c = cmp_i64(a->creation_ms, b->creation_ms);
		if (!c)
			c = cmp_i64(a->id, b->id);
	}
	return sort_desc ? -c : c;
}

static void free_page(struct db_job *jobs, size_t n, char *token)
{
	size_t i;

	for (i = 0; i < n; i++)
		db_job_release(&jobs[i]);
	free(jobs);
	free(token);
}

/*
 * Pages through q with limit and appends every row id to ids (capacity
 * cap). Returns the number of rows, or -1 when a call failed.
 */
static int page_all(struct db *db, struct db_list_query q, int64_t *ids,
		    size_t cap, int *pages)
{
	struct buf err = BUF_INIT;
	char *token = NULL;
	size_t total = 0;

	*pages = 0;
	do {
		struct db_job *jobs;
		char *next;
		size_t n, i;

		q.token = token;
		if (db_job_list(db, &q, &jobs, &n, &next, &err)) {
			fprintf(stderr, "list: %s\n", err.data);
			free(token);
			buf_release(&err);
			return -1;
		}
		(*pages)++;
		/* Only the last page may be short, and no page is empty. */
		assert_true(n > 0 || (!token && !next));
		if (next)
			assert_int_equal(n, q.limit);
		for (i = 0; i < n; i++) {
			assert_true(total < cap);
			assert_int_equal(jobs[i].n_transitions, 0);
			assert_null(jobs[i].request_json);
			assert_non_null(jobs[i].name);
			ids[total++] = jobs[i].id;
		}
		free_page(jobs, n, token);
		token = next;
	} while (token);
	buf_release(&err);
	return (int)total;
}

/*
 * Pages through the jobs of status (all when NULL) created strictly after
 * after and before before (0: unbounded) in the sort order and checks
 * every row against the model's order.
 */
static void check_window_order(struct fixture *f, const char *status,
			       int64_t after, int64_t before, int sort,
			       int desc, int limit)
{
	struct model_job want[N_JOBS + N_EXTRA];
	struct db_list_query q;
	int64_t ids[N_JOBS + N_EXTRA];
	char seen[N_JOBS + N_EXTRA];
	int pages;
	int n;
	size_t i, k, nwant = 0;

	for (i = 0; i < f->n; i++)
		if ((!status || !strcmp(f->jobs[i].status, status)) &&
		    (!after || f->jobs[i].creation_ms > after) &&
		    (!before || f->jobs[i].creation_ms < before))
			want[nwant++] = f->jobs[i];
	sort_key = sort;
	sort_desc = desc;
	qsort(want, nwant, sizeof(want[0]), model_cmp);

	memset(&q, 0, sizeof(q));
	q.limit = limit;
	q.status = status;
	q.created_after_ms = after;
	q.created_before_ms = before;
	q.sort = (enum db_sort)sort;
	q.descending = desc;
	n = page_all(f->db, q, ids, N_JOBS + N_EXTRA, &pages);
	assert_int_equal(n, (int)nwant);
	assert_int_equal(pages, nwant ? ((int)nwant + limit - 1) / limit : 1);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < nwant; i++) {
		for (k = 0; k < f->n && f->jobs[k].id != ids[i]; k++)
			;
		assert_true(k < f->n);
		assert_false(seen[k]);
		seen[k] = 1;
		if (want[i].id != ids[i])
			fail_msg("sort %d desc %d: row %zu is id %lld (%s), "
				 "expected id %lld (%s)",
				 sort, desc, i, (long long)ids[i],
				 f->jobs[k].name, (long long)want[i].id,
				 want[i].name);
	}
}

static void check_status_order(struct fixture *f, const char *status, int sort,
			       int desc, int limit)
{
	check_window_order(f, status, 0, 0, sort, desc, limit);
}

static void check_order(struct fixture *f, int sort, int desc, int limit)
{
	check_status_order(f, NULL, sort, desc, limit);
}

static void test_page_creation_asc(void **state)
{
	check_order(*state, DB_SORT_CREATION, 0, 7);
}

static void test_page_creation_desc(void **state)
{
	check_order(*state, DB_SORT_CREATION, 1, 7);
}

static void test_page_name_asc(void **state)
{
	check_order(*state, DB_SORT_NAME, 0, 7);
}

static void test_page_name_desc(void **state)
{
	check_order(*state, DB_SORT_NAME, 1, 7);
}

static void test_page_status_asc(void **state)
{
	check_order(*state, DB_SORT_STATUS, 0, 7);
}

static void test_page_status_desc(void **state)
{
	check_order(*state, DB_SORT_STATUS, 1, 7);
}

static void test_page_sizes(void **state)
{
	/* A limit that divides the total: no empty last page. */
	check_order(*state, DB_SORT_CREATION, 0, 10);
	check_order(*state, DB_SORT_NAME, 1, 1);
	check_order(*state, DB_SORT_STATUS, 0, 249);
	check_order(*state, DB_SORT_STATUS, 1, 250);
	check_order(*state, DB_SORT_CREATION, 1, 1000);
}

/* Returns the first page's token for the given order (caller frees). */
static char *first_token(struct db *db, int sort, int desc)
{
	struct db_list_query q;
	struct buf err = BUF_INIT;
	struct db_job *jobs;
	char *next;
	size_t n;

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.sort = (enum db_sort)sort;
	q.descending = desc;
	assert_int_equal(db_job_list(db, &q, &jobs, &n, &next, &err), 0);
	assert_non_null(next);
	free_page(jobs, n, NULL);
	buf_release(&err);
	return next;
}

static void expect_invalid(struct db *db, const struct db_list_query *q)
{
	struct buf err = BUF_INIT;
	struct db_job *jobs = (struct db_job *)&err;
	char *next = (char *)"x";
	size_t n = 99;

	assert_int_equal(db_job_list(db, q, &jobs, &n, &next, &err),
			 ERR_INVALID);
	assert_null(jobs);
	assert_int_equal(n, 0);
	assert_null(next);
	assert_true(err.len > 0);
	buf_release(&err);
}

static void test_token_wrong_order(void **state)
{
	struct fixture *f = *state;
	struct db_list_query q;
	int s, d, s2, d2;

	for (s = 0; s <= DB_SORT_STATUS; s++) {
		for (d = 0; d <= 1; d++) {
			char *tok = first_token(f->db, s, d);

			for (s2 = 0; s2 <= DB_SORT_STATUS; s2++) {
				for (d2 = 0; d2 <= 1; d2++) {
					if (s2 == s && d2 == d)
						continue;
					memset(&q, 0, sizeof(q));
					q.limit = 7;
					q.sort = (enum db_sort)s2;
					q.descending = d2;
					q.token = tok;
					expect_invalid(f->db, &q);
				}
			}
			free(tok);
		}
	}
}

static char *hex(const char *raw)
{
	size_t len = strlen(raw);
	char *out = malloc(2 * len + 1);
	size_t i;

	assert_non_null(out);
	for (i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", (unsigned char)raw[i]);
	out[2 * len] = '\0';
	return out;
}

static void test_token_garbage(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {
		"",	"a",	      "abc",
		"zz",	"0g",	      "not a token at all",
		"%%%%", "31",	      "317c307c307c", /* "1|0|0|" truncated */
		"00",	"317c00307c",		      /* embedded NUL */
	};
	/* Hex-encoded raw tokens that are malformed. */
	static const char *const bad_raw[] = {
		"1|",	       "1|0|0|5|",   "2|0|0|5|7|", "1|9|0|5|7|",
		"1|-1|0|5|7|", "1|0|2|5|7|", "1|0|0|x|7|", "1|0|0|5|y|",
		"1|0|0|5|7",   "1x0|0|5|7|", "|0|0|5|7|",  "1|0|0|5",
	};
	/*
	 * Odd ones that may be taken or refused (an empty number, a byte
	 * that is not UTF-8, another order's key): only "no crash, no
	 * leak" is checked for them.
	 */
	static const char *const odd_raw[] = {
		"1|0||5|7|",
		"1|0|0|5|7|\xff",
		"1|1|0|5|7|a",
		"1|2|1|5|7|a",
		"1|0|0|99999999999999999999|7|",
		"1|0|0|-5|-7|",
	};
	struct db_list_query q;
	char longtok[5001];
	char *tok;
	size_t i;

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q.token = bad[i];
		expect_invalid(f->db, &q);
	}
	for (i = 0; i < sizeof(bad_raw) / sizeof(bad_raw[0]); i++) {
		tok = hex(bad_raw[i]);
		q.token = tok;
		expect_invalid(f->db, &q);
		free(tok);
	}
	for (i = 0; i < sizeof(odd_raw) / sizeof(odd_raw[0]); i++) {
		struct buf err = BUF_INIT;
		struct db_job *jobs;
		char *next;
		size_t n;
		int ret;

		tok = hex(odd_raw[i]);
		q.token = tok;
		ret = db_job_list(f->db, &q, &jobs, &n, &next, &err);
		assert_true(ret == 0 || ret == ERR_INVALID);
		if (!ret)
			free_page(jobs, n, next);
		buf_release(&err);
		free(tok);
	}

	/* An upper-case rendering of a valid token is not ours. */
	tok = first_token(f->db, DB_SORT_CREATION, 0);
	for (i = 0; tok[i]; i++)
		tok[i] = (char)toupper((unsigned char)tok[i]);
	q.token = tok;
	if (strpbrk(tok, "ABCDEF"))
		expect_invalid(f->db, &q);
	free(tok);

	memset(longtok, 'a', sizeof(longtok) - 1);
	longtok[sizeof(longtok) - 1] = '\0';
	q.token = longtok;
	expect_invalid(f->db, &q);
}

/* The index in f->jobs of the job with row id id. */
static size_t model_find(const struct fixture *f, int64_t id)
{
	size_t k;

	for (k = 0; k < f->n && f->jobs[k].id != id; k++)
		;
	assert_true(k < f->n);
	return k;
}

static void test_token_survives_inserts(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct db_list_query q;
	struct buf err = BUF_INIT;
	int64_t ids[N_JOBS + N_EXTRA];
	char seen[N_JOBS + N_EXTRA];
	char *token = NULL;
	size_t total = 0;
	int page = 0;
	size_t i, k;

	(void)state;
	assert_non_null(f);
	assert_int_equal(open_fresh(f), 0);
	for (i = 0; i < 40; i++) {
		char name[32];

		snprintf(name, sizeof(name), "base-%02zu", i);
		assert_int_equal(model_insert(f, name, "InProgress",
					      T0 + (int64_t)(i / 2) * 100),
				 0);
	}
	memset(&q, 0, sizeof(q));
	q.limit = 7;
	do {
		struct db_job *jobs;
		char *next;
		size_t n;

		q.token = token;
		assert_int_equal(db_job_list(f->db, &q, &jobs, &n, &next, &err),
				 0);
		for (i = 0; i < n; i++) {
			assert_true(total < N_JOBS + N_EXTRA);
			ids[total++] = jobs[i].id;
		}
		free_page(jobs, n, token);
		token = next;
		/*
		 * Between pages, jobs arrive: some later than everything (they
		 * show up at the end), one at the same time as the boundary
		 * row and one earlier than the boundary (both may be missed,
		 * but must not shift what was there).
		 */
		if (page == 1 || page == 3) {
			char name[32];

			snprintf(name, sizeof(name), "late-%d", page);
			assert_int_equal(model_insert(f, name, "InProgress",
						      T0 + 100000 + page),
					 0);
			snprintf(name, sizeof(name), "early-%d", page);
			assert_int_equal(model_insert(f, name, "InProgress",
						      T0 + 50),
					 0);
			snprintf(name, sizeof(name), "tie-%d", page);
			assert_int_equal(
				model_insert(
					f, name, "InProgress",
					f->jobs[model_find(f, ids[total - 1])]
						.creation_ms),
				0);
		}
		page++;
	} while (token);

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < total; i++) {
		k = model_find(f, ids[i]);
		assert_false(seen[k]);
		seen[k] = 1;
		if (i)
			assert_true(
				f->jobs[model_find(f, ids[i - 1])].creation_ms <=
				f->jobs[k].creation_ms);
	}
	/* Every original row exactly once, and both late ones at the end. */
	for (k = 0; k < 40; k++)
		assert_true(seen[k]);
	for (k = 40; k < f->n; k++)
		if (!strncmp(f->jobs[k].name, "late-", 5))
			assert_true(seen[k]);
	assert_true(total >= 42);
	buf_release(&err);
	teardown_group((void **)&f);
}

/* Runs q over every page and returns how many rows matched. */
static int count_all(struct fixture *f, struct db_list_query q)
{
	int64_t ids[N_JOBS + N_EXTRA];
	int pages;

	return page_all(f->db, q, ids, N_JOBS + N_EXTRA, &pages);
}

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return n == 0;
}

static void test_filter_name(void **state)
{
	struct fixture *f = *state;
	static const char *const needles[] = { "JOB-01", "odd",	 "-2",
					       "Job-",	 "EVEN", "nothing",
					       "%",	 "_",	 "job-100-",
					       "\\",	 "o%d",	 "o_d" };
	struct db_list_query q;
	size_t i, k;

	for (i = 0; i < sizeof(needles) / sizeof(needles[0]); i++) {
		int want = 0;

		for (k = 0; k < f->n; k++)
			want += contains_ci(f->jobs[k].name, needles[i]);
		memset(&q, 0, sizeof(q));
		q.limit = 7;
		q.name_contains = needles[i];
		q.sort = DB_SORT_NAME;
		if (count_all(f, q) != want)
			fail_msg("NameContains '%s': want %d", needles[i],
				 want);
	}
	/* "Job-" and "job-" match every job: the filter ignores case. */
	memset(&q, 0, sizeof(q));
	q.limit = 50;
	q.name_contains = "JOB-";
	assert_int_equal(count_all(f, q), N_JOBS);
}

static void test_filter_status(void **state)
{
	struct fixture *f = *state;
	struct db_list_query q;
	size_t i;

	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		memset(&q, 0, sizeof(q));
		q.limit = 7;
		q.status = statuses[i];
		q.sort = (enum db_sort)(i % 3);
		q.descending = (int)(i % 2);
		assert_int_equal(count_all(f, q), N_JOBS / 5);
	}
	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.status = "Deleting";
	assert_int_equal(count_all(f, q), 0);

	/* Combined with a name filter. */
	q.status = "Failed";
	q.name_contains = "ODD";
	{
		int want = 0;

		for (i = 0; i < f->n; i++)
			want += !strcmp(f->jobs[i].status, "Failed") &&
				contains_ci(f->jobs[i].name, "odd");
		assert_int_equal(count_all(f, q), want);
	}
}

/* The status page's status filter with each sort, walked page by page. */
static void test_filter_status_sorted(void **state)
{
	size_t i;
	int sort;

	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		for (sort = DB_SORT_CREATION; sort <= DB_SORT_STATUS; sort++) {
			check_status_order(*state, statuses[i], sort, 0, 7);
			check_status_order(*state, statuses[i], sort, 1, 6);
		}
	check_status_order(*state, "Deleting", DB_SORT_NAME, 0, 7);
}

static void test_filter_creation_time(void **state)
{
	struct fixture *f = *state;
	struct db_list_query q;
	int64_t a = T0 + 50 * 1000; /* exactly job i=50's creation time */
	int64_t b = T0 + 120 * 1000;
	int want;
	size_t k;

	/* Bounds are exclusive. */
	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.created_after_ms = a;
	for (want = 0, k = 0; k < f->n; k++)
		want += f->jobs[k].creation_ms > a;
	assert_int_equal(count_all(f, q), want);
	assert_int_equal(want, N_JOBS - 51);

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.created_before_ms = a;
	q.descending = 1;
	for (want = 0, k = 0; k < f->n; k++)
		want += f->jobs[k].creation_ms < a;
	assert_int_equal(count_all(f, q), want);

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.created_after_ms = a;
	q.created_before_ms = b;
	q.sort = DB_SORT_NAME;
	assert_int_equal(count_all(f, q), 69);

	/* The tied creation times 0..2 (all at T0). */
	memset(&q, 0, sizeof(q));
	q.limit = 2;
	q.created_before_ms = T0 + 1;
	assert_int_equal(count_all(f, q), 3);

	/* An empty window. */
	q.created_after_ms = b;
	q.created_before_ms = a;
	assert_int_equal(count_all(f, q), 0);
}

/*
 * A created window in each order, walked page by page: in status order
 * the statuses are named to the planner (db/list.c), which must neither
 * lose nor reorder a row; windows with ties at an edge, one holding a
 * single status, and none.
 */
static void test_filter_creation_sorted(void **state)
{
	static const int64_t windows[][2] = {
		{ T0 + 50 * 1000, T0 + 120 * 1000 },
		{ T0 + 1000, 0 }, /* after the first tie, open-ended */
		{ 0, T0 + 4001 }, /* the ties 0..14 */
		{ T0 + 199 * 1000, T0 + 201 * 1000 }, /* job 200 only */
		{ T0 + 120 * 1000, T0 + 50 * 1000 },  /* empty */
	};
	size_t w;
	int sort;

	for (w = 0; w < sizeof(windows) / sizeof(windows[0]); w++)
		for (sort = DB_SORT_CREATION; sort <= DB_SORT_STATUS; sort++) {
			check_window_order(*state, NULL, windows[w][0],
					   windows[w][1], sort, 0, 7);
			check_window_order(*state, NULL, windows[w][0],
					   windows[w][1], sort, 1, 4);
			check_window_order(*state, "Failed", windows[w][0],
					   windows[w][1], sort, 1, 3);
		}
}

static void test_filter_modified_time(void **state)
{
	struct fixture *f = *state;
	struct db_list_query q;
	int64_t cut = T0 + 10000000 + 100;
	int want;
	size_t k;

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.modified_after_ms = T0 + 10000000;
	for (want = 0, k = 0; k < f->n; k++)
		want += f->jobs[k].modified_ms > T0 + 10000000;
	/* Job k=0 was modified at exactly the bound: excluded. */
	assert_int_equal(want, (N_JOBS + 6) / 7 - 1);
	assert_int_equal(count_all(f, q), want);

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.modified_before_ms = cut;
	q.sort = DB_SORT_STATUS;
	for (want = 0, k = 0; k < f->n; k++)
		want += f->jobs[k].modified_ms < cut;
	assert_int_equal(count_all(f, q), want);

	memset(&q, 0, sizeof(q));
	q.limit = 7;
	q.modified_after_ms = T0 + 10000000 - 1;
	q.modified_before_ms = cut;
	for (want = 0, k = 0; k < f->n; k++)
		want += f->jobs[k].modified_ms >= T0 + 10000000 &&
			f->jobs[k].modified_ms < cut;
	assert_int_equal(want, 15);
	assert_int_equal(count_all(f, q), want);
}

/*
 * The tag filter. A tag on few jobs is looked up through the tag's index
 * and the matches sorted; one on many is tested job by job in the
 * order's index. Either way every tagged job comes once, in order.
 */
static void test_filter_tag(void **state)
{
	enum { N = 1100 };
	struct fixture *f = calloc(1, sizeof(*f));
	int64_t *ids = calloc(N + 1, sizeof(*ids)),
		*made = calloc(N + 1, sizeof(*made));
	static const struct {
		const char *key, *value;
		int want;
	} cases[] = { { "all", "yes", N },
		      { "rare", "yes", N / 100 },
		      { "rare", NULL, N / 100 },
		      { "rare", "no", 0 },
		      { "none", NULL, 0 } };
	struct buf err = BUF_INIT;
	struct db_list_query q;
	struct db_tag tags[2] = { { (char *)"all", (char *)"yes" },
				  { (char *)"rare", (char *)"yes" } };
	int i, c, sort, desc, pages;

	(void)state;
	assert_true(f && ids && made);
	assert_int_equal(open_fresh(f), 0);
	for (i = 0; i < N; i++) {
		struct db_job j;
		char name[40];

		memset(&j, 0, sizeof(j));
		/* Creation order differs from name and row order. */
		snprintf(name, sizeof(name), "tag-%04d", (i * 7) % N);
		j.name = name;
		j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
				"training-job/x";
		j.status = j.secondary_status = (char *)statuses[i % 5];
		j.request_json = (char *)"{}";
		j.instance_count = 1;
		j.creation_ms = T0 + (int64_t)((i * 13) % N) * 1000;
		assert_int_equal(db_job_insert(f->db, &j, NULL, &err), 0);
		assert_int_equal(j.id, i + 1);
		made[i] = j.creation_ms;
		assert_int_equal(db_tags_add(f->db, DB_TAGS_JOB, name, tags,
					     i % 100 ? 1 : 2, 50, &err),
				 0);
	}
	for (c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++)
		for (sort = DB_SORT_CREATION; sort <= DB_SORT_NAME; sort++)
			for (desc = 0; desc < 2; desc++) {
				int n, k;

				memset(&q, 0, sizeof(q));
				q.limit = cases[c].want > 100 ? 100 : 4;
				q.tag_key = cases[c].key;
				q.tag_value = cases[c].value;
				q.sort = (enum db_sort)sort;
				q.descending = desc;
				n = page_all(f->db, q, ids, N, &pages);
				if (n != cases[c].want)
					fail_msg("tag %s=%s: %d jobs, want %d",
						 cases[c].key,
						 cases[c].value ?
							 cases[c].value :
							 "*",
						 n, cases[c].want);
				/* Row ids are 1..N in insert order. */
				for (k = 1; sort == DB_SORT_CREATION && k < n;
				     k++) {
					int64_t a = made[ids[k - 1] - 1],
						b = made[ids[k] - 1];

					assert_true(desc ? a >= b : a <= b);
				}
			}
	free(ids);
	free(made);
	buf_release(&err);
	teardown_group((void **)&f);
}

struct owned_job {
	char name[16];
	const char *status, *owner;
	int64_t creation_ms;
};

/* a before b in sort order (ascending) < 0, after > 0. */
static int owned_cmp(const struct owned_job *a, const struct owned_job *b,
		     int sort)
{
	int c = sort == DB_SORT_NAME   ? strcmp(a->name, b->name) :
		sort == DB_SORT_STATUS ? strcmp(a->status, b->status) :
					 0;

	return c ? c : cmp_i64(a->creation_ms, b->creation_ms);
}

/*
 * A user's own jobs: an owner of more than 2,000 jobs is tested along the
 * order's index, one of fewer found through jobs_owner and sorted
 * (db/list.c); both, and an owner of none, walked page by page in every
 * order against what was inserted.
 */
static void test_filter_owner(void **state)
{
	enum { N = 2200 };
	struct fixture *f = calloc(1, sizeof(*f));
	int64_t *ids = calloc(N + 1, sizeof(*ids));
	struct owned_job *made = calloc(N, sizeof(*made));
	static const struct {
		const char *owner;
		int want;
	} cases[] = { { "many", N - N / 100 },
		      { "few", N / 100 },
		      { "nobody", 0 } };
	struct buf err = BUF_INIT;
	struct db_list_query q;
	int i, c, sort, desc, pages;

	(void)state;
	assert_true(f && ids && made);
	assert_int_equal(open_fresh(f), 0);
	for (i = 0; i < N; i++) {
		struct db_job j;

		memset(&j, 0, sizeof(j));
		/* Creation order differs from name and row order; creation
		 * times are distinct. */
		snprintf(made[i].name, sizeof(made[i].name), "own-%04d",
			 (i * 7) % N);
		made[i].status = statuses[i % 5];
		made[i].owner = i % 100 ? "many" : "few";
		made[i].creation_ms = T0 + (int64_t)((i * 13) % N) * 1000;
		j.name = made[i].name;
		j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
				"training-job/x";
		j.status = j.secondary_status = (char *)made[i].status;
		j.owner = (char *)made[i].owner;
		j.request_json = (char *)"{}";
		j.instance_count = 1;
		j.creation_ms = made[i].creation_ms;
		assert_int_equal(db_job_insert(f->db, &j, NULL, &err), 0);
		assert_int_equal(j.id, i + 1);
	}
	for (c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++)
		for (sort = DB_SORT_CREATION; sort <= DB_SORT_STATUS; sort++)
			for (desc = 0; desc < 2; desc++) {
				int n, k;

				memset(&q, 0, sizeof(q));
				q.limit = cases[c].want > 100 ? 97 : 4;
				q.owner = cases[c].owner;
				q.sort = (enum db_sort)sort;
				q.descending = desc;
				n = page_all(f->db, q, ids, N, &pages);
				if (n != cases[c].want)
					fail_msg("owner %s, sort %d: %d jobs, "
						 "want %d",
						 cases[c].owner, sort, n,
						 cases[c].want);
				/* Row ids are 1..N in insert order. */
				for (k = 0; k < n; k++) {
					const struct owned_job *b =
						&made[ids[k] - 1];
					int cmp =
						k ? owned_cmp(&made[ids[k - 1] -
								    1],
							      b, sort) :
						    0;

					assert_string_equal(b->owner,
							    cases[c].owner);
					if (desc ? cmp < 0 : cmp > 0)
						fail_msg("owner %s, sort %d "
							 "desc %d: row %d "
							 "out of order",
							 cases[c].owner, sort,
							 desc, k);
				}
			}
	free(ids);
	free(made);
	buf_release(&err);
	teardown_group((void **)&f);
}

static void test_list_empty(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct db_list_query q;
	struct buf err = BUF_INIT;
	struct db_job *jobs;
	char *next;
	size_t n = 5;

	(void)state;
	assert_non_null(f);
	assert_int_equal(open_fresh(f), 0);
	memset(&q, 0, sizeof(q));
	q.limit = 7;
	assert_int_equal(db_job_list(f->db, &q, &jobs, &n, &next, &err), 0);
	assert_int_equal(n, 0);
	assert_null(next);
	free(jobs);
	buf_release(&err);
	teardown_group((void **)&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_creation_asc),
		cmocka_unit_test(test_page_creation_desc),
		cmocka_unit_test(test_page_name_asc),
		cmocka_unit_test(test_page_name_desc),
		cmocka_unit_test(test_page_status_asc),
		cmocka_unit_test(test_page_status_desc),
		cmocka_unit_test(test_page_sizes),
		cmocka_unit_test(test_token_wrong_order),
		cmocka_unit_test(test_token_garbage),
		cmocka_unit_test(test_token_survives_inserts),
		cmocka_unit_test(test_filter_name),
		cmocka_unit_test(test_filter_status),
		cmocka_unit_test(test_filter_status_sorted),
		cmocka_unit_test(test_filter_creation_time),
		cmocka_unit_test(test_filter_creation_sorted),
		cmocka_unit_test(test_filter_tag),
		cmocka_unit_test(test_filter_owner),
		cmocka_unit_test(test_filter_modified_time),
		cmocka_unit_test(test_list_empty),
	};

	return cmocka_run_group_tests_name("db/list", tests, setup_group,
					   teardown_group);
}
