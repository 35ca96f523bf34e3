/*
 * Tests api/validate.c against the fixtures in tests/api/data, one test
 * case per file:
 *
 *   valid/NAME.json     must validate (against CreateTrainingJobRequest,
 *                       or the shape NAME.expect names)
 *   invalid/NAME.json   must fail as invalid/NAME.expect says:
 *                         shape SHAPE     shape to validate against
 *                         count N         "N validation error(s) detected"
 *                         error TEXT      a substring of the message
 *                                         (repeatable)
 *
 * plus cases for the tables, threads, caps and speed. Run from the
 * repository root (tests/run.sh does).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#define PCRE2_CODE_UNIT_WIDTH 8

#include <dirent.h>
#include <jansson.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/model.h"
#include "api/validate.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define DATA_DIR "tests/api/data"
#define MAX_EXPECT 16

struct fixture {
	char *name; /* "invalid/bad_name_pattern" */
	char *json_path;
	char *expect_path; /* NULL when there is no .expect file */
	int valid;
};

struct expect {
	char *shape;
	int count; /* -1: not checked */
	unsigned nerrors;
	char *errors[MAX_EXPECT];
};

static char *path_join(const char *dir, const char *name, const char *ext)
{
	struct buf b = BUF_INIT;

	if (buf_addf(&b, "%s/%s%s", dir, name, ext))
		fail_msg("path too long");
	return buf_detach(&b, NULL);
}

static int file_exists(const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	fclose(f);
	return 1;
}

static void read_expect(const struct fixture *fx, struct expect *ex)
{
	char line[2048];
	size_t n;
	FILE *f;

	memset(ex, 0, sizeof(*ex));
	ex->shape = xstrdup("CreateTrainingJobRequest");
	ex->count = -1;
	if (!fx->expect_path)
		return;
	f = fopen(fx->expect_path, "r");
	if (!f)
		fail_msg("cannot open %s", fx->expect_path);
	while (fgets(line, sizeof(line), f)) {
		n = strlen(line);
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		if (!strncmp(line, "shape ", 6)) {
			free(ex->shape);
			ex->shape = xstrdup(line + 6);
		} else if (!strncmp(line, "count ", 6)) {
			ex->count = atoi(line + 6);
		} else if (!strncmp(line, "error ", 6)) {
			if (ex->nerrors == MAX_EXPECT)
				fail_msg("%s: too many error lines",
					 fx->expect_path);
			ex->errors[ex->nerrors++] = xstrdup(line + 6);
		} else {
			fail_msg("%s: bad line '%s'", fx->expect_path, line);
		}
	}
	fclose(f);
}

static void expect_release(struct expect *ex)
{
	unsigned i;

	free(ex->shape);
	for (i = 0; i < ex->nerrors; i++)
		free(ex->errors[i]);
}

static void run_fixture(void **state)
{
	const struct fixture *fx = *state;
	struct buf err = BUF_INIT;
	struct expect ex;
	json_error_t jerr;
	char prefix[64];
	json_t *root;
	unsigned i;
	int ret;

	read_expect(fx, &ex);
	root = json_load_file(fx->json_path,
			      JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root)
		fail_msg("%s:%d: %s", fx->json_path, jerr.line, jerr.text);
	ret = api_validate(ex.shape, root, &err);
	if (fx->valid) {
		if (ret)
			fail_msg("%s against %s: %d %s", fx->name, ex.shape,
				 ret, err.data);
	} else {
		if (ret != ERR_INVALID)
			fail_msg("%s against %s: got %d, want ERR_INVALID",
				 fx->name, ex.shape, ret);
		if (!ex.nerrors)
			fail_msg("%s: no 'error' line in %s", fx->name,
				 fx->expect_path ? fx->expect_path : "(none)");
		for (i = 0; i < ex.nerrors; i++) {
			if (!strstr(err.data, ex.errors[i]))
				fail_msg("%s:\n  message: %s\n  lacks:   %s",
					 fx->name, err.data, ex.errors[i]);
		}
		if (ex.count >= 0) {
			snprintf(prefix, sizeof(prefix),
				 "%d validation error%s detected: ", ex.count,
				 ex.count == 1 ? "" : "s");
			if (strncmp(err.data, prefix, strlen(prefix)))
				fail_msg(
					"%s:\n  message: %s\n  want prefix: %s",
					fx->name, err.data, prefix);
		}
	}
	json_decref(root);
	buf_release(&err);
	expect_release(&ex);
}

static json_t *load(const char *rel)
{
	json_error_t jerr;
	json_t *root;
	char *path = path_join(DATA_DIR, rel, "");

	root = json_load_file(path, 0, &jerr);
	if (!root)
		fail_msg("%s:%d: %s", path, jerr.line, jerr.text);
	free(path);
	return root;
}

static int validate_text(const char *shape, const char *json, struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loads(json, JSON_ALLOW_NUL, &jerr);
	int ret;

	if (!root)
		fail_msg("bad test JSON: %s: %s", jerr.text, json);
	buf_reset(err);
	ret = api_validate(shape, root, err);
	json_decref(root);
	return ret;
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* Runs first, so the threads race to compile the patterns. */
#define THREADS 8
#define THREAD_ROUNDS 200

struct thread_arg {
	json_t *good;
	json_t *bad;
	int failures;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct buf err = BUF_INIT;
	int i;

	for (i = 0; i < THREAD_ROUNDS; i++) {
		buf_reset(&err);
		if (api_validate("CreateTrainingJobRequest", a->good, &err))
			a->failures++;
		buf_reset(&err);
		if (api_validate("CreateTrainingJobRequest", a->bad, &err) !=
			    ERR_INVALID ||
		    !strstr(err.data, "at 'trainingJobName'"))
			a->failures++;
	}
	buf_release(&err);
	return NULL;
}

static void test_threads(void **state)
{
	struct thread_arg args[THREADS];
	pthread_t tids[THREADS];
	json_t *good = load("valid/full_sdk_pytorch.json");
	json_t *bad = load("invalid/bad_name_pattern.json");
	int i;

	(void)state;
	for (i = 0; i < THREADS; i++) {
		args[i].good = good;
		args[i].bad = bad;
		args[i].failures = 0;
		assert_int_equal(pthread_create(&tids[i], NULL, thread_main,
						&args[i]),
				 0);
	}
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(tids[i], NULL), 0);
		assert_int_equal(args[i].failures, 0);
	}
	json_decref(good);
	json_decref(bad);
}

static void test_unknown_shape(void **state)
{
	struct buf err = BUF_INIT;
	json_t *v = json_object();

	(void)state;
	assert_int_equal(api_validate("NoSuchShape", v, &err), ERR_NOTFOUND);
	assert_non_null(strstr(err.data, "NoSuchShape"));
	buf_reset(&err);
	assert_int_equal(api_validate("", v, &err), ERR_NOTFOUND);
	json_decref(v);
	buf_release(&err);
}

/* Every index in range, names sorted, enum_sorted a sorted permutation. */
static void test_model_tables(void **state)
{
	const struct api__shape *sh;
	size_t i, j;
	int k;

	(void)state;
	assert_true(api__nshapes > 100);
	assert_true(api__max_depth > 1);
	for (i = 0; i < api__nshapes; i++) {
		sh = &api__shapes[i];
		assert_non_null(sh->name);
		if (i)
			assert_true(strcmp(api__shapes[i - 1].name, sh->name) <
				    0);
		assert_true(sh->pattern < (int)api__npatterns);
		assert_true(sh->member < (int)api__nshapes);
		assert_true(sh->key < (int)api__nshapes);
		assert_true(sh->value < (int)api__nshapes);
		assert_int_equal(sh->member >= 0, sh->kind == API__LIST);
		assert_int_equal(sh->key >= 0, sh->kind == API__MAP);
		assert_int_equal(sh->value >= 0, sh->kind == API__MAP);
		for (j = 0; j < sh->nmembers; j++)
			assert_true(sh->members[j].shape < api__nshapes);
		for (j = 0; j < sh->nenums; j++) {
			assert_non_null(sh->enums[j]);
			assert_true(sh->enum_sorted[j] < sh->nenums);
			if (j)
				assert_true(
					strcmp(sh->enums[sh->enum_sorted[j - 1]],
					       sh->enums[sh->enum_sorted[j]]) <
					0);
		}
		if (sh->nenums)
			assert_null(sh->enums[sh->nenums]);
	}
	/* The merge keeps what the brief and the real service need. */
	k = -1;
	for (i = 0; i < api__nshapes; i++)
		if (!strcmp(api__shapes[i].name, "CreateTrainingJobRequest"))
			k = (int)i;
	assert_true(k >= 0);
	sh = &api__shapes[k];
	for (j = 0; j < sh->nmembers; j++) {
		if (!strcmp(sh->members[j].name, "AlgorithmSpecification") ||
		    !strcmp(sh->members[j].name, "ResourceConfig") ||
		    !strcmp(sh->members[j].name, "RoleArn"))
			assert_int_equal(sh->members[j].required, 1);
		if (!strcmp(sh->members[j].name, "StoppingCondition"))
			assert_int_equal(sh->members[j].required, 0);
	}
}

/* Every model pattern compiles in PCRE2 as validate.c compiles it. */
static void test_patterns_compile(void **state)
{
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off;
	pcre2_code *re;
	const char *src;
	size_t i;
	int code;

	(void)state;
	for (i = 0; i < api__npatterns; i++) {
		src = api__patterns[i].regex ? api__patterns[i].regex :
					       api__patterns[i].text;
		re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
				   PCRE2_UTF | PCRE2_ANCHORED |
					   PCRE2_ENDANCHORED,
				   &code, &off, NULL);
		if (!re) {
			pcre2_get_error_message(code, msg, sizeof(msg));
			fail_msg("pattern %zu '%s' at %zu: %s", i, src,
				 (size_t)off, (char *)msg);
		}
		pcre2_code_free(re);
	}
}

/* Twelve errors: all counted, ten spelled out. */
static void test_error_cap(void **state)
{
	struct buf err = BUF_INIT;
	json_t *v = load("invalid/many_errors.json");

	(void)state;
	assert_int_equal(api_validate("CreateTrainingJobRequest", v, &err),
			 ERR_INVALID);
	assert_int_equal(
		strncmp(err.data, "12 validation errors detected: ", 31), 0);
	assert_int_equal(count_str(err.data, "failed to satisfy constraint"),
			 10);
	assert_int_equal(count_str(err.data, "; Value "), 9);
	json_decref(v);
	buf_release(&err);
}

/* Echoed values stop at 256 code points; the caller's cap is honoured. */
static void test_truncation(void **state)
{
	struct buf err = BUF_INIT;
	struct buf small = BUF_INIT_MAX(40);
	struct buf json = BUF_INIT;
	struct buf want = BUF_INIT;
	json_t *v;
	int i;

	(void)state;
	assert_int_equal(buf_adds(&json, "{\"TrainingJobName\": \""), 0);
	assert_int_equal(buf_adds(&want, "Value '"), 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(buf_adds(&json, "\xc3\xa9"), 0);
		if (i < 256)
			assert_int_equal(buf_adds(&want, "\xc3\xa9"), 0);
	}
	assert_int_equal(buf_adds(&json, "\"}"), 0);
	assert_int_equal(buf_adds(&want, "...' at 'trainingJobName'"), 0);
	assert_int_equal(validate_text("DescribeTrainingJobRequest", json.data,
				       &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, want.data));
	assert_non_null(strstr(err.data, "2 validation errors detected"));

	v = json_loads(json.data, 0, NULL);
	assert_non_null(v);
	assert_int_equal(api_validate("DescribeTrainingJobRequest", v, &small),
			 ERR_INVALID);
	assert_true(small.len <= 40);
	assert_int_equal(strncmp(small.data, "2 validation errors", 19), 0);
	json_decref(v);
	buf_release(&small);
	buf_release(&err);
	buf_release(&json);
	buf_release(&want);
}

/* Lengths count code points: 128 two-byte characters fit a tag key. */
static void test_code_points(void **state)
{
	struct buf err = BUF_INIT;
	struct buf json = BUF_INIT;
	int i;

	(void)state;
	assert_int_equal(buf_adds(&json, "{\"TrainingJobName\": \"j\","
					 " \"ResourceConfig\": {\"KeepAlive"
					 "PeriodInSeconds\": 1},"
					 " \"ProfilerRuleConfigurations\": "
					 "[{\"RuleConfigurationName\": \""),
			 0);
	for (i = 0; i < 256; i++)
		assert_int_equal(buf_adds(&json, "\xe5\x80\xa4"), 0);
	assert_int_equal(
		buf_adds(&json, "\", \"RuleEvaluatorImage\": \"x\"}]}"), 0);
	assert_int_equal(
		validate_text("UpdateTrainingJobRequest", json.data, &err), 0);
	/* One more makes 257 > 256. */
	json.len -= strlen("\", \"RuleEvaluatorImage\": \"x\"}]}");
	json.data[json.len] = '\0';
	assert_int_equal(buf_adds(&json, "\xe5\x80\xa4\", \"RuleEvaluatorImage"
					 "\": \"x\"}]}"),
			 0);
	assert_int_equal(validate_text("UpdateTrainingJobRequest", json.data,
				       &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data,
			       "at 'profilerRuleConfigurations.1.member."
			       "ruleConfigurationName' failed to satisfy "
			       "constraint: Member must have length less "
			       "than or equal to 256"));
	buf_release(&err);
	buf_release(&json);
}

static void test_timestamps(void **state)
{
	static const char *const good[] = {
		"1700000000",
		"1700000000.25",
		"0",
		"\"2024-01-02\"",
		"\"2024-01-02T03:04:05Z\"",
		"\"2024-01-02T03:04:05.123456Z\"",
		"\"2024-01-02 03:04\"",
		"\"2024-01-02T03:04:05+05:30\"",
		"\"2024-01-02T03:04:05-0800\"",
	};
	static const char *const bad[] = {
		"\"yesterday\"",
		"\"2024-13-02\"",
		"\"2024-01-02T25:00\"",
		"\"2024-01-02T03:04:05.\"",
		"\"2024-01-02T03:04Zx\"",
		"\"1700000000\"",
		"true",
		"[]",
	};
	struct buf err = BUF_INIT;
	char json[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(*good); i++) {
		snprintf(json, sizeof(json), "{\"CreationTimeAfter\": %s}",
			 good[i]);
		if (validate_text("ListTrainingJobsRequest", json, &err))
			fail_msg("%s: %s", json, err.data);
	}
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(json, sizeof(json), "{\"CreationTimeAfter\": %s}",
			 bad[i]);
		if (validate_text("ListTrainingJobsRequest", json, &err) !=
		    ERR_INVALID)
			fail_msg("%s passed", json);
		assert_non_null(strstr(err.data, "of type timestamp"));
	}
	buf_release(&err);
}

/* Odd JSON: nulls, huge integers, reals for integers, NUL in strings. */
static void test_edge_values(void **state)
{
	struct buf err = BUF_INIT;

	(void)state;
	/* null is an absent member. */
	assert_int_equal(validate_text("ListTrainingJobsRequest",
				       "{\"MaxResults\": null}", &err),
			 0);
	assert_int_equal(validate_text("ListTrainingJobsRequest",
				       "{\"MaxResults\": 10.0}", &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "Value '10.0' at 'maxResults'"));
	assert_non_null(strstr(err.data, "of type integer"));
	assert_int_equal(validate_text("ListTrainingJobsRequest",
				       "{\"MaxResults\": 4294967297}", &err),
			 ERR_INVALID);
	assert_int_equal(validate_text("ListTrainingJobsRequest",
				       "{\"NameContains\": \"a\\u0000b\"}",
				       &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "Value 'a\\0b' at 'nameContains'"));
	assert_int_equal(validate_text("DescribeTrainingJobRequest",
				       "{\"TrainingJobName\": \"a\\nb\"}",
				       &err),
			 ERR_INVALID);
	assert_int_equal(validate_text("DescribeTrainingJobRequest",
				       "{\"TrainingJobName\": {\"a\": [1, 2.5,"
				       " null, true]}}",
				       &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "Value '{a=[1, 2.5, null, true]}'"));
	/* Unknown members are not looked at, whatever their type. */
	assert_int_equal(validate_text("DescribeTrainingJobRequest",
				       "{\"TrainingJobName\": \"x\", \"New\":"
				       " [[[{}]]]}",
				       &err),
			 0);
	/* The root itself. */
	buf_reset(&err);
	assert_int_equal(api_validate("DescribeTrainingJobRequest", NULL, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "1 validation error detected: Value "
				      "null failed to satisfy constraint: "
				      "Member must not be null");
	/* Java's '.' stops at line ends: a hyperparameter may not hold one. */
	assert_int_equal(validate_text("UpdateTrainingJobRequest",
				       "{\"TrainingJobName\": \"x\","
				       " \"ProfilerConfig\": {\"Profiling"
				       "Parameters\": {\"k\": \"a\\nb\"}}}",
				       &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "Map value must satisfy constraint: "
					 "[Member must satisfy regular "
					 "expression pattern: .*]"));
	buf_release(&err);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/*
 * The brief: well under 50 us for a typical 2 KB request. Asserted loosely
 * (sanitizer builds are several times slower); the figure is printed.
 */
static void test_speed(void **state)
{
	static const char *const files[] = {
		"valid/minimal_m22.json",
		"valid/instance_groups.json",
		"valid/full_sdk_pytorch.json",
		"invalid/many_errors.json",
	};
	struct buf err = BUF_INIT;
	double t0, per;
	size_t i, len;
	char *text;
	json_t *v;
	int k, rounds = 20000;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(*files); i++) {
		v = load(files[i]);
		text = json_dumps(v, JSON_COMPACT);
		len = strlen(text);
		free(text);
		for (k = 0; k < 100; k++) {
			buf_reset(&err);
			(void)api_validate("CreateTrainingJobRequest", v, &err);
		}
		t0 = now_us();
		for (k = 0; k < rounds; k++) {
			buf_reset(&err);
			(void)api_validate("CreateTrainingJobRequest", v, &err);
		}
		per = (now_us() - t0) / rounds;
		print_message("# %-32s %5zu bytes compact: %.2f us/validate\n",
			      files[i], len, per);
		assert_true(per < 1000.0);
		json_decref(v);
	}
	buf_release(&err);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds a fixture per NAME.json in DATA_DIR/kind, sorted by name. */
static void add_fixtures(const char *kind, int valid, struct fixture **fxs,
			 size_t *n, size_t *cap)
{
	char **names = NULL;
	size_t nnames = 0, i, len;
	struct dirent *de;
	struct fixture *fx;
	char *dir, *base, *expect;
	DIR *d;

	dir = path_join(DATA_DIR, kind, "");
	d = opendir(dir);
	if (!d) {
		fprintf(stderr,
			"test_validate: cannot open %s (run from the "
			"repository root)\n",
			dir);
		exit(1);
	}
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		names = xrealloc(names, (nnames + 1) * sizeof(*names));
		names[nnames++] = xstrndup(de->d_name, len - 5);
	}
	closedir(d);
	qsort(names, nnames, sizeof(*names), by_name);
	for (i = 0; i < nnames; i++) {
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*fxs = xrealloc(*fxs, *cap * sizeof(**fxs));
		}
		fx = &(*fxs)[(*n)++];
		base = path_join(kind, names[i], "");
		fx->name = base;
		fx->json_path = path_join(dir, names[i], ".json");
		expect = path_join(dir, names[i], ".expect");
		fx->expect_path = file_exists(expect) ? expect : NULL;
		if (!fx->expect_path)
			free(expect);
		fx->valid = valid;
		free(names[i]);
	}
	free(names);
	free(dir);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_unknown_shape),
		cmocka_unit_test(test_model_tables),
		cmocka_unit_test(test_patterns_compile),
		cmocka_unit_test(test_error_cap),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_code_points),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_edge_values),
		cmocka_unit_test(test_speed),
	};
	size_t nfixed = sizeof(fixed) / sizeof(*fixed);
	struct fixture *fxs = NULL;
	struct CMUnitTest *tests;
	size_t n = 0, cap = 0, i;
	int rc;

	add_fixtures("valid", 1, &fxs, &n, &cap);
	add_fixtures("invalid", 0, &fxs, &n, &cap);
	tests = xcalloc(nfixed + n, sizeof(*tests));
	memcpy(tests, fixed, sizeof(fixed));
	for (i = 0; i < n; i++) {
		tests[nfixed + i].name = fxs[i].name;
		tests[nfixed + i].test_func = run_fixture;
		tests[nfixed + i].initial_state = &fxs[i];
	}
	rc = _cmocka_run_group_tests("api_validate", tests, nfixed + n, NULL,
				     NULL);
	for (i = 0; i < n; i++) {
		free(fxs[i].name);
		free(fxs[i].json_path);
		free(fxs[i].expect_path);
	}
	free(fxs);
	free(tests);
	return rc;
}
