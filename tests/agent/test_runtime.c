/*
 * Tests writing the agent's built-in Python files into a job folder
 * (agent/runtime.c): every file with its bytes under .trainagent/runtime,
 * folders made as needed, written once (a later call keeps what is there),
 * written again whole after a crash before the marker, and a folder that
 * cannot be written is an error naming the file. The table here is the
 * test's own: it replaces the generated one at link time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/runtime.h"
#include "common/err.h"
#include "common/fsutil.h"

static const unsigned char init_py[] = "X = 1\n";
static const unsigned char mod_py[] = "def f():\n    return 2\n";

const struct agent_runtime_file agent_runtime_files[] = {
	{ "pkg/__init__.py", init_py, sizeof(init_py) - 1 },
	{ "pkg/sub/mod.py", mod_py, sizeof(mod_py) - 1 },
	{ "top.py", init_py, 0 },
	{ NULL, NULL, 0 },
};
const size_t agent_runtime_n_files = 3;

static char *slurp(const char *dir, const char *rel)
{
	char path[512];
	static char data[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, AGENT_RUNTIME_REL, rel);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(data, 1, sizeof(data) - 1, f);
	data[n] = '\0';
	fclose(f);
	return data;
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/trainctl-runtime-XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	*state = strdup(tmpl);
	return 0;
}

static int teardown(void **state)
{
	fs_remove_tree(*state);
	free(*state);
	return 0;
}

static void test_writes_every_file(void **state)
{
	const char *dir = *state;
	struct buf err = BUF_INIT;

	assert_int_equal(agent_runtime_write(dir, &err), 1);
	assert_string_equal(slurp(dir, "pkg/__init__.py"), "X = 1\n");
	assert_string_equal(slurp(dir, "pkg/sub/mod.py"),
			    "def f():\n    return 2\n");
	assert_string_equal(slurp(dir, "top.py"), "");
	assert_non_null(slurp(dir, ".complete"));
	buf_release(&err);
}

static void test_written_once(void **state)
{
	const char *dir = *state;
	struct buf err = BUF_INIT;
	char path[512];

	assert_int_equal(agent_runtime_write(dir, &err), 1);
	snprintf(path, sizeof(path), "%s/%s/top.py", dir, AGENT_RUNTIME_REL);
	assert_int_equal(unlink(path), 0);
	/* The marker says complete: nothing is written again. */
	assert_int_equal(agent_runtime_write(dir, &err), 1);
	assert_null(slurp(dir, "top.py"));
	/* A crash before the marker: everything again. */
	snprintf(path, sizeof(path), "%s/%s/.complete", dir, AGENT_RUNTIME_REL);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(agent_runtime_write(dir, &err), 1);
	assert_string_equal(slurp(dir, "top.py"), "");
	buf_release(&err);
}

static void test_unwritable(void **state)
{
	const char *dir = *state;
	struct buf err = BUF_INIT;
	char path[512];
	FILE *f;

	/* A file where the package's folder belongs. */
	snprintf(path, sizeof(path), "%s/%s", dir, ".trainagent");
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, AGENT_RUNTIME_REL);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/pkg", dir, AGENT_RUNTIME_REL);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_true(agent_runtime_write(dir, &err) < 0);
	assert_non_null(strstr(err.data, "pkg"));
	assert_null(slurp(dir, ".complete"));
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_writes_every_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_written_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unwritable, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
