#ifndef API_ELASTIC_H
#define API_ELASTIC_H

/*
 * Elastic jobs (docs/distributed.md, "Elastic jobs"): a training job may
 * name, in a reserved tag, the fewest hosts it can train on; when a host
 * is lost and no spare is free it goes on with fewer, and grows back when
 * hosts return.
 */
#include <stddef.h>

#include "api/job_spec.h"
#include "common/buf.h"

/* The reserved tag: an integer, 1 to ResourceConfig.InstanceCount. */
#define API_ELASTIC_TAG "trainctl:min-instance-count"

/*
 * Reads the tag of spec (parsed) into spec->min_instances. Returns 0, or
 * ERR_INVALID with err saying why: a value that is not an integer in
 * range, InstanceGroups (a heterogeneous cluster keeps its shape), or a
 * distribution whose world cannot change size (MPI, parameter servers).
 */
int api_elastic_parse(struct api_job_spec *spec, struct buf *err);

/*
 * The tag's value in a CreateTrainingJob body as stored (checked when it
 * was created): 0 when the job is not elastic or the body does not parse.
 */
int api_elastic_min_of_request(const char *json);

/* Whether a tag key is reserved for trainctl ("trainctl:..."): such tags
 * are read at CreateTrainingJob only, never added or removed later. */
int api_elastic_reserved_key(const char *key);

#endif
