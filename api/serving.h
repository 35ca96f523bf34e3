#ifndef API_SERVING_H
#define API_SERVING_H

/*
 * What a request of SageMaker's inference operations (CreateModel,
 * CreateEndpointConfig, CreateEndpoint, CreateTransformJob, ...) names,
 * so that their refusal can point at the model a training job made
 * (controller/serving.c).
 */
#include <stddef.h>

#include "common/buf.h"

/* The names a request holds; NULL when absent. Strings are owned. */
struct api_serving_req {
	/* ModelName, EndpointConfigName, EndpointName, TransformJobName,
	 * and ProductionVariants[].ModelName: names that may be a training
	 * job's (the SDK names a model and endpoint after the job). */
	char **names;
	size_t n_names;
	/* PrimaryContainer.ModelDataUrl or Containers[0].ModelDataUrl. */
	char *model_data_url;
};

/*
 * Reads what body (len bytes, a JSON object) names. Members of other
 * types are ignored: the request is refused whatever it holds. Returns 0,
 * or ERR_INVALID (err says why) when body is not a JSON object; release
 * out with api_serving_req_release() either way.
 */
int api_serving_req_parse(const char *body, size_t len,
			  struct api_serving_req *out, struct buf *err);
void api_serving_req_release(struct api_serving_req *r);

#endif
