/*
 * The agent protocol's registration and its reply
 * (docs/agent-protocol.md): an agent says who it is, the controller how
 * often to hear from it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "api/agent_wire.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void api_register_release(struct api_register *r)
{
	free(r->host);
	free(r->version);
	free(r->boot_id);
	free(r->address);
	memset(r, 0, sizeof(*r));
}

int api_register_parse(const char *json, size_t len, struct api_register *r,
		       struct buf *err)
{
	json_t *root;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = api__ap_load(json, len, &root, err);
	if (ret)
		return ret;
	ret = api__ap_get_name(root, "", "host", &r->host, err);
	ret = ret ? ret :
		    api__ap_get_str(root, "", "version", API__AP_REQ,
				    &r->version, err);
	ret = ret ? ret :
		    api__ap_get_name(root, "", "boot_id", &r->boot_id, err);
	ret = ret ? ret :
		    api__ap_get_intv(root, "", "cpus", 0, API__AP_MAX_COUNT,
				     &r->cpus, err);
	ret = ret ? ret :
		    api__ap_get_intv(root, "", "gpus", 0, API__AP_MAX_COUNT,
				     &r->gpus, err);
	ret = ret ? ret :
		    api__ap_get_str(root, "", "address", API__AP_OPT,
				    &r->address, err);
	json_decref(root);
	if (ret)
		api_register_release(r);
	return ret;
}

int api_register_build(const struct api_register *r, struct buf *out)
{
	struct api__jb b = { 0 };
	json_t *root = api__ap_jobj(&b);

	api__ap_put(&b, root, "host", api__ap_jstr(&b, r->host));
	api__ap_put(&b, root, "version", api__ap_jstr(&b, r->version));
	api__ap_put(&b, root, "boot_id", api__ap_jstr(&b, r->boot_id));
	api__ap_put(&b, root, "cpus", api__ap_jint(&b, r->cpus));
	api__ap_put(&b, root, "gpus", api__ap_jint(&b, r->gpus));
	api__ap_put(&b, root, "address", api__ap_jstr(&b, r->address));
	return api__ap_finish(&b, root, out);
}

int api_register_reply_build(int64_t heartbeat_ms, int64_t deadline_ms,
			     struct buf *out)
{
	return api_register_reply_build_tm(heartbeat_ms, deadline_ms, -1, out);
}

int api_register_reply_build_tm(int64_t heartbeat_ms, int64_t deadline_ms,
				int64_t telemetry_ms, struct buf *out)
{
	struct api__jb b = { 0 };
	json_t *root = api__ap_jobj(&b);

	api__ap_put(&b, root, "heartbeat_ms", api__ap_jint(&b, heartbeat_ms));
	api__ap_put(&b, root, "deadline_ms", api__ap_jint(&b, deadline_ms));
	if (telemetry_ms >= 0)
		api__ap_put(&b, root, "telemetry_ms",
			    api__ap_jint(&b, telemetry_ms));
	return api__ap_finish(&b, root, out);
}

int api_register_reply_telemetry(const char *json, size_t len, int64_t *ms,
				 struct buf *err)
{
	json_t *root;
	long long v = 0;
	int is_null = 1, ret;

	*ms = -1;
	ret = api__ap_load(json, len, &root, err);
	if (ret)
		return ret;
	ret = api__ap_get_int(root, "", "telemetry_ms", 0, 3600000, &is_null,
			      &v, err);
	json_decref(root);
	if (!ret && !is_null)
		*ms = v;
	return ret;
}

int api_register_reply_parse(const char *json, size_t len,
			     int64_t *heartbeat_ms, int64_t *deadline_ms,
			     struct buf *err)
{
	json_t *root;
	long long h = 0, d = 0;
	int ret;

	*heartbeat_ms = 0;
	*deadline_ms = 0;
	ret = api__ap_load(json, len, &root, err);
	if (ret)
		return ret;
	ret = api__ap_get_int(root, "", "heartbeat_ms", 1, 3600000, NULL, &h,
			      err);
	ret = ret ? ret :
		    api__ap_get_int(root, "", "deadline_ms", 1, 86400000, NULL,
				    &d, err);
	json_decref(root);
	if (!ret) {
		*heartbeat_ms = h;
		*deadline_ms = d;
	}
	return ret;
}
