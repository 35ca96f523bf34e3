#ifndef CTRL_CWLOGS_H
#define CTRL_CWLOGS_H

/*
 * A CloudWatch-Logs-compatible subset on the JSON 1.1 endpoint, so that
 * `aws logs tail`, `aws logs get-log-events` and boto3's logs client read
 * training job logs: Logs_20140328.DescribeLogStreams, GetLogEvents and
 * FilterLogEvents over the log group /aws/sagemaker/TrainingJobs, with one
 * stream per host of a job, <job>/algo-<n>-<epoch of its first file>, made
 * of the host's <job>/algo-<n>-<epoch> files of every attempt in order
 * (contract section 8, controller/obs/logs.h). Requests are signed for
 * service "logs".
 */
#include "controller/reply.h"

#define CTRL_CWLOGS_GROUP "/aws/sagemaker/TrainingJobs"

/* Its operations' rows, by Logs_20140328.* X-Amz-Target (route.h). */
extern const struct ctrl_route_block ctrl_cwlogs_routes;

#endif
