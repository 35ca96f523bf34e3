#include <string.h>

#include "api/algorithm.h"
#include "api/job_spec.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The hyperparameters SageMaker's XGBoost algorithm documents, as its
 * container validates them; the runner (runtime/python/trainctl_algorithms)
 * checks their values. Those marked 0 exist there but are not served here
 * (k-fold cross-validation, Dask on GPUs): refused by name rather than
 * ignored.
 */
static const struct {
	const char *name;
	int served;
} xgb_hps[] = {
	{ "num_round", 1 },
	{ "objective", 1 },
	{ "eta", 1 },
	{ "gamma", 1 },
	{ "max_depth", 1 },
	{ "min_child_weight", 1 },
	{ "max_delta_step", 1 },
	{ "subsample", 1 },
	{ "colsample_bytree", 1 },
	{ "colsample_bylevel", 1 },
	{ "colsample_bynode", 1 },
	{ "lambda", 1 },
	{ "alpha", 1 },
	{ "eval_metric", 1 },
	{ "early_stopping_rounds", 1 },
	{ "csv_weights", 1 },
	{ "booster", 1 },
	{ "verbosity", 1 },
	{ "nthread", 1 },
	{ "tree_method", 1 },
	{ "sketch_eps", 1 },
	{ "scale_pos_weight", 1 },
	{ "updater", 1 },
	{ "dsplit", 1 },
	{ "refresh_leaf", 1 },
	{ "process_type", 1 },
	{ "grow_policy", 1 },
	{ "max_leaves", 1 },
	{ "max_bin", 1 },
	{ "predictor", 1 },
	{ "monotone_constraints", 1 },
	{ "interaction_constraints", 1 },
	{ "sample_type", 1 },
	{ "normalize_type", 1 },
	{ "rate_drop", 1 },
	{ "one_drop", 1 },
	{ "skip_drop", 1 },
	{ "lambda_bias", 1 },
	{ "tweedie_variance_power", 1 },
	{ "num_class", 1 },
	{ "base_score", 1 },
	{ "seed", 1 },
	{ "num_parallel_tree", 1 },
	{ "aft_loss_distribution", 1 },
	{ "aft_loss_distribution_scale", 1 },
	{ "deterministic_histogram", 1 },
	{ "sampling_method", 1 },
	{ "prob_buffer_row", 1 },
	{ "_tuning_objective_metric", 1 },
	{ "save_model_on_termination", 0 },
	{ "_kfold", 0 },
	{ "_num_cv_round", 0 },
	{ "use_dask_gpu_training", 0 },
};

/*
 * The metrics the algorithm's evaluation lines carry, as its container
 * names them (validation:<eval_metric>): XGBoost's own, then those
 * SageMaker's container adds (the runner computes them).
 */
static const char *const xgb_metrics[] = {
	"auc",
	"aucpr",
	"map",
	"ndcg",
	"aft-nloglik",
	"cox-nloglik",
	"error",
	"gamma-deviance",
	"gamma-nloglik",
	"interval-regression-accuracy",
	"logloss",
	"mae",
	"mape",
	"merror",
	"mlogloss",
	"mphe",
	"poisson-nloglik",
	"rmse",
	"rmsle",
	"tweedie-nloglik",
	"accuracy",
	"balanced_accuracy",
	"f1",
	"f1_binary",
	"f1_macro",
	"precision",
	"precision_macro",
	"precision_micro",
	"recall",
	"recall_macro",
	"recall_micro",
	"mse",
	"r2",
};

/*
 * The line the runner prints after each round, as SageMaker's log shows it
 * (#011 is the tab): "[3]#011train-rmse:0.51#011validation-rmse:0.63". The
 * capture stops at the number so that a metric that is not the last on
 * its line reads right too.
 */
#define XGB_METRIC_REGEX                   \
	"\\[[0-9]+\\].*#011validation-%s:" \
	"([-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

static const char *const xgb_versions[] = { "1.7-1", NULL };
static const char *const xgb_argv[] = { "/usr/bin/python3", "-m",
					"trainctl_algorithms.xgb", "train",
					NULL };

struct api_algo {
	const char *name;
	const char *repo;
	const char *const *versions; /* NULL: not served */
	const char *const *argv;     /* the runner, when served */
};

/*
 * The repositories of SageMaker's built-in algorithm images, as its SDK's
 * image_uris.retrieve() names them. Repository "xgboost" is the first
 * XGBoost (0.72, tags "1" and "latest"), not served.
 */
static const struct api_algo algos[] = {
	{ "xgboost", "sagemaker-xgboost", xgb_versions, xgb_argv },
	{ "xgboost 0.72", "xgboost", NULL, NULL },
	{ "linear-learner", "linear-learner", NULL, NULL },
	{ "kmeans", "kmeans", NULL, NULL },
	{ "knn", "knn", NULL, NULL },
	{ "pca", "pca", NULL, NULL },
	{ "factorization-machines", "factorization-machines", NULL, NULL },
	{ "ntm", "ntm", NULL, NULL },
	{ "lda", "lda", NULL, NULL },
	{ "blazingtext", "blazingtext", NULL, NULL },
	{ "image-classification", "image-classification", NULL, NULL },
	{ "object-detection", "object-detection", NULL, NULL },
	{ "semantic-segmentation", "semantic-segmentation", NULL, NULL },
	{ "seq2seq", "seq2seq", NULL, NULL },
	{ "randomcutforest", "randomcutforest", NULL, NULL },
	{ "ipinsights", "ipinsights", NULL, NULL },
	{ "object2vec", "object2vec", NULL, NULL },
	{ "forecasting-deepar", "forecasting-deepar", NULL, NULL },
};

/* "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1":
 * the repository's last part and the tag (empty when none). */
static void split_image(const char *image, const char **repo, size_t *n,
			const char **tag)
{
	const char *start = strrchr(image, '/');
	const char *colon;

	start = start ? start + 1 : image;
	*repo = start;
	*n = strcspn(start, ":@");
	colon = start[*n] == ':' ? start + *n + 1 : NULL;
	*tag = colon ? colon : "";
}

/* Whether s (n bytes) ends with suffix. */
static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/*
 * Whether image is in one of SageMaker's registries, as the SDK names
 * them: ACCOUNT.dkr.ecr.REGION.amazonaws.com[.cn]/REPOSITORY:TAG.
 */
static int from_ecr(const char *image)
{
	const char *slash = strchr(image, '/');
	char host[256];
	size_t n;

	if (!slash || (size_t)(slash - image) >= sizeof(host))
		return 0;
	n = (size_t)(slash - image);
	memcpy(host, image, n);
	host[n] = '\0';
	return strstr(host, ".dkr.ecr.") &&
	       (ends_with(host, n, ".amazonaws.com") ||
		ends_with(host, n, ".amazonaws.com.cn"));
}

const struct api_algo *api_algo_find(const char *image, const char *program,
				     int entrypoint)
{
	const char *repo, *tag;
	size_t n, i;

	if (!image || program || entrypoint || !strncmp(image, "file://", 7))
		return NULL;
	split_image(image, &repo, &n, &tag);
	for (i = 0; i < ARRAY_SIZE(algos); i++) {
		if (strlen(algos[i].repo) != n ||
		    strncmp(repo, algos[i].repo, n))
			continue;
		/* An image of someone's own with the same name runs as a
		 * container; the served one answers to its bare name too, as
		 * the script-mode images do. */
		if (from_ecr(image) || (algos[i].versions && repo == image))
			return &algos[i];
	}
	return NULL;
}

const char *api_algo_name(const struct api_algo *a)
{
	return a->name;
}

const char *const *api_algo_argv(const struct api_algo *a)
{
	return a->argv;
}

/* Whether tag is version, or version and a suffix ("1.7-1-cpu-py3"). */
static int tag_is(const char *tag, const char *version)
{
	size_t n = strlen(version);

	if (strncmp(tag, version, n))
		return 0;
	return tag[n] == '\0' || tag[n] == '-';
}

static int check_version(const struct api_algo *a, const char *image,
			 struct buf *err)
{
	const char *repo, *tag;
	size_t n, i;

	split_image(image, &repo, &n, &tag);
	for (i = 0; a->versions[i]; i++)
		if (tag_is(tag, a->versions[i]))
			return 0;
	(void)buf_addf(err,
		       "image '%s': version '%s' of the built-in algorithm "
		       "'%s' is not served here (served: %s); map the image "
		       "to one of your own with trainctld --image-map "
		       "(docs/algorithms.md)",
		       image, tag, a->name, a->versions[0]);
	return ERR_INVALID;
}

static int check_hp(const char *name, struct buf *err)
{
	size_t i;

	/* The SDK's and the toolkit's own, never the algorithm's. */
	if (!strncmp(name, "sagemaker_", 10))
		return 0;
	for (i = 0; i < ARRAY_SIZE(xgb_hps); i++) {
		if (strcmp(name, xgb_hps[i].name))
			continue;
		if (xgb_hps[i].served)
			return 0;
		(void)buf_addf(err,
			       "hyperparameter '%s' of the built-in algorithm "
			       "'xgboost' is not served here",
			       name);
		return ERR_INVALID;
	}
	(void)buf_addf(err,
		       "hyperparameter '%s' is not one of the built-in "
		       "algorithm 'xgboost' (docs/algorithms.md)",
		       name);
	return ERR_INVALID;
}

int api_algo_check(const struct api_algo *a, const char *image,
		   const struct api_job_spec *spec, struct buf *err)
{
	size_t i;
	int ret;

	if (!a->versions) {
		(void)buf_addf(
			err,
			"image '%s' is SageMaker's built-in algorithm "
			"'%s', which trainctl does not serve (it serves "
			"xgboost 1.7-1); map the image to one of your own "
			"with trainctld --image-map (docs/algorithms.md)",
			image, a->name);
		return ERR_INVALID;
	}
	ret = check_version(a, image, err);
	for (i = 0; !ret && i < spec->n_hyperparameters; i++)
		ret = check_hp(spec->hyperparameters[i].key, err);
	if (!ret && !api_job_spec_hp(spec, "num_round")) {
		(void)buf_adds(err, "the built-in algorithm 'xgboost' needs "
				    "the hyperparameter num_round");
		ret = ERR_INVALID;
	}
	return ret;
}

/* The algorithm that image runs for spec, if it is one served here. */
static const struct api_algo *served(const char *image, const char *program)
{
	const struct api_algo *a = api_algo_find(image, program, 0);

	return a && a->versions ? a : NULL;
}

void api_algo_fill_metrics(struct api_job_spec *spec)
{
	size_t i, n = ARRAY_SIZE(xgb_metrics);
	struct buf b = BUF_INIT;

	if (spec->n_metrics || spec->entrypoint ||
	    !served(spec->training_image,
		    api_job_spec_hp(spec, "sagemaker_program")))
		return;
	spec->metrics = xcalloc(n, sizeof(*spec->metrics));
	for (i = 0; i < n; i++) {
		buf_reset(&b);
		(void)buf_addf(&b, "validation:%s", xgb_metrics[i]);
		spec->metrics[i].name = xstrdup(b.data);
		buf_reset(&b);
		(void)buf_addf(&b, XGB_METRIC_REGEX, xgb_metrics[i]);
		spec->metrics[i].regex = xstrdup(b.data);
	}
	spec->n_metrics = n;
	buf_release(&b);
}

int api_algo_has_metric(const char *image, const char *program,
			const char *metric)
{
	size_t i;

	if (!metric || !served(image, program) ||
	    strncmp(metric, "validation:", 11))
		return 0;
	for (i = 0; i < ARRAY_SIZE(xgb_metrics); i++)
		if (!strcmp(metric + 11, xgb_metrics[i]))
			return 1;
	return 0;
}
