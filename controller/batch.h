#ifndef CTRL_BATCH_H
#define CTRL_BATCH_H

/*
 * AWS Batch's service-job API (docs/batch.md): service environments, job
 * queues, scheduling policies, quota shares and service jobs, whose
 * training jobs are made by the same path as CreateTrainingJob.
 *
 * This header is the face of controller/batch/: objects.c answers the
 * four kinds of objects, jobs.c the service jobs and holds the rows.
 */
struct ctrl_route_block;

/* The rows, POST /v1/<operation lowercased>, signed for service batch. */
extern const struct ctrl_route_block ctrl_batch_routes;

#endif
