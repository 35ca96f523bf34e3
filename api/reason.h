#ifndef API_REASON_H
#define API_REASON_H

/*
 * FailureReason texts start with a category and ": " ("AlgorithmError:
 * rank 0 exited with code 1"), as the service writes them. The category
 * of failures that are the platform's fault, not the job's:
 */
#define API_REASON_INTERNAL "InternalServerError"

/*
 * Whether reason (NULL: none) is of the InternalServerError category:
 * the failures SageMaker retries, and a tuning job runs again once.
 */
int api_reason_is_internal(const char *reason);

#endif
