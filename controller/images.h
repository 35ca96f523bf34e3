#ifndef CTRL_IMAGES_H
#define CTRL_IMAGES_H

/*
 * What AlgorithmSpecification.TrainingImage means (docs/containers.md), in
 * this order: a file:// executable run on the host with the argument
 * `train`; a name --image-map maps to a container image (or to a Python
 * of the operator's, for script mode); one of SageMaker's built-in
 * algorithm images with no program of the job's own (api/algorithm.h):
 * the algorithm's runner from runtime/python, or a refusal for an
 * algorithm or version not served; a name in the
 * image table, which runs script mode with the host's runtime
 * (trainctl/python, and SageMaker's framework images matched by repository
 * name); any other image reference: a container image, pulled from its
 * registry and run with `train` (or ContainerEntrypoint/Arguments) as
 * SageMaker runs it.
 */
#include "api/agent_proto.h"
#include "api/framework.h"
#include "api/job_spec.h"
#include "common/buf.h"

struct ctrl_launch {
	enum api_launch_mode mode;
	char **argv;		/* exec: NULL-terminated */
	char *runtime;		/* script */
	char *program;		/* script: sagemaker_program */
	char *submit_directory; /* script: may be NULL */
	/* script: the framework and Python versions the image's tag asks
	 * for (api/framework.h; zeroed: none) */
	struct api_framework framework;
	/* container: the image pinned by digest (NULL: not pinned yet, pin
	 * `want` first), ContainerEntrypoint (NULL: the image's); argv holds
	 * the arguments */
	char *image;
	char *want;
	char **entrypoint;
};

struct ctrl_jobrt;
struct ctrl_registry;

/*
 * Resolves how the job of rt runs (its spec and distribution; rt->image is
 * its image pinned by digest, when it has been). Returns 0, or ERR_INVALID with
 * err saying what is wrong (not an image reference, script mode without
 * sagemaker_program, a distribution containers cannot run, a built-in
 * algorithm, version or hyperparameter not served).
 */
int ctrl_image_resolve(const struct ctrl_registry *reg,
		       const struct ctrl_jobrt *rt, struct ctrl_launch *out,
		       struct buf *err);

void ctrl_launch_release(struct ctrl_launch *l);

#endif
