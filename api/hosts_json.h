#ifndef API_HOSTS_JSON_H
#define API_HOSTS_JSON_H

/*
 * GET /v1/hosts: {"hosts": [{"name", "state", "address", "cpus", "gpus",
 * "last_heartbeat_ms_ago", "job", "algo", "error", "instance_type"}]}. state is
 * "provisioning" (no agent registered yet), "ready", "busy" or "lost".
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct api_host_info {
	const char *name;
	const char *state;
	const char *address; /* may be NULL */
	int cpus;
	int gpus;
	int64_t heartbeat_age_ms;  /* -1: never */
	const char *job;	   /* may be NULL */
	const char *algo;	   /* may be NULL */
	const char *error;	   /* last provisioning error, may be NULL */
	const char *instance_type; /* "any" for local hosts */
};

int api_hosts_build(const struct api_host_info *h, size_t n, struct buf *out);

/*
 * Renders a GET /v1/hosts answer as a table for people (NAME STATE TYPE
 * ADDRESS CPUS GPUS HEARTBEAT JOB, then any error on its own line).
 * Returns 0 or ERR_INVALID with err set.
 */
int api_hosts_table(const char *json, size_t len, struct buf *out,
		    struct buf *err);

#endif
