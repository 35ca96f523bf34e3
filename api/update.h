#ifndef API_UPDATE_H
#define API_UPDATE_H

#include <stddef.h>

#include "common/buf.h"

/* UpdateTrainingJob, parsed. */
struct api_update_request {
	char *name;
	int keep_alive;	  /* ResourceConfig.KeepAlivePeriodInSeconds, -1: absent */
	int remote_debug; /* RemoteDebugConfig.EnableRemoteDebug: -1 absent, 0, 1 */
	int profiler;	  /* ProfilerConfig or ProfilerRuleConfigurations given */
};

/*
 * Parses and validates an UpdateTrainingJob body. At least one member
 * besides the name must be given. Returns 0 or ERR_INVALID.
 */
int api_update_request_parse(const char *json, size_t len,
			     struct api_update_request *req, struct buf *err);
void api_update_request_release(struct api_update_request *req);

/*
 * The stored request (Describe's echo) with the update's values written
 * in: ResourceConfig.KeepAlivePeriodInSeconds, RemoteDebugConfig. On
 * success *out is a new string the caller frees. Returns 0, ERR_INVALID
 * (request_json is not an object) or ERR_TOOBIG.
 */
int api_request_apply_update(const char *request_json,
			     const struct api_update_request *u, char **out);

#endif
