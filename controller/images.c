#include <stdlib.h>
#include <string.h>

#include "api/algorithm.h"
#include "api/job_config.h"
#include "api/distribution.h"
#include "controller/images.h"
#include "controller/jobrt.h"
#include "controller/registry.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define PYTHON "/usr/bin/python3"

/* Images that run script mode, by name or by repository name. */
static const struct {
	const char *repo;
	const char *runtime;
} image_table[] = {
	{ "trainctl/python", PYTHON },
	{ "pytorch-training", PYTHON },
	{ "tensorflow-training", PYTHON },
	{ "mxnet-training", PYTHON },
	{ "huggingface-pytorch-training", PYTHON },
	{ "huggingface-tensorflow-training", PYTHON },
	{ "sagemaker-scikit-learn", PYTHON },
	{ "sagemaker-xgboost", PYTHON },
	{ "sagemaker-pytorch", PYTHON },
	{ "sagemaker-tensorflow", PYTHON },
};

/* "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13" ->
 * "pytorch-training" (written into out). */
static void repo_name(const char *image, char *out, size_t size)
{
	const char *start = strrchr(image, '/');
	size_t n;

	start = start ? start + 1 : image;
	n = strcspn(start, ":@");
	if (n >= size)
		n = size - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

static const char *lookup(const char *image)
{
	char repo[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(image_table); i++)
		if (!strcmp(image, image_table[i].repo))
			return image_table[i].runtime;
	repo_name(image, repo, sizeof(repo));
	for (i = 0; i < ARRAY_SIZE(image_table); i++)
		if (!strcmp(repo, image_table[i].repo))
			return image_table[i].runtime;
	return NULL;
}

static size_t list_len(char **l)
{
	size_t n = 0;

	while (l && l[n])
		n++;
	return n;
}

static char **argv_join(const char *first, char **a, char **b)
{
	size_t na = list_len(a), nb = list_len(b), i, k = 0;
	char **argv = xcalloc(na + nb + 2, sizeof(*argv));

	if (first)
		argv[k++] = xstrdup(first);
	for (i = 0; i < na; i++)
		argv[k++] = xstrdup(a[i]);
	for (i = 0; i < nb; i++)
		argv[k++] = xstrdup(b[i]);
	return argv;
}

/* A container image: `train` or the arguments, the entry point if any. */
static int container(const struct ctrl_jobrt *rt, const char *image,
		     struct ctrl_launch *out, struct buf *err)
{
	const struct api_job_spec *spec = &rt->spec;
	char *train_args[] = { (char *)"train", NULL };
	const struct api_distribution *dist;
	struct ctrl_image_ref ref;
	int ret;

	ret = ctrl_image_ref_parse(image, &ref, err);
	if (ret)
		return ret;
	ctrl_image_ref_release(&ref);
	ret = ctrl_jobrt_dist(rt, &dist, err);
	if (ret)
		return ret;
	if (dist->mode == API_DIST_MPI) {
		(void)buf_addf(err,
			       "image '%s' is a container image: the MPI "
			       "distribution runs only with file:// or "
			       "script-mode images for now",
			       image);
		ret = ERR_INVALID;
	}
	if (!ret && spec->network_isolation &&
	    (spec->n_groups || spec->instance_count > 1)) {
		/* One host: --network none; more would need a network of
		 * the job's own between the hosts' containers. */
		(void)buf_addf(err,
			       "image '%s' is a container image: "
			       "EnableNetworkIsolation runs containers on one "
			       "host only for now",
			       image);
		ret = ERR_INVALID;
	}
	if (ret)
		return ret;
	out->mode = API_LAUNCH_CONTAINER;
	out->argv = argv_join(
		NULL, spec->arguments ? spec->arguments : train_args, NULL);
	out->entrypoint = spec->entrypoint ? strv_dup(spec->entrypoint) : NULL;
	out->want = xstrdup(image);
	out->image = rt->image ? xstrdup(rt->image) : NULL;
	return 0;
}

/*
 * A built-in algorithm (docs/algorithms.md): its runner, a Python module
 * the agent ships with every job, run once per host like any program.
 */
static int algorithm(const struct ctrl_jobrt *rt, const struct api_algo *algo,
		     struct ctrl_launch *out, struct buf *err)
{
	const struct api_job_spec *spec = &rt->spec;
	const struct api_distribution *dist;
	int ret;

	ret = api_algo_check(algo, spec->training_image, spec, err);
	if (!ret)
		ret = ctrl_jobrt_dist(rt, &dist, err);
	if (ret)
		return ret;
	if (spec->arguments &&
	    (!spec->arguments[0] || strcmp(spec->arguments[0], "train") ||
	     spec->arguments[1])) {
		/* The algorithm's image runs `train`; anything else would be
		 * dropped without a word. */
		(void)buf_addf(err,
			       "the built-in algorithm '%s' takes no "
			       "ContainerArguments but train",
			       api_algo_name(algo));
		return ERR_INVALID;
	}
	if (dist->mode != API_DIST_NONE) {
		(void)buf_addf(err,
			       "the built-in algorithm '%s' distributes itself "
			       "over the job's hosts; it takes no distribution "
			       "(%s)",
			       api_algo_name(algo),
			       api_dist_mode_name(dist->mode));
		return ERR_INVALID;
	}
	out->mode = API_LAUNCH_EXEC;
	out->argv = argv_join(NULL, (char **)api_algo_argv(algo), NULL);
	return 0;
}

int ctrl_image_resolve(const struct ctrl_registry *reg,
		       const struct ctrl_jobrt *rt, struct ctrl_launch *out,
		       struct buf *err)
{
	const struct api_job_spec *spec = &rt->spec;
	const char *image = spec->training_image;
	const char *runtime;
	const char *prog;
	const char *dir;
	const char *mapped;
	const struct api_algo *algo;
	char *train_args[] = { (char *)"train", NULL };

	memset(out, 0, sizeof(*out));
	mapped = NULL;
	if (strncmp(image, "file://", 7)) {
		mapped = ctrl_registry_mapped(reg, image);
		if (mapped && mapped[0] != '/')
			return container(rt, mapped, out, err);
		/* A built-in algorithm, unless a Python of the operator's
		 * runs the image's name as script mode. */
		prog = api_job_spec_hp(spec, "sagemaker_program");
		algo = NULL;
		if (!mapped)
			algo = api_algo_find(image, prog,
					     spec->entrypoint != NULL);
		if (algo)
			return algorithm(rt, algo, out, err);
		if (!mapped && !lookup(image))
			return container(rt, image, out, err);
	}
	if (spec->entrypoint) {
		/* ContainerEntrypoint replaces the image's entry point. */
		out->mode = API_LAUNCH_EXEC;
		out->argv = argv_join(NULL, spec->entrypoint, spec->arguments);
		return 0;
	}
	if (!strncmp(image, "file://", 7)) {
		if (image[7] != '/') {
			(void)buf_addf(err,
				       "TrainingImage '%s' must be "
				       "file:///absolute/path",
				       image);
			return ERR_INVALID;
		}
		out->mode = API_LAUNCH_EXEC;
		out->argv = argv_join(
			image + 7,
			spec->arguments ? spec->arguments : train_args, NULL);
		return 0;
	}
	/* A Python --image-map names (a virtual environment of the
	 * operator's), else the table's. */
	runtime = mapped ? mapped : lookup(image);
	prog = api_job_spec_hp(spec, "sagemaker_program");
	if (!prog) {
		(void)buf_addf(err,
			       "image '%s' "
			       "runs script mode and needs the hyperparameter "
			       "sagemaker_program (or ContainerEntrypoint); "
			       "to run an image of your own under this name, "
			       "map it with trainctld --image-map",
			       image);
		return ERR_INVALID;
	}
	out->mode = API_LAUNCH_SCRIPT;
	out->runtime = xstrdup(runtime);
	out->program = api_hp_string(prog);
	dir = api_job_spec_hp(spec, "sagemaker_submit_directory");
	if (dir)
		out->submit_directory = api_hp_string(dir);
	(void)api_framework_from_image(image, &out->framework);
	return 0;
}

void ctrl_launch_release(struct ctrl_launch *l)
{
	strv_free(l->argv);
	free(l->runtime);
	free(l->program);
	free(l->submit_directory);
	free(l->image);
	free(l->want);
	strv_free(l->entrypoint);
	api_framework_release(&l->framework);
	memset(l, 0, sizeof(*l));
}
