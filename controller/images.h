#ifndef CTRL_IMAGES_H
#define CTRL_IMAGES_H

/*
 * What AlgorithmSpecification.TrainingImage means without containers
 * (DESIGN.md "Emulation decisions"): a file:// executable run with the
 * argument `train`, or a name in the image table that runs script mode with
 * a runtime (trainctl/python, and SageMaker's framework images matched by
 * repository name).
 */
#include "api/agent_proto.h"
#include "api/job_spec.h"
#include "common/buf.h"

struct ctrl_launch {
	enum api_launch_mode mode;
	char **argv;		/* exec: NULL-terminated */
	char *runtime;		/* script */
	char *program;		/* script: sagemaker_program */
	char *submit_directory; /* script: may be NULL */
};

/*
 * Resolves how spec runs. Returns 0, or ERR_INVALID with err saying what is
 * wrong (unknown image, script mode without sagemaker_program).
 */
int ctrl_image_resolve(const struct api_job_spec *spec, struct ctrl_launch *out,
		       struct buf *err);

void ctrl_launch_release(struct ctrl_launch *l);

#endif
