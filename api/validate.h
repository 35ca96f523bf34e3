#ifndef API_VALIDATE_H
#define API_VALIDATE_H

/*
 * Validation of request JSON against the SageMaker service model's shapes
 * (generated into api/model_gen.c by scripts/gen_model.py from botocore's
 * service-2.json, both client generations merged). Internal to api/: it is
 * the only api/ header besides json_util.h that mentions jansson.
 */
#include <jansson.h>

#include "common/buf.h"

/*
 * Checks value against the named shape (e.g. "CreateTrainingJobRequest"):
 * required members, JSON types, min/max lengths and values, patterns, enums
 * and map/list sizes, recursively. Unknown members are ignored. Returns 0
 * when valid; ERR_INVALID with err set to SageMaker's wording otherwise:
 *   "1 validation error detected: Value 'a_b' at 'trainingJobName' failed to
 *    satisfy constraint: Member must satisfy regular expression pattern:
 *    ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
 * (several errors: "2 validation errors detected: ...; ..."). ERR_NOTFOUND
 * when the shape is unknown. Thread-safe.
 */
int api_validate(const char *shape, const json_t *value, struct buf *err);

#endif
