#ifndef API_ALGORITHM_H
#define API_ALGORITHM_H

/*
 * SageMaker's built-in algorithms, named by their training image
 * (docs/algorithms.md). A job runs algorithm mode when its TrainingImage's
 * repository is a built-in algorithm's and it names no program of its own
 * (no hyperparameter sagemaker_program, no ContainerEntrypoint). trainctl
 * serves XGBoost (repository sagemaker-xgboost) with the host's
 * python3-xgboost; the others are known by name so that a job asking for
 * one is refused with a message instead of a failed image pull.
 */
#include <stddef.h>

#include "api/job_spec.h"
#include "common/buf.h"

struct api_algo;

/*
 * The built-in algorithm image runs algorithm mode for, or NULL: not a
 * built-in algorithm's repository, or a program of the job's own
 * (sagemaker_program; entrypoint non-zero: ContainerEntrypoint). The result
 * is static.
 */
const struct api_algo *api_algo_find(const char *image, const char *program,
				     int entrypoint);

/* The algorithm's name as SageMaker's SDK spells it ("xgboost"). */
const char *api_algo_name(const struct api_algo *a);

/*
 * Whether a job of spec on image can run algorithm a here: a served
 * algorithm, a version of it that is served (the image's tag), every
 * hyperparameter one the algorithm documents, the required ones given.
 * Returns 0, or ERR_INVALID with err saying what is wrong.
 */
int api_algo_check(const struct api_algo *a, const char *image,
		   const struct api_job_spec *spec, struct buf *err);

/*
 * The program algorithm a runs as, a NULL-terminated argv of static
 * strings (a Python module of runtime/python, run by the host's python3).
 */
const char *const *api_algo_argv(const struct api_algo *a);

/*
 * Fills spec's MetricDefinitions with the built-in ones of the algorithm
 * its image runs, when the request gave none, so that the job's metrics
 * are read from its log as SageMaker reads them. Nothing otherwise.
 */
void api_algo_fill_metrics(struct api_job_spec *spec);

/*
 * Whether metric is one of the built-in metrics of the algorithm image
 * runs for a job without program (tuning objectives need no
 * MetricDefinitions for them).
 */
int api_algo_has_metric(const char *image, const char *program,
			const char *metric);

#endif
