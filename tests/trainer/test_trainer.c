/*
 * Tests libtrainer in one process (a world of one rank): the environment
 * as trainctl's agent sets it, typed hyperparameters, atomic checkpoints
 * and the torn ones a crash or a bad copy leaves, metric lines, argument
 * checks of the collectives, and the rendezvous client against
 * tests/trainer/rdzv_server.py. tests/trainer/test_mpi.sh covers
 * collectives across ranks. Run from the top of the tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <mpi.h>

#include "trainer/trainer.h"

/*
 * OpenMPI keeps memory until exit, much of it from components it has
 * unloaded by then (so no suppression can name them): allocations made
 * inside MPI_Init and MPI_Finalize are not LeakSanitizer's to report.
 * libtrainer's own allocations are still checked.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LSAN_OFF() __lsan_disable()
#define LSAN_ON() __lsan_enable()
#else
#define LSAN_OFF() ((void)0)
#define LSAN_ON() ((void)0)
#endif

extern char **environ;

static char top_dir[PATH_MAX];
static char server_py[PATH_MAX + 64];

struct fixture {
	char dir[PATH_MAX];
	struct trainer *t;
};

/* Every variable libtrainer reads, so that each test starts clean. */
static void clear_env(void)
{
	static const char *const vars[] = {
		"RANK",
		"WORLD_SIZE",
		"LOCAL_RANK",
		"LOCAL_WORLD_SIZE",
		"OMPI_COMM_WORLD_LOCAL_RANK",
		"OMPI_COMM_WORLD_LOCAL_SIZE",
	};
	char name[256];
	size_t i, n;
	char **e;
	int again = 1;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	while (again) {
		again = 0;
		for (e = environ; e && *e; e++) {
			if (strncmp(*e, "SM_", 3) &&
			    strncmp(*e, "TRAINCTL_", 9))
				continue;
			n = strcspn(*e, "=");
			if (n >= sizeof(name))
				continue;
			memcpy(name, *e, n);
			name[n] = '\0';
			unsetenv(name);
			again = 1;
			break;
		}
	}
}

static int rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	return system(cmd);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	(void)snprintf(f->dir, sizeof(f->dir), "%s",
		       "/tmp/test_trainer.XXXXXX");
	if (!mkdtemp(f->dir) || chdir(f->dir)) {
		free(f);
		return -1;
	}
	clear_env();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	trainer_free(f->t);
	if (chdir(top_dir))
		return -1;
	(void)rm_rf(f->dir);
	free(f);
	clear_env();
	return 0;
}

static struct trainer *init_ok(struct fixture *f)
{
	char err[256] = "";
	int ret;

	trainer_free(f->t);
	f->t = NULL;
	ret = trainer_init(NULL, NULL, TRAINER_DEVICE_CPU, &f->t, err,
			   sizeof(err));
	if (ret)
		print_error("trainer_init: %d %s\n", ret, err);
	assert_int_equal(ret, 0);
	assert_non_null(f->t);
	assert_string_equal(trainer_errmsg(f->t), "");
	return f->t;
}

static void init_fails(int want, const char *needle)
{
	struct trainer *t = (struct trainer *)&t;
	char err[256] = "";
	int ret;

	ret = trainer_init(NULL, NULL, TRAINER_DEVICE_CPU, &t, err,
			   sizeof(err));
	assert_int_equal(ret, want);
	assert_null(t);
	if (!strstr(err, needle))
		print_error("errmsg '%s' lacks '%s'\n", err, needle);
	assert_non_null(strstr(err, needle));
}

/* ---- environment ---- */

static void test_env_defaults(void **state)
{
	struct fixture *f = *state;
	struct trainer *t = init_ok(f);
	struct stat st;

	assert_int_equal(trainer_rank(t), 0);
	assert_int_equal(trainer_world_size(t), 1);
	assert_int_equal(trainer_local_rank(t), 0);
	assert_int_equal(trainer_local_size(t), 1);
	assert_int_equal(trainer_num_hosts(t), 1);
	assert_string_equal(trainer_host(t, 0), "algo-1");
	assert_null(trainer_host(t, 1));
	assert_string_equal(trainer_current_host(t), "algo-1");
	assert_int_equal(trainer_host_index(t), 0);
	assert_int_equal(trainer_attempt(t), 1);
	assert_string_equal(trainer_model_dir(t), "./model");
	assert_string_equal(trainer_output_dir(t), "./output");
	assert_string_equal(trainer_checkpoint_dir(t), "./checkpoints");
	assert_null(trainer_channel_dir(t, "train"));
	/* A program run by hand can write its model at once. */
	assert_int_equal(stat("model", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(stat("output", &st), 0);
}

static void test_env_job(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;

	setenv("SM_HOSTS", "[\"algo-1\", \"algo-2\", \"algo-3\"]", 1);
	setenv("SM_CURRENT_HOST", "algo-2", 1);
	setenv("SM_MODEL_DIR", "/opt/ml/model", 1);
	setenv("SM_OUTPUT_DATA_DIR", "/opt/ml/output/data", 1);
	setenv("SM_CHANNELS", "[\"train\",\"validation\"]", 1);
	setenv("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train", 1);
	setenv("SM_CHANNEL_VALIDATION", "/opt/ml/input/data/validation", 1);
	setenv("SM_HPS", "{\"epochs\": 3}", 1);
	setenv("SM_NUM_GPUS", "0", 1);
	setenv("TRAINCTL_CHECKPOINT_DIR", "/tmp/ckpt-x", 1);
	setenv("TRAINCTL_ATTEMPT", "3", 1);
	setenv("RANK", "3", 1);
	setenv("WORLD_SIZE", "6", 1);
	setenv("LOCAL_RANK", "1", 1);
	setenv("LOCAL_WORLD_SIZE", "2", 1);
	t = init_ok(f);

	assert_int_equal(trainer_rank(t), 3);
	assert_int_equal(trainer_world_size(t), 6);
	assert_int_equal(trainer_local_rank(t), 1);
	assert_int_equal(trainer_local_size(t), 2);
	assert_int_equal(trainer_num_hosts(t), 3);
	assert_string_equal(trainer_host(t, 2), "algo-3");
	assert_string_equal(trainer_current_host(t), "algo-2");
	assert_int_equal(trainer_host_index(t), 1);
	assert_int_equal(trainer_attempt(t), 3);
	assert_string_equal(trainer_model_dir(t), "/opt/ml/model");
	assert_string_equal(trainer_output_dir(t), "/opt/ml/output/data");
	assert_string_equal(trainer_checkpoint_dir(t), "/tmp/ckpt-x");
	assert_string_equal(trainer_channel_dir(t, "train"),
			    "/opt/ml/input/data/train");
	assert_string_equal(trainer_channel_dir(t, "TRAIN"),
			    "/opt/ml/input/data/train");
	assert_string_equal(trainer_channel_dir(t, "validation"),
			    "/opt/ml/input/data/validation");
	assert_null(trainer_channel_dir(t, "test"));
	assert_null(trainer_channel_dir(t, "trai"));
	assert_null(trainer_channel_dir(t, ""));
	assert_null(trainer_channel_dir(t, NULL));

	/* The strings are copies: the env may change under them. */
	setenv("SM_MODEL_DIR", "/elsewhere", 1);
	assert_string_equal(trainer_model_dir(t), "/opt/ml/model");
}

static void test_env_job_defaults(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;

	/* Inside a job, the checkpoint dir defaults to SageMaker's. */
	setenv("SM_HOSTS", "[\"algo-1\",\"algo-2\"]", 1);
	setenv("RANK", "3", 1);
	setenv("WORLD_SIZE", "4", 1);
	t = init_ok(f);
	assert_string_equal(trainer_checkpoint_dir(t), "/opt/ml/checkpoints");
	assert_string_equal(trainer_current_host(t), "algo-1");
	assert_int_equal(trainer_local_size(t), 2);
	assert_int_equal(trainer_local_rank(t), 1);
}

static void test_env_bad(void **state)
{
	(void)state;
	setenv("SM_HOSTS", "algo-1,algo-2", 1);
	init_fails(TRAINER_EINVAL, "SM_HOSTS");
	setenv("SM_HOSTS", "[]", 1);
	init_fails(TRAINER_EINVAL, "SM_HOSTS");
	setenv("SM_HOSTS", "[\"algo-1\", 7]", 1);
	init_fails(TRAINER_EINVAL, "SM_HOSTS[1]");
	setenv("SM_HOSTS", "[\"algo-1\"]", 1);
	setenv("SM_CURRENT_HOST", "algo-9", 1);
	init_fails(TRAINER_EINVAL, "algo-9");
	unsetenv("SM_CURRENT_HOST");
	setenv("SM_HPS", "[1, 2]", 1);
	init_fails(TRAINER_EINVAL, "SM_HPS");
	setenv("SM_HPS", "{\"a\": ", 1);
	init_fails(TRAINER_EINVAL, "SM_HPS");
	unsetenv("SM_HPS");
	setenv("TRAINCTL_ATTEMPT", "0", 1);
	init_fails(TRAINER_EINVAL, "TRAINCTL_ATTEMPT");
	setenv("TRAINCTL_ATTEMPT", "2x", 1);
	init_fails(TRAINER_EINVAL, "TRAINCTL_ATTEMPT");
	unsetenv("TRAINCTL_ATTEMPT");
	setenv("RANK", "4", 1);
	setenv("WORLD_SIZE", "4", 1);
	init_fails(TRAINER_EINVAL, "RANK");
	setenv("RANK", "-1", 1);
	init_fails(TRAINER_EINVAL, "RANK");
	setenv("RANK", "0", 1);
	setenv("WORLD_SIZE", "zero", 1);
	init_fails(TRAINER_EINVAL, "WORLD_SIZE");
	setenv("WORLD_SIZE", "4", 1);
	setenv("LOCAL_RANK", "2", 1);
	setenv("LOCAL_WORLD_SIZE", "2", 1);
	init_fails(TRAINER_EINVAL, "LOCAL_RANK");
}

static void test_init_args(void **state)
{
	char err[128] = "";

	(void)state;
	assert_int_equal(trainer_init(NULL, NULL, TRAINER_DEVICE_CPU, NULL, err,
				      sizeof(err)),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_init(NULL, NULL, TRAINER_DEVICE_CPU, NULL,
				      NULL, 0),
			 TRAINER_EINVAL);
	trainer_free(NULL);
	assert_string_equal(trainer_errmsg(NULL), "");
}

/* ---- hyperparameters ---- */

static void test_hp(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;
	const char *s;
	int64_t i;
	double d;
	int b;

	setenv("SM_HPS",
	       "{\"epochs\": 10, \"lr\": 0.001, \"batch-size\": \"32\", "
	       "\"use_cuda\": true, \"model\": \"resnet50\", \"shuffle\": "
	       "\"False\", \"steps\": 1e3, \"frac\": 2.5, \"layers\": [1, 2], "
	       "\"opt\": {\"beta\": 0.9}, \"gamma\": \"0.5\", \"none\": null, "
	       "\"neg\": -7, \"ratio\": \"1/3\", \"one\": 1}",
	       1);
	t = init_ok(f);

	assert_int_equal(trainer_hp_int(t, "epochs", &i), 0);
	assert_int_equal(i, 10);
	assert_int_equal(trainer_hp_int(t, "batch-size", &i), 0);
	assert_int_equal(i, 32);
	assert_int_equal(trainer_hp_int(t, "steps", &i), 0);
	assert_int_equal(i, 1000);
	assert_int_equal(trainer_hp_int(t, "neg", &i), 0);
	assert_int_equal(i, -7);
	i = 42;
	assert_int_equal(trainer_hp_int(t, "frac", &i), TRAINER_EINVAL);
	assert_non_null(strstr(trainer_errmsg(t), "frac"));
	assert_int_equal(trainer_hp_int(t, "model", &i), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_int(t, "use_cuda", &i), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_int(t, "layers", &i), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_int(t, "gamma", &i), TRAINER_EINVAL);
	assert_int_equal(i, 42);
	assert_int_equal(trainer_hp_int(t, "missing", &i), TRAINER_ENOTFOUND);
	assert_non_null(strstr(trainer_errmsg(t), "missing"));
	assert_int_equal(i, 42);

	assert_int_equal(trainer_hp_double(t, "lr", &d), 0);
	assert_true(d == 0.001);
	assert_int_equal(trainer_hp_double(t, "epochs", &d), 0);
	assert_true(d == 10.0);
	assert_int_equal(trainer_hp_double(t, "gamma", &d), 0);
	assert_true(d == 0.5);
	d = 7.0;
	assert_int_equal(trainer_hp_double(t, "ratio", &d), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_double(t, "use_cuda", &d), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_double(t, "none", &d), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_double(t, "nope", &d), TRAINER_ENOTFOUND);
	assert_true(d == 7.0);

	assert_int_equal(trainer_hp_bool(t, "use_cuda", &b), 0);
	assert_int_equal(b, 1);
	assert_int_equal(trainer_hp_bool(t, "shuffle", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(trainer_hp_bool(t, "one", &b), 0);
	assert_int_equal(b, 1);
	b = 5;
	assert_int_equal(trainer_hp_bool(t, "model", &b), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_bool(t, "epochs", &b), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_bool(t, "nope", &b), TRAINER_ENOTFOUND);
	assert_int_equal(b, 5);

	assert_int_equal(trainer_hp_string(t, "model", &s), 0);
	assert_string_equal(s, "resnet50");
	assert_int_equal(trainer_hp_string(t, "batch-size", &s), 0);
	assert_string_equal(s, "32");
	s = "default";
	assert_int_equal(trainer_hp_string(t, "epochs", &s), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_string(t, "opt", &s), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_string(t, "nope", &s), TRAINER_ENOTFOUND);
	assert_string_equal(s, "default");

	assert_int_equal(trainer_hp_int(t, NULL, &i), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_int(t, "epochs", NULL), TRAINER_EINVAL);
	assert_int_equal(trainer_hp_int(NULL, "epochs", &i), TRAINER_EINVAL);
}

static void test_hp_none(void **state)
{
	struct fixture *f = *state;
	struct trainer *t = init_ok(f);
	int64_t i = 5;

	assert_int_equal(trainer_hp_int(t, "epochs", &i), TRAINER_ENOTFOUND);
	assert_int_equal(i, 5);
}

/* ---- checkpoints ---- */

static int save_one(struct trainer *t, int64_t step, const char *text)
{
	struct trainer_file files[2] = {
		{ "model.bin", text, strlen(text) },
		{ "optim.state", "opt", 3 },
	};

	return trainer_checkpoint_save(t, step, files, 2);
}

static void expect_load(struct trainer *t, int64_t step, const char *name,
			const char *text)
{
	void *data = NULL;
	size_t len = 0;
	int ret;

	ret = trainer_checkpoint_load(t, step, name, &data, &len);
	if (ret)
		print_error("load: %s\n", trainer_errmsg(t));
	assert_int_equal(ret, 0);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(data, text, len);
	free(data);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/*
 * Checkpoint-now: nothing outside a job; in one, the first look announces
 * the listener, a request file is seen, and the next save answers it
 * (removes the file); a second look then says no.
 */
static void test_checkpoint_requested(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;

	setenv("TRAINCTL_CHECKPOINT_DIR", "ck", 1);
	t = init_ok(f);
	assert_int_equal(trainer_checkpoint_requested(t), 0);
	assert_false(exists("now.listening"));

	setenv("TRAINCTL_CHECKPOINT_NOW", "now", 1);
	assert_int_equal(trainer_checkpoint_requested(t), 0);
	assert_true(exists("now.listening"));
	write_text("now", "stop\n");
	assert_int_equal(trainer_checkpoint_requested(t), 1);
	/* Still there until a checkpoint is saved. */
	assert_true(exists("now"));
	assert_int_equal(save_one(t, 7, "seven"), 0);
	assert_false(exists("now"));
	assert_true(exists("ck/step-0000000007.rank-0/MANIFEST.json"));
	assert_int_equal(trainer_checkpoint_requested(t), 0);
	/* A save without a request removes nothing. */
	write_text("now", "later\n");
	assert_int_equal(save_one(t, 8, "eight"), 0);
	assert_true(exists("now"));
	assert_int_equal(trainer_checkpoint_requested(NULL), TRAINER_EINVAL);
	unsetenv("TRAINCTL_CHECKPOINT_NOW");
}

static void test_checkpoint_roundtrip(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;
	json_error_t jerr;
	json_t *m, *file;
	int64_t step = -5;

	setenv("TRAINCTL_CHECKPOINT_DIR", "ck/deep", 1);
	t = init_ok(f);
	assert_int_equal(trainer_checkpoint_latest(t, &step),
			 TRAINER_ENOTFOUND);
	assert_int_equal(step, -5);
	assert_int_equal(trainer_checkpoint_latest_all(t, &step),
			 TRAINER_ENOTFOUND);

	assert_int_equal(save_one(t, 1, "one"), 0);
	assert_int_equal(save_one(t, 2, "two"), 0);
	assert_int_equal(save_one(t, 3, "hello"), 0);
	/* keep 2: step 1 went away. */
	assert_false(exists("ck/deep/step-0000000001.rank-0"));
	assert_true(exists("ck/deep/step-0000000002.rank-0/model.bin"));
	assert_true(exists("ck/deep/step-0000000003.rank-0/MANIFEST.json"));

	assert_int_equal(trainer_checkpoint_latest(t, &step), 0);
	assert_int_equal(step, 3);
	step = 0;
	assert_int_equal(trainer_checkpoint_latest_all(t, &step), 0);
	assert_int_equal(step, 3);
	expect_load(t, 3, "model.bin", "hello");
	expect_load(t, 3, "optim.state", "opt");
	expect_load(t, 2, "model.bin", "two");

	/* The manifest, as docs/checkpoints.md describes it. */
	m = json_load_file("ck/deep/step-0000000003.rank-0/MANIFEST.json", 0,
			   &jerr);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "format")),
			    "trainctl-checkpoint-1");
	assert_int_equal(json_integer_value(json_object_get(m, "step")), 3);
	assert_int_equal(json_integer_value(json_object_get(m, "rank")), 0);
	assert_int_equal(json_integer_value(json_object_get(m, "world_size")),
			 1);
	assert_int_equal(json_array_size(json_object_get(m, "files")), 2);
	file = json_array_get(json_object_get(m, "files"), 0);
	assert_string_equal(json_string_value(json_object_get(file, "name")),
			    "model.bin");
	assert_int_equal(json_integer_value(json_object_get(file, "size")), 5);
	assert_string_equal(
		json_string_value(json_object_get(file, "sha256")),
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	json_decref(m);

	/* Saving a step again replaces it. */
	assert_int_equal(save_one(t, 3, "again"), 0);
	expect_load(t, 3, "model.bin", "again");

	/* keep 0: nothing is removed; keep 1: only the newest stays. */
	trainer_checkpoint_keep(t, 0);
	assert_int_equal(save_one(t, 4, "four"), 0);
	assert_int_equal(save_one(t, 5, "five"), 0);
	assert_true(exists("ck/deep/step-0000000002.rank-0"));
	trainer_checkpoint_keep(t, 1);
	assert_int_equal(save_one(t, 6, "six"), 0);
	assert_false(exists("ck/deep/step-0000000005.rank-0"));
	assert_false(exists("ck/deep/step-0000000002.rank-0"));
	assert_true(exists("ck/deep/step-0000000006.rank-0"));

	/* An empty file and a checkpoint without files are fine. */
	{
		struct trainer_file e = { "empty", NULL, 0 };

		trainer_checkpoint_keep(t, 5);
		assert_int_equal(trainer_checkpoint_save(t, 7, &e, 1), 0);
		expect_load(t, 7, "empty", "");
		assert_int_equal(trainer_checkpoint_save(t, 8, NULL, 0), 0);
		assert_int_equal(trainer_checkpoint_latest(t, &step), 0);
		assert_int_equal(step, 8);
	}
}

static void test_checkpoint_big_step(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;
	int64_t step;

	setenv("TRAINCTL_CHECKPOINT_DIR", "ck", 1);
	t = init_ok(f);
	assert_int_equal(save_one(t, INT64_C(9999999999), "max"), 0);
	assert_int_equal(save_one(t, 0, "zero"), 0);
	assert_int_equal(trainer_checkpoint_latest(t, &step), 0);
	assert_true(step == INT64_C(9999999999));
	assert_true(exists("ck/step-9999999999.rank-0"));
	assert_true(exists("ck/step-0000000000.rank-0"));
}

/* Copies a checkpoint directory to another step's name, manifest as is. */
static void clone_step(const char *from, const char *to)
{
	char cmd[512];

	(void)snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

static void test_checkpoint_torn(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;
	void *data = NULL;
	size_t len = 9;
	int64_t step;
	FILE *fp;

	setenv("TRAINCTL_CHECKPOINT_DIR", "ck", 1);
	t = init_ok(f);
	trainer_checkpoint_keep(t, 0);
	assert_int_equal(save_one(t, 10, "good"), 0);

	/* A crashed save of this rank and one of rank 1. */
	clone_step("ck/step-0000000010.rank-0",
		   "ck/.tmp-step-0000000020.rank-0.4242");
	clone_step("ck/step-0000000010.rank-0",
		   "ck/.tmp-step-0000000020.rank-1.4343");
	/* No manifest. */
	assert_int_equal(mkdir("ck/step-0000000030.rank-0", 0755), 0);
	write_text("ck/step-0000000030.rank-0/model.bin", "good");
	/* A file shorter than the manifest says. */
	clone_step("ck/step-0000000010.rank-0", "ck/step-0000000040.rank-0");
	write_text("ck/step-0000000040.rank-0/model.bin", "goo");
	/* Same size, other bytes. */
	clone_step("ck/step-0000000010.rank-0", "ck/step-0000000050.rank-0");
	write_text("ck/step-0000000050.rank-0/model.bin", "bad!");
	/* A file the manifest lists is missing. */
	clone_step("ck/step-0000000010.rank-0", "ck/step-0000000060.rank-0");
	assert_int_equal(unlink("ck/step-0000000060.rank-0/optim.state"), 0);
	/* A manifest that is not JSON, and one of another step. */
	clone_step("ck/step-0000000010.rank-0", "ck/step-0000000070.rank-0");
	write_text("ck/step-0000000070.rank-0/MANIFEST.json", "{\"format\":");
	clone_step("ck/step-0000000010.rank-0", "ck/step-0000000080.rank-0");
	/* Names that are not checkpoints at all. */
	assert_int_equal(mkdir("ck/step-90.rank-0", 0755), 0);
	assert_int_equal(mkdir("ck/step-0000000095.rank-01", 0755), 0);

	assert_int_equal(trainer_checkpoint_latest(t, &step), 0);
	assert_int_equal(step, 10);
	assert_int_equal(trainer_checkpoint_latest_all(t, &step), 0);
	assert_int_equal(step, 10);

	assert_int_equal(trainer_checkpoint_load(t, 50, "model.bin", &data,
						 &len),
			 TRAINER_EIO);
	assert_null(data);
	assert_int_equal(len, 0);
	assert_non_null(strstr(trainer_errmsg(t), "sha256"));
	assert_int_equal(trainer_checkpoint_load(t, 40, "model.bin", &data,
						 &len),
			 TRAINER_EIO);
	assert_int_equal(trainer_checkpoint_load(t, 30, "model.bin", &data,
						 &len),
			 TRAINER_ENOTFOUND);
	assert_int_equal(trainer_checkpoint_load(t, 70, "model.bin", &data,
						 &len),
			 TRAINER_EIO);
	assert_int_equal(
		trainer_checkpoint_load(t, 80, "model.bin", &data, &len), 0);
	free(data);
	assert_int_equal(trainer_checkpoint_load(t, 12, "model.bin", &data,
						 &len),
			 TRAINER_ENOTFOUND);
	assert_int_equal(trainer_checkpoint_load(t, 10, "other.bin", &data,
						 &len),
			 TRAINER_ENOTFOUND);

	/* Step 80's manifest says step 10: it is not step 80. */
	expect_load(t, 10, "model.bin", "good");

	/* The next save removes this rank's temporary dir, not rank 1's. */
	assert_int_equal(save_one(t, 11, "eleven"), 0);
	assert_false(exists("ck/.tmp-step-0000000020.rank-0.4242"));
	assert_true(exists("ck/.tmp-step-0000000020.rank-1.4343"));
	assert_int_equal(trainer_checkpoint_latest(t, &step), 0);
	assert_int_equal(step, 11);

	/* A missing manifest in the newest makes the older one latest. */
	assert_int_equal(unlink("ck/step-0000000011.rank-0/MANIFEST.json"), 0);
	assert_int_equal(trainer_checkpoint_latest(t, &step), 0);
	assert_int_equal(step, 10);

	/* An unreadable checkpoint dir is no checkpoint. */
	fp = fopen("ck2", "w");
	assert_non_null(fp);
	(void)fclose(fp);
	setenv("TRAINCTL_CHECKPOINT_DIR", "ck2", 1);
	t = init_ok(f);
	assert_int_not_equal(save_one(t, 1, "x"), 0);
	assert_int_not_equal(trainer_checkpoint_latest(t, &step), 0);
}

static void test_checkpoint_bad(void **state)
{
	static const char *const bad[] = {
		"",    ".",   "..",  "MANIFEST.json", "../x",
		"a/b", "a b", "x\n", "naïve",	      "a*",
	};
	struct fixture *f = *state;
	struct trainer_file file = { "ok.bin", "x", 1 };
	struct trainer_file two[2] = { { "a", "x", 1 }, { "a", "y", 1 } };
	char longname[300];
	struct trainer *t;
	void *data;
	size_t i, len;

	setenv("TRAINCTL_CHECKPOINT_DIR", "ck", 1);
	t = init_ok(f);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		file.name = bad[i];
		assert_int_equal(trainer_checkpoint_save(t, 1, &file, 1),
				 TRAINER_EINVAL);
		assert_int_equal(trainer_checkpoint_load(t, 1, bad[i], &data,
							 &len),
				 TRAINER_EINVAL);
	}
	file.name = NULL;
	assert_int_equal(trainer_checkpoint_save(t, 1, &file, 1),
			 TRAINER_EINVAL);
	memset(longname, 'a', 256);
	longname[256] = '\0';
	file.name = longname;
	assert_int_equal(trainer_checkpoint_save(t, 1, &file, 1),
			 TRAINER_EINVAL);
	longname[255] = '\0';
	assert_int_equal(trainer_checkpoint_save(t, 1, &file, 1), 0);

	file.name = "ok.bin";
	assert_int_equal(trainer_checkpoint_save(t, -1, &file, 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_checkpoint_save(t, INT64_C(10000000000), &file,
						 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_checkpoint_save(t, 2, two, 2), TRAINER_EINVAL);
	assert_non_null(strstr(trainer_errmsg(t), "twice"));
	assert_int_equal(trainer_checkpoint_save(t, 2, NULL, 1),
			 TRAINER_EINVAL);
	file.data = NULL;
	assert_int_equal(trainer_checkpoint_save(t, 2, &file, 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_checkpoint_load(t, -1, "ok.bin", &data, &len),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_checkpoint_load(t, 1, "ok.bin", NULL, &len),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_checkpoint_latest(t, NULL), TRAINER_EINVAL);
	assert_int_equal(trainer_checkpoint_save(NULL, 1, &file, 1),
			 TRAINER_EINVAL);
	/* Nothing above left a directory behind but the valid save. */
	assert_false(exists("ck/step-0000000002.rank-0"));
	assert_true(exists("ck/step-0000000001.rank-0"));
}

/* ---- metrics ---- */

static char *read_stream(FILE *fp)
{
	static char buf[1024];
	size_t n;

	rewind(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	return buf;
}

static void test_metric(void **state)
{
	struct fixture *f = *state;
	struct trainer *t = init_ok(f);
	FILE *fp = tmpfile();
	static const char want[] =
		"#metric loss=0.12345679 step=10\n"
		"#metric train:acc/top-1=1e-09 step=0\n"
		"#metric val.loss_2=1.2345679e+10 step=20000000000\n"
		"#metric n=-3 step=1\n";

	assert_non_null(fp);
	trainer_metric_stream(t, fp);
	assert_int_equal(trainer_metric(t, "loss", 0.123456789, 10), 0);
	assert_int_equal(trainer_metric(t, "train:acc/top-1", 1e-9, 0), 0);
	assert_int_equal(trainer_metric(t, "val.loss_2", 12345678901.0,
					INT64_C(20000000000)),
			 0);
	assert_int_equal(trainer_metric(t, "n", -3, 1), 0);
	assert_string_equal(read_stream(fp), want);

	assert_int_equal(trainer_metric(t, "", 1, 1), TRAINER_EINVAL);
	assert_int_equal(trainer_metric(t, NULL, 1, 1), TRAINER_EINVAL);
	assert_int_equal(trainer_metric(t, "a b", 1, 1), TRAINER_EINVAL);
	assert_int_equal(trainer_metric(t, "a=b", 1, 1), TRAINER_EINVAL);
	assert_int_equal(trainer_metric(t, "a\n", 1, 1), TRAINER_EINVAL);
	assert_int_equal(trainer_metric(t, "loss", 0.0 / 0.0, 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_metric(t, "loss", 1, -1), TRAINER_EINVAL);
	assert_non_null(strstr(trainer_errmsg(t), "negative"));
	/* Nothing was written by the refused calls. */
	assert_string_equal(read_stream(fp), want);
	trainer_metric_stream(t, NULL);
	assert_int_equal(fclose(fp), 0);
}

/* ---- collectives in a world of one ---- */

static void test_collectives_single(void **state)
{
	struct fixture *f = *state;
	struct trainer *t = init_ok(f);
	float fl[3] = { 1.5f, -2.0f, 3.0f };
	double db[2] = { 0.25, 8.0 };
	int64_t iv[2] = { 5, -6 };

	assert_int_equal(
		trainer_allreduce(t, fl, 3, TRAINER_FLOAT, TRAINER_SUM), 0);
	assert_true(fl[0] == 1.5f && fl[1] == -2.0f && fl[2] == 3.0f);
	assert_int_equal(trainer_allreduce_avg(t, fl, 3), 0);
	assert_true(fl[0] == 1.5f);
	assert_int_equal(
		trainer_allreduce(t, db, 2, TRAINER_DOUBLE, TRAINER_MAX), 0);
	assert_true(db[1] == 8.0);
	assert_int_equal(
		trainer_allreduce(t, iv, 2, TRAINER_INT64, TRAINER_MIN), 0);
	assert_int_equal(iv[1], -6);
	assert_int_equal(trainer_broadcast(t, iv, 2, TRAINER_INT64, 0), 0);
	assert_int_equal(trainer_barrier(t), 0);
	assert_int_equal(
		trainer_allreduce(t, NULL, 0, TRAINER_FLOAT, TRAINER_SUM), 0);

	assert_int_equal(trainer_allreduce(t, NULL, 3, TRAINER_FLOAT,
					   TRAINER_SUM),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_allreduce(t, fl, 3, (enum trainer_dtype)9,
					   TRAINER_SUM),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_allreduce(t, fl, 3, TRAINER_FLOAT,
					   (enum trainer_op)9),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_broadcast(t, iv, 2, TRAINER_INT64, 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_send(t, iv, 2, TRAINER_INT64, 0, 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_recv(t, iv, 2, TRAINER_INT64, 1, 1),
			 TRAINER_EINVAL);
	assert_int_equal(trainer_barrier(NULL), TRAINER_EINVAL);
}

/* torch_distributed without NCCL: MPI is a singleton, no CPU world. */
static void test_collectives_no_mpirun(void **state)
{
	struct fixture *f = *state;
	struct trainer *t;
	float x = 1;

	setenv("RANK", "0", 1);
	setenv("WORLD_SIZE", "2", 1);
	t = init_ok(f);
	assert_int_equal(trainer_world_size(t), 2);
	assert_int_equal(trainer_allreduce(t, &x, 1, TRAINER_FLOAT,
					   TRAINER_SUM),
			 TRAINER_ENOTSUP);
	assert_non_null(strstr(trainer_errmsg(t), "mpirun"));
	assert_int_equal(trainer_barrier(t), TRAINER_ENOTSUP);
	assert_int_equal(trainer_send(t, &x, 1, TRAINER_FLOAT, 1, 0),
			 TRAINER_ENOTSUP);
}

/*
 * On a host with an NVIDIA GPU (/dev/nvidia0), trainer_init succeeds, or
 * answers ENOTSUP in a build without NCCL. Without one: a clean error,
 * whichever it is. tests/trainer/test_gpu_build.sh checks the collectives.
 */
static void test_gpu_init(void **state)
{
	struct trainer *t = (struct trainer *)&t;
	char err[256] = "";
	int gpu_host = access("/dev/nvidia0", F_OK) == 0;
	int ret;

	(void)state;
	ret = trainer_init(NULL, NULL, TRAINER_DEVICE_GPU, &t, err,
			   sizeof(err));
	if (ret)
		print_message("# trainer_init on the GPU: %d %s\n", ret, err);
	if (ret == 0) {
		assert_true(gpu_host);
		assert_non_null(t);
		trainer_free(t);
	} else {
		assert_true(ret == TRAINER_ENOTSUP ||
			    (ret == TRAINER_ECOMM && !gpu_host));
		assert_null(t);
		assert_true(err[0] != '\0');
	}
	ret = trainer_init(NULL, NULL, (enum trainer_device)7, &t, err,
			   sizeof(err));
	assert_int_equal(ret, TRAINER_EINVAL);
}

/* ---- rendezvous client ---- */

struct server {
	pid_t pid;
	int in; /* the server's stdin: closing it stops the server */
	int port;
};

static int server_start(struct server *s, const char *token)
{
	int in[2], out[2];
	char buf[32];
	ssize_t n;
	FILE *fp;

	if (access(server_py, R_OK) || access("/usr/bin/python3", X_OK))
		return -1;
	if (pipe(in) || pipe(out))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		(void)dup2(in[0], 0);
		(void)dup2(out[1], 1);
		(void)close(in[1]);
		(void)close(out[0]);
		execl("/usr/bin/python3", "python3", server_py, token,
		      (char *)NULL);
		_exit(127);
	}
	(void)close(in[0]);
	(void)close(out[1]);
	s->in = in[1];
	fp = fdopen(out[0], "r");
	if (!fp)
		return -1;
	n = fgets(buf, sizeof(buf), fp) ? (ssize_t)strlen(buf) : 0;
	(void)fclose(fp);
	s->port = n > 0 ? atoi(buf) : 0;
	return s->port > 0 ? 0 : -1;
}

static void server_stop(struct server *s)
{
	(void)close(s->in);
	(void)kill(s->pid, SIGTERM);
	(void)waitpid(s->pid, NULL, 0);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_rdzv(int port, const char *token)
{
	char url[64];

	(void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/rdzv/", port);
	setenv("TRAINCTL_RDZV_URL", url, 1);
	setenv("TRAINCTL_RDZV_TOKEN", token, 1);
}

static void test_kv(void **state)
{
	struct fixture *f = *state;
	static char big[65537];
	struct server s = { 0, -1, 0 };
	struct trainer *t;
	int64_t start;
	void *v = NULL;
	size_t len = 0;
	pid_t pid;
	int status;

	if (server_start(&s, "tok-123")) {
		print_message("no python3 or rdzv_server.py: skipped\n");
		skip();
	}
	set_rdzv(s.port, "tok-123");
	t = init_ok(f);

	assert_int_equal(trainer_kv_put(t, "nccl-id-1", "ab\0cd", 5), 0);
	assert_int_equal(trainer_kv_get(t, "nccl-id-1", 1000, &v, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(v, "ab\0cd", 5);
	free(v);

	assert_int_equal(trainer_kv_put(t, "empty", NULL, 0), 0);
	assert_int_equal(trainer_kv_get(t, "empty", 0, &v, &len), 0);
	assert_int_equal(len, 0);
	assert_non_null(v);
	free(v);

	memset(big, 'z', sizeof(big));
	assert_int_equal(trainer_kv_put(t, "big", big, 65536), 0);
	assert_int_equal(trainer_kv_get(t, "big", 0, &v, &len), 0);
	assert_int_equal(len, 65536);
	assert_memory_equal(v, big, 65536);
	free(v);
	assert_int_equal(trainer_kv_put(t, "big", big, 65537), TRAINER_EINVAL);

	/* A key that never comes: the deadline holds. */
	start = mono_ms();
	assert_int_equal(trainer_kv_get(t, "never", 300, &v, &len),
			 TRAINER_ETIMEDOUT);
	assert_true(mono_ms() - start >= 290);
	assert_true(mono_ms() - start < 5000);
	assert_null(v);

	/* A key that comes while we wait. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec ts = { 0, 300 * 1000 * 1000 };

		(void)nanosleep(&ts, NULL);
		_exit(trainer_kv_put(t, "late", "here", 4) ? 1 : 0);
	}
	start = mono_ms();
	assert_int_equal(trainer_kv_get(t, "late", 10000, &v, &len), 0);
	assert_true(mono_ms() - start < 5000);
	assert_int_equal(len, 4);
	assert_memory_equal(v, "here", 4);
	free(v);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);

	/* Keys are checked before anything is sent. */
	assert_int_equal(trainer_kv_put(t, "", "x", 1), TRAINER_EINVAL);
	assert_int_equal(trainer_kv_put(t, "a/b", "x", 1), TRAINER_EINVAL);
	assert_int_equal(trainer_kv_put(t, "a?b", "x", 1), TRAINER_EINVAL);
	assert_int_equal(trainer_kv_put(t, NULL, "x", 1), TRAINER_EINVAL);
	memset(big, 'k', 129);
	big[129] = '\0';
	assert_int_equal(trainer_kv_get(t, big, 0, &v, &len), TRAINER_EINVAL);
	big[128] = '\0';
	assert_int_equal(trainer_kv_put(t, big, "x", 1), 0);
	assert_int_equal(trainer_kv_get(t, "x", 0, NULL, &len), TRAINER_EINVAL);

	/* A wrong token: the status shows in the message. */
	set_rdzv(s.port, "wrong");
	t = init_ok(f);
	assert_int_equal(trainer_kv_put(t, "k", "v", 1), TRAINER_EIO);
	assert_non_null(strstr(trainer_errmsg(t), "401"));
	assert_int_equal(trainer_kv_get(t, "nccl-id-1", 0, &v, &len),
			 TRAINER_EIO);
	assert_non_null(strstr(trainer_errmsg(t), "401"));
	server_stop(&s);

	/* Nobody listening: an error once the deadline passes. */
	start = mono_ms();
	assert_int_equal(trainer_kv_get(t, "k", 700, &v, &len), TRAINER_EIO);
	assert_true(mono_ms() - start < 5000);
	assert_int_equal(trainer_kv_put(t, "k", "v", 1), TRAINER_EIO);
}

static void test_kv_outside_job(void **state)
{
	struct fixture *f = *state;
	struct trainer *t = init_ok(f);
	void *v;
	size_t len;

	assert_int_equal(trainer_kv_put(t, "k", "v", 1), TRAINER_ENOTSUP);
	assert_int_equal(trainer_kv_get(t, "k", 10, &v, &len), TRAINER_ENOTSUP);
	assert_non_null(strstr(trainer_errmsg(t), "TRAINCTL_RDZV_URL"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_env_defaults, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_env_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_job_defaults, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_env_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_args, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hp_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_roundtrip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_requested,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_big_step, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_torn, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_bad, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_metric, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collectives_single, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_collectives_no_mpirun,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_init, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kv_outside_job, setup,
						teardown),
	};
	int ret;

	if (!getcwd(top_dir, sizeof(top_dir)))
		return 1;
	(void)snprintf(server_py, sizeof(server_py),
		       "%s/tests/trainer/rdzv_server.py", top_dir);
	/*
	 * MPI can be initialised once per process, so the test does it and
	 * each trainer_init() finds it done (and leaves it running).
	 */
	LSAN_OFF();
	ret = MPI_Init(&argc, &argv);
	LSAN_ON();
	if (ret != MPI_SUCCESS)
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	LSAN_OFF();
	MPI_Finalize();
	LSAN_ON();
	return ret;
}
