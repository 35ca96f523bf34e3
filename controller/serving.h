#ifndef CTRL_SERVING_H
#define CTRL_SERVING_H

/*
 * SageMaker's inference operations: trainctl trains and does not serve,
 * so CreateModel, CreateEndpointConfig, CreateEndpoint and
 * CreateTransformJob are refused, with an answer that names the model a
 * training job made when the request points at one (its ModelDataUrl, or
 * a model, endpoint or transform named after a training job, as the
 * SageMaker Python SDK names them) and docs/serving.md, which says how to
 * serve it elsewhere.
 */
#include "controller/route.h"

/* Its rows, by X-Amz-Target (controller/front.c). */
extern const struct ctrl_route_block ctrl_serving_routes;

#endif
