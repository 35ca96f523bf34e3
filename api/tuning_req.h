#ifndef API_TUNING_REQ_H
#define API_TUNING_REQ_H

/*
 * The CreateHyperParameterTuningJob request of create-tuning-job, built
 * from its flags over an optional --cli-input-json document. No I/O.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/client.h"
#include "common/buf.h"

/* create-tuning-job's flags; borrowed strings, NULL / 0 = not given. */
struct api_tuning_flags {
	const char *name;	    /* HyperParameterTuningJobName */
	const char *strategy;	    /* Random, Grid, Bayesian, Hyperband */
	const char *objective;	    /* "Maximize:METRIC" or "Minimize:..." */
	const char *early_stopping; /* Off or Auto */
	int max_jobs;		    /* MaxNumberOfTrainingJobs */
	int max_parallel;	    /* MaxParallelTrainingJobs */
	int has_seed;
	int64_t seed; /* RandomSeed */
	/* "NAME=continuous:MIN:MAX[:SCALE]", "NAME=integer:...",
	 * "NAME=categorical:A,B,C" */
	const char *const *params;
	size_t n_params;
	/* The training job definition's flags (name unused): --static is
	 * hyperparameters, --metric-definition metrics. */
	const struct api_client_create *def;
	int def_given; /* any of them was given */
};

/*
 * Builds a CreateHyperParameterTuningJob body into out (compact JSON).
 * base_json, when not NULL, is the --cli-input-json document (len bytes)
 * and the flags override its members: scalars are replaced, --param
 * replaces the range of the same name (in the definition's
 * HyperParameterRanges when it has them, else in ParameterRanges), and the
 * definition flags apply to TrainingJobDefinition as create-training-job
 * applies them to its request, with the same defaults. Strategy defaults
 * to Bayesian and MaxParallelTrainingJobs to 1, as in the SageMaker SDK.
 * Returns 0, or ERR_INVALID with err naming the flag or member at fault.
 */
int api_tuning_request_build(const struct api_tuning_flags *f,
			     const char *base_json, size_t len, struct buf *out,
			     struct buf *err);

#endif
