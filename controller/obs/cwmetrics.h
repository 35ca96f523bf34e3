#ifndef CTRL_CWMETRICS_H
#define CTRL_CWMETRICS_H

/*
 * A CloudWatch-compatible subset for training job metrics, so that the
 * SageMaker SDK's TrainingJobAnalytics, `aws cloudwatch` and boto3's
 * cloudwatch client read them: ListMetrics, GetMetricStatistics and
 * GetMetricData over the namespace /aws/sagemaker/TrainingJobs, one
 * dimension TrainingJobName, one metric per MetricDefinitions name (the
 * series the controller stores from the job's logs), and SageMaker's host
 * metrics (CPUUtilization, MemoryUtilization, DiskUtilization,
 * GPUUtilization, GPUMemoryUtilization; Unit Percent) with one dimension
 * Host = "<TrainingJobName>/algo-N", from the telemetry of the job's hosts
 * while it ran (controller/obs/telemetry.h). Spoken in every
 * protocol of the service model (api/cwmetrics.h); requests are signed
 * for service "monitoring".
 */
#include <stddef.h>

#include "controller/caller.h"
#include "controller/reply.h"

#define CTRL_CWM_NAMESPACE "/aws/sagemaker/TrainingJobs"
#define CTRL_CWM_DIMENSION "TrainingJobName"
/* The host metrics' dimension: "<TrainingJobName>/algo-N". */
#define CTRL_CWM_HOST_DIMENSION "Host"
#define CTRL_CWM_SERVICE "monitoring"

/*
 * The protocol (enum api_cwm_proto) a request speaks, or -1 when it is no
 * CloudWatch request: JSON 1.0 by its X-Amz-Target, RPC v2 CBOR by its
 * path, awsQuery by a form POSTed to "/" without a target.
 */
int ctrl_cwm_proto(const char *method, const char *url, const char *target,
		   const char *content_type);

/*
 * Answers a CloudWatch request of protocol proto into resp and sets
 * *content_type (static text).
 */
void ctrl_cwm_serve(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    int proto, const char *method, const char *url,
		    const char *target, const char *body, size_t len,
		    struct ctrl_response *resp, const char **content_type);

/*
 * Rewrites an error answer made by the rest of the controller (an AWS JSON
 * error body, e.g. a refused signature) in proto's form.
 */
void ctrl_cwm_wrap_error(int proto, struct ctrl_response *resp,
			 const char **content_type);

#endif
