#ifndef API_HOSTS_JSON_H
#define API_HOSTS_JSON_H

/*
 * GET /v1/hosts: {"hosts": [{"name", "state", "address", "cpus", "gpus",
 * "last_heartbeat_ms_ago", "job", "algo", "error", "instance_type", "rack",
 * "drained", "drain_reason", "telemetry"}]}: rack is the inventory's (null:
 * none); telemetry is the host's
 * latest sample (api/telemetry.h, without its ranks) or null. state is
 * "provisioning" (no agent registered yet), "ready", "busy", "lost", "removed",
 * "draining" (drained, a job still on it) or "drained".
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct tm_host_sample;

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
	const char *rack;	   /* may be NULL */
	int drained;
	const char *drain_reason; /* may be NULL */
	/* The latest telemetry sample ("telemetry", null when NULL). */
	const struct tm_host_sample *sample;
};

/* Longest drain reason accepted. */
#define API_DRAIN_REASON_MAX 256

/*
 * The body of POST /v1/hosts/{name}/drain: empty, or {"reason": "..."}
 * (at most API_DRAIN_REASON_MAX bytes). *reason is NULL when none was
 * given; the caller frees it. Returns 0 or ERR_INVALID with err.
 */
int api_host_drain_parse(const char *json, size_t len, char **reason,
			 struct buf *err);

/* Builds that body (reason may be NULL: {}). Returns 0 or ERR_NOMEM. */
int api_host_drain_build(const char *reason, struct buf *out);

int api_hosts_build(const struct api_host_info *h, size_t n, struct buf *out);

/*
 * Renders a GET /v1/hosts answer as a table for people (NAME STATE TYPE
 * ADDRESS CPUS GPUS HEARTBEAT JOB, then any error on its own line).
 * Returns 0 or ERR_INVALID with err set.
 */
int api_hosts_table(const char *json, size_t len, struct buf *out,
		    struct buf *err);

/* An image a host holds. */
struct api_host_image {
	char *name;    /* names[0], else digest; NULL when neither */
	char *id;      /* NULL when absent */
	char *created; /* NULL when absent */
	int64_t size;  /* bytes, 0 when absent */
};

/*
 * GET /v1/hosts/{name}/images: {"images": [{"names", "digest", "id",
 * "size", "created"}] or null until the host reports them, "prune":
 * {"done": N}}; POST /v1/hosts/{name}/images/prune answers {"prune": N}.
 */
struct api_host_images {
	int reported; /* "images" is a list */
	struct api_host_image *images;
	size_t n;
	int64_t prune;	    /* "prune" when an integer, else 0 */
	int64_t prune_done; /* prune.done, -1 when absent */
};

/*
 * Reads either answer into *out, which the caller releases with
 * api_host_images_release(). Members of another type read as absent.
 * Returns 0, or ERR_INVALID when json is not a JSON object (nothing to
 * release then).
 */
int api_host_images_parse(const char *json, size_t len,
			  struct api_host_images *out);

void api_host_images_release(struct api_host_images *im);

#endif
