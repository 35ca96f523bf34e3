/*
 * The agent protocol's work message (docs/agent-protocol.md): the
 * assignments the controller hands an agent, parsed and built.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "api/agent_wire.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

static void channel_release(struct api_channel *c)
{
	free(c->name);
	free(c->s3_uri);
	free(c->s3_data_type);
	free(c->distribution);
	free(c->content_type);
	free(c->input_mode);
	free(c->compression);
	free(c->record_wrapper);
}

void api_assignment_release(struct api_assignment *a)
{
	size_t i;

	free(a->job);
	free(a->job_uid);
	free(a->job_arn);
	free(a->algo);
	strv_free(a->hosts);
	if (a->addresses) {
		for (i = 0; i < a->n_hosts; i++)
			free(a->addresses[i]);
		free(a->addresses);
	}
	free(a->instance_type);
	free(a->hyperparameters_json);
	free(a->input_data_config_json);
	free(a->resource_config_json);
	free(a->debug_hook_config_json);
	free(a->profiler_config_json);
	for (i = 0; a->channels && i < a->n_channels; i++)
		channel_release(&a->channels[i]);
	free(a->channels);
	api_kvs_free(a->environment, a->n_environment);
	strv_free(a->argv);
	free(a->runtime);
	api_framework_release(&a->framework);
	free(a->program);
	free(a->submit_directory);
	free(a->image);
	strv_free(a->entrypoint);
	free(a->registry_auth);
	free(a->run_as);
	free(a->output_path);
	free(a->checkpoint_s3_uri);
	free(a->checkpoint_local_path);
	free(a->debug_s3_uri);
	free(a->debug_local_path);
	free(a->profiler_s3_uri);
	free(a->profiler_local_path);
	free(a->tensorboard_s3_uri);
	free(a->tensorboard_local_path);
	free(a->blob_url);
	free(a->local_root);
	free(a->master_addr);
	free(a->rdzv_url);
	free(a->rdzv_token);
	free(a->peer_token);
	free(a->mpi_options);
	strv_free(a->loc_s3_prefixes);
	strv_free(a->loc_file_roots);
	memset(a, 0, sizeof(*a));
}

static int parse_channels(const json_t *o, const char *where,
			  struct api_assignment *a, struct buf *err)
{
	const json_t *arr, *c;
	char m[256];
	long long v;
	size_t i;
	int ret, is_null;

	ret = api__ap_get_array(o, where, "channels", 0, API_PROTO_MAX_LIST,
				&arr, err);
	if (ret)
		return ret;
	a->channels = xcalloc(json_array_size(arr) + 1, sizeof(*a->channels));
	a->n_channels = json_array_size(arr);
	for (i = 0; !ret && i < a->n_channels; i++) {
		struct api_channel *ch = &a->channels[i];

		api__ap_path_fmt(m, sizeof(m), "%s%schannels[%zu]", where,
				 *where ? "." : "", i);
		c = json_array_get(arr, i);
		if (!json_is_object(c)) {
			(void)buf_addf(err, "member '%s' must be an object", m);
			return ERR_INVALID;
		}
		ret = api__ap_get_name(c, m, "name", &ch->name, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "uri", API__AP_REQ,
					    &ch->s3_uri, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "data_type", API__AP_REQ,
					    &ch->s3_data_type, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "distribution", API__AP_REQ,
					    &ch->distribution, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "content_type", API__AP_OPT,
					    &ch->content_type, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "input_mode", API__AP_OPT,
					    &ch->input_mode, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "compression", API__AP_OPT,
					    &ch->compression, err);
		ret = ret ? ret :
			    api__ap_get_str(c, m, "record_wrapper", API__AP_OPT,
					    &ch->record_wrapper, err);
		if (!ret) {
			long long seed = 0;
			int none = 1;

			ret = api__ap_get_int(c, m, "shuffle_seed", LLONG_MIN,
					      LLONG_MAX, &none, &seed, err);
			ch->shuffle = !none;
			ch->shuffle_seed = seed;
		}
		/* Optional: an older controller sends no shares. */
		ret = ret ? ret :
			    api__ap_get_int(c, m, "shard_count", 0,
					    API_PROTO_MAX_HOSTS, &is_null, &v,
					    err);
		ch->shard_count = (int)v;
		ret = ret ? ret :
			    api__ap_get_int(
				    c, m, "shard_index", 0,
				    ch->shard_count ? ch->shard_count - 1 : 0,
				    &is_null, &v, err);
		ch->shard_index = (int)v;
	}
	return ret;
}

static int parse_hosts(const json_t *o, const char *where,
		       struct api_assignment *a, struct buf *err)
{
	const json_t *addrs, *v;
	char m[256];
	size_t i, j;
	int ret;

	ret = api__ap_get_str_list(o, where, "hosts", 1, API_PROTO_MAX_HOSTS,
				   &a->hosts, &a->n_hosts, err);
	if (ret)
		return ret;
	for (i = 0; i < a->n_hosts; i++) {
		if (!a->hosts[i][0])
			return api__ap_bad(err, where, "hosts",
					   "must not hold an empty name");
		for (j = 0; j < i; j++)
			if (!strcmp(a->hosts[i], a->hosts[j])) {
				api__ap_member(m, sizeof(m), where, "hosts");
				(void)buf_addf(err,
					       "member '%s' lists '%s' twice",
					       m, a->hosts[i]);
				return ERR_INVALID;
			}
	}
	ret = api__ap_get_object(o, where, "addresses", API__AP_REQ, &addrs,
				 err);
	if (ret)
		return ret;
	api__ap_member(m, sizeof(m), where, "addresses");
	a->addresses = xcalloc(a->n_hosts + 1, sizeof(*a->addresses));
	for (i = 0; i < a->n_hosts; i++) {
		v = json_object_get(addrs, a->hosts[i]);
		if (!json_is_string(v))
			return api__ap_bad(
				err, m, a->hosts[i],
				v ? "must be a string" :
				    "is missing (every host needs an "
				    "address)");
		a->addresses[i] = xstrdup(json_string_value(v));
	}
	return 0;
}

/* "distribution" is optional: an older controller sends none. */
static int parse_distribution(const json_t *o, const char *where,
			      struct api_assignment *a, struct buf *err)
{
	const json_t *d;
	char m[256], *mode = NULL;
	long long v = 0;
	int is_null, ret;

	ret = api__ap_get_object(o, where, "distribution", API__AP_OPT, &d,
				 err);
	if (ret || !d)
		return ret;
	api__ap_member(m, sizeof(m), where, "distribution");
	ret = api__ap_get_str(d, m, "mode", API__AP_REQ, &mode, err);
	if (!ret && api_dist_mode_parse(mode, &a->dist_mode))
		ret = api__ap_bad(err, m, "mode", "is not a distribution mode");
	free(mode);
	ret = ret ? ret :
		    api__ap_get_int(d, m, "mpi_processes", 0,
				    API_PROTO_MAX_PROCS * 256, &is_null, &v,
				    err);
	a->mpi_processes = (int)v;
	ret = ret ? ret :
		    api__ap_get_str(d, m, "mpi_options", API__AP_OPT,
				    &a->mpi_options, err);
	ret = ret ? ret :
		    api__ap_get_int(d, m, "ps_servers", 0, API_PROTO_MAX_HOSTS,
				    &is_null, &v, err);
	a->ps_servers = (int)v;
	return ret;
}

static int parse_container(const json_t *l, const char *m,
			   struct api_assignment *a, struct buf *err)
{
	const json_t *ep = json_object_get(l, "entrypoint");
	const json_t *tls = json_object_get(l, "tls_verify");
	int ret;

	ret = api__ap_get_name(l, m, "image", &a->image, err);
	ret = ret ? ret :
		    api__ap_get_str_list(l, m, "argv", 0, API_PROTO_MAX_LIST,
					 &a->argv, NULL, err);
	if (!ret && ep && !json_is_null(ep))
		ret = api__ap_get_str_list(l, m, "entrypoint", 1,
					   API_PROTO_MAX_LIST, &a->entrypoint,
					   NULL, err);
	ret = ret ? ret :
		    api__ap_get_str(l, m, "auth", API__AP_OPT,
				    &a->registry_auth, err);
	if (!ret && !json_is_boolean(tls))
		ret = api__ap_bad(err, m, "tls_verify",
				  "must be true or false");
	a->tls_verify = json_is_true(tls);
	return ret;
}

/* launch "framework": absent, or what the script-mode image asks for. */
static int parse_framework(const json_t *l, const char *where,
			   struct api_framework *f, struct buf *err)
{
	const json_t *sub = NULL, *strict;
	char m[256];
	int ret;

	ret = api__ap_get_object(l, where, "framework", API__AP_OPT, &sub, err);
	if (ret || !sub)
		return ret;
	api__ap_member(m, sizeof(m), where, "framework");
	ret = api__ap_get_str(sub, m, "name", API__AP_OPT, &f->name, err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "dist", API__AP_OPT, &f->dist, err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "version", API__AP_OPT, &f->version,
				    err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "python", API__AP_OPT, &f->python,
				    err);
	strict = json_object_get(sub, "strict");
	if (!ret && strict && !json_is_boolean(strict))
		ret = api__ap_bad(err, m, "strict", "must be true or false");
	f->strict = json_is_true(strict);
	return ret;
}

static int parse_launch(const json_t *o, const char *where,
			struct api_assignment *a, struct buf *err)
{
	const json_t *l;
	char m[256], *mode = NULL;
	int ret;

	ret = api__ap_get_object(o, where, "launch", API__AP_REQ, &l, err);
	if (ret)
		return ret;
	api__ap_member(m, sizeof(m), where, "launch");
	ret = api__ap_get_str(l, m, "mode", API__AP_REQ, &mode, err);
	if (ret)
		return ret;
	if (!strcmp(mode, "exec")) {
		a->launch_mode = API_LAUNCH_EXEC;
		ret = api__ap_get_str_list(l, m, "argv", 1, API_PROTO_MAX_LIST,
					   &a->argv, NULL, err);
	} else if (!strcmp(mode, "script")) {
		a->launch_mode = API_LAUNCH_SCRIPT;
		ret = api__ap_get_name(l, m, "runtime", &a->runtime, err);
		ret = ret ? ret :
			    api__ap_get_name(l, m, "program", &a->program, err);
		ret = ret ? ret :
			    api__ap_get_str(l, m, "submit_directory",
					    API__AP_OPT, &a->submit_directory,
					    err);
		ret = ret ? ret : parse_framework(l, m, &a->framework, err);
	} else if (!strcmp(mode, "container")) {
		a->launch_mode = API_LAUNCH_CONTAINER;
		ret = parse_container(l, m, a, err);
	} else {
		ret = api__ap_bad(
			err, m, "mode",
			"must be \"exec\", \"script\" or \"container\"");
	}
	free(mode);
	return ret;
}

static int parse_hyperparameters(const json_t *o, const char *where,
				 struct api_assignment *a, struct buf *err)
{
	const json_t *h;
	char m[256];
	void *it;
	int ret;

	ret = api__ap_get_object(o, where, "hyperparameters", API__AP_REQ, &h,
				 err);
	if (ret)
		return ret;
	api__ap_member(m, sizeof(m), where, "hyperparameters");
	for (it = json_object_iter((json_t *)h); it;
	     it = json_object_iter_next((json_t *)h, it))
		if (!json_is_string(json_object_iter_value(it)))
			return api__ap_bad(err, m, json_object_iter_key(it),
					   "must be a string");
	return api__ap_get_json_text(o, where, "hyperparameters",
				     &a->hyperparameters_json, err);
}

/* Which job, attempt and host the assignment is for, and what to do. */
static int parse_identity(const json_t *o, const char *where,
			  struct api_assignment *a, struct buf *err)
{
	char *action = NULL;
	int ret;

	ret = api__ap_get_name(o, where, "job", &a->job, err);
	ret = ret ? ret : api__ap_get_uid(o, where, &a->job_uid, err);
	ret = ret ? ret :
		    api__ap_get_intv(o, where, "attempt", 1,
				     API__AP_MAX_ATTEMPT, &a->attempt, err);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "action", API__AP_REQ, &action,
				    err);
	if (!ret && api_action_parse(action, &a->action))
		ret = api__ap_bad(err, where, "action",
				  "must be \"run\", \"stop\" or \"abort\"");
	free(action);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "job_arn", API__AP_REQ,
				    &a->job_arn, err);
	ret = ret ? ret : api__ap_get_name(o, where, "algo", &a->algo, err);
	ret = ret ? ret : parse_hosts(o, where, a, err);
	ret = ret ? ret :
		    api__ap_get_intv(o, where, "host_index", 0,
				     API_PROTO_MAX_HOSTS - 1, &a->host_index,
				     err);
	if (!ret && ((size_t)a->host_index >= a->n_hosts ||
		     strcmp(a->hosts[a->host_index], a->algo)))
		ret = api__ap_bad(err, where, "host_index",
				  "must be the position of algo in hosts");
	return ret;
}

/* What the job runs: its configuration, program and output. */
static int parse_job(const json_t *o, const char *where,
		     struct api_assignment *a, struct buf *err)
{
	int ret;

	ret = api__ap_get_str(o, where, "instance_type", API__AP_REQ,
			      &a->instance_type, err);
	ret = ret ? ret : parse_hyperparameters(o, where, a, err);
	ret = ret ? ret :
		    api__ap_get_json_text(o, where, "input_data_config",
					  &a->input_data_config_json, err);
	ret = ret ? ret :
		    api__ap_get_json_text(o, where, "resource_config",
					  &a->resource_config_json, err);
	ret = ret ? ret :
		    api__ap_get_json_text_opt(o, where, "debug_hook_config",
					      API__AP_OPT,
					      &a->debug_hook_config_json, err);
	ret = ret ? ret :
		    api__ap_get_json_text_opt(o, where, "profiler_config",
					      API__AP_OPT,
					      &a->profiler_config_json, err);
	ret = ret ? ret : parse_channels(o, where, a, err);
	ret = ret ? ret :
		    api__ap_get_str_map(o, where, "environment",
					&a->environment, &a->n_environment,
					err);
	ret = ret ? ret : parse_launch(o, where, a, err);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "output_path", API__AP_REQ,
				    &a->output_path, err);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "run_as", API__AP_OPT, &a->run_as,
				    err);
	if (!ret && a->run_as && !*a->run_as)
		ret = api__ap_bad(err, where, "run_as", "must not be empty");
	return ret;
}

/* The optional "checkpoint" object. */
static int parse_checkpoint(const json_t *o, const char *where,
			    struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = api__ap_get_object(o, where, "checkpoint", API__AP_OPT, &sub,
				 err);
	api__ap_member(m, sizeof(m), where, "checkpoint");
	if (!ret && sub) {
		ret = api__ap_get_str(sub, m, "s3_uri", API__AP_REQ,
				      &a->checkpoint_s3_uri, err);
		ret = ret ? ret :
			    api__ap_get_str(sub, m, "local_path", API__AP_REQ,
					    &a->checkpoint_local_path, err);
	}
	return ret;
}

/* A folder mirrored to S3 ("debug_output", "profiler_output"), optional. */
static int parse_mirror(const json_t *o, const char *where, const char *key,
			char **s3_uri, char **local_path, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = api__ap_get_object(o, where, key, API__AP_OPT, &sub, err);
	api__ap_member(m, sizeof(m), where, key);
	if (!ret && sub) {
		ret = api__ap_get_str(sub, m, "s3_uri", API__AP_REQ, s3_uri,
				      err);
		ret = ret ? ret :
			    api__ap_get_str(sub, m, "local_path", API__AP_REQ,
					    local_path, err);
	}
	return ret;
}

/* The "storage" object. */
static int parse_storage(const json_t *o, const char *where,
			 struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = api__ap_get_object(o, where, "storage", API__AP_REQ, &sub, err);
	api__ap_member(m, sizeof(m), where, "storage");
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "blob_url", API__AP_REQ,
				    &a->blob_url, err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "local_root", API__AP_OPT,
				    &a->local_root, err);
	return ret;
}

/* One list of "locations": null (any) or an array of strings. */
static int parse_location_list(const json_t *sub, const char *m,
			       const char *key, int *any, char ***out,
			       size_t *n, struct buf *err)
{
	const json_t *v = json_object_get(sub, key);

	*any = v && json_is_null(v);
	if (*any)
		return 0;
	return api__ap_get_str_list(sub, m, key, 0, API_PROTO_MAX_LIST, out, n,
				    err);
}

/* The optional "locations" object: absent from an older controller. */
static int parse_locations(const json_t *o, const char *where,
			   struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	size_t i;
	int ret;

	ret = api__ap_get_object(o, where, "locations", API__AP_OPT, &sub, err);
	if (ret || !sub)
		return ret;
	a->has_locations = 1;
	api__ap_member(m, sizeof(m), where, "locations");
	ret = parse_location_list(sub, m, "s3_prefixes", &a->loc_s3_any,
				  &a->loc_s3_prefixes, &a->n_loc_s3_prefixes,
				  err);
	ret = ret ? ret :
		    parse_location_list(sub, m, "file_roots", &a->loc_file_any,
					&a->loc_file_roots,
					&a->n_loc_file_roots, err);
	for (i = 0; !ret && i < a->n_loc_file_roots; i++)
		if (a->loc_file_roots[i][0] != '/')
			ret = api__ap_bad(err, m, "file_roots",
					  "must hold absolute folders");
	return ret;
}

/* The "rendezvous" object. */
static int parse_rendezvous(const json_t *o, const char *where,
			    struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = api__ap_get_object(o, where, "rendezvous", API__AP_REQ, &sub,
				 err);
	api__ap_member(m, sizeof(m), where, "rendezvous");
	ret = ret ? ret :
		    api__ap_get_name(sub, m, "master_addr", &a->master_addr,
				     err);
	ret = ret ? ret :
		    api__ap_get_intv(sub, m, "master_port", 1, 65535,
				     &a->master_port, err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "url", API__AP_OPT, &a->rdzv_url,
				    err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "token", API__AP_OPT,
				    &a->rdzv_token, err);
	ret = ret ? ret :
		    api__ap_get_str(sub, m, "peer_token", API__AP_OPT,
				    &a->peer_token, err);
	return ret;
}

/* "infra_check": absent, or the thresholds and the controller's clock. */
static int parse_infra(const json_t *o, const char *where,
		       struct api_infra_check *c, struct buf *err)
{
	const json_t *sub = NULL, *hold;
	long long v[4] = { 0, 0, 0, 0 };
	char m[64];
	int ret;

	memset(c, 0, sizeof(*c));
	ret = api__ap_get_object(o, where, "infra_check", API__AP_OPT, &sub,
				 err);
	if (ret || !sub)
		return ret;
	api__ap_member(m, sizeof(m), where, "infra_check");
	ret = api__ap_get_int(sub, m, "min_disk_mb", 0, INT32_MAX, NULL, &v[0],
			      err);
	ret = ret ? ret :
		    api__ap_get_int(sub, m, "min_shm_mb", 0, INT32_MAX, NULL,
				    &v[1], err);
	ret = ret ? ret :
		    api__ap_get_int(sub, m, "max_clock_skew_ms", 1,
				    API__AP_MAX_GRACE_MS, NULL, &v[2], err);
	ret = ret ? ret :
		    api__ap_get_int(sub, m, "controller_ms", 0, API__AP_MAX_MS,
				    NULL, &v[3], err);
	if (ret)
		return ret;
	c->enabled = 1;
	c->min_disk_mb = v[0];
	c->min_shm_mb = v[1];
	c->max_skew_ms = v[2];
	c->controller_ms = v[3];
	hold = json_object_get(sub, "hold");
	if (hold && !json_is_boolean(hold))
		return api__ap_bad(err, m, "hold", "must be true or false");
	c->hold = json_is_true(hold);
	hold = json_object_get(sub, "network");
	if (hold && !json_is_boolean(hold))
		return api__ap_bad(err, m, "network", "must be true or false");
	c->network = json_is_true(hold);
	return 0;
}

static int parse_assignment(const json_t *o, const char *where,
			    struct api_assignment *a, struct buf *err)
{
	const json_t *iso;
	long long v = 0;
	int ret, hang_null = 0;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = parse_identity(o, where, a, err);
	ret = ret ? ret : parse_job(o, where, a, err);
	if (ret)
		return ret;

	ret = parse_checkpoint(o, where, a, err);
	ret = ret ? ret :
		    parse_mirror(o, where, "debug_output", &a->debug_s3_uri,
				 &a->debug_local_path, err);
	ret = ret ? ret :
		    parse_mirror(o, where, "profiler_output",
				 &a->profiler_s3_uri, &a->profiler_local_path,
				 err);
	ret = ret ? ret :
		    parse_mirror(o, where, "tensorboard",
				 &a->tensorboard_s3_uri,
				 &a->tensorboard_local_path, err);
	ret = ret ? ret : parse_storage(o, where, a, err);
	ret = ret ? ret : parse_locations(o, where, a, err);
	ret = ret ? ret : parse_rendezvous(o, where, a, err);
	ret = ret ? ret :
		    api__ap_get_intv(o, where, "processes_per_host", 1,
				     API_PROTO_MAX_PROCS,
				     &a->processes_per_host, err);
	ret = ret ? ret : parse_distribution(o, where, a, err);
	ret = ret ? ret :
		    api__ap_get_int(o, where, "grace_ms", 0,
				    API__AP_MAX_GRACE_MS, NULL, &v, err);
	a->grace_ms = v;
	/* Absent (an older controller) or null: no hang detection. */
	v = 0;
	ret = ret ? ret :
		    api__ap_get_int(o, where, "hang_ms", 0,
				    API__AP_MAX_GRACE_MS, &hang_null, &v, err);
	a->hang_ms = v;
	iso = json_object_get(o, "network_isolation");
	if (!ret && iso && !json_is_boolean(iso))
		ret = api__ap_bad(err, where, "network_isolation",
				  "must be true or false");
	a->network_isolation = json_is_true(iso);
	iso = json_object_get(o, "hang_fixed");
	if (!ret && iso && !json_is_boolean(iso))
		ret = api__ap_bad(err, where, "hang_fixed",
				  "must be true or false");
	a->hang_fixed = json_is_true(iso);
	return ret ? ret : parse_infra(o, where, &a->infra, err);
}

void api_work_release(struct api_work *w)
{
	size_t i;

	for (i = 0; w->items && i < w->n; i++)
		api_assignment_release(&w->items[i]);
	free(w->items);
	memset(w, 0, sizeof(*w));
}

int api_work_parse(const char *json, size_t len, struct api_work *w,
		   struct buf *err)
{
	const json_t *arr;
	json_t *root;
	char m[64];
	size_t i;
	long long v = 0;
	int ret, is_null;

	memset(w, 0, sizeof(*w));
	ret = api__ap_load(json, len, &root, err);
	if (ret)
		return ret;
	ret = api__ap_get_int(root, "", "version", 0, INT64_MAX, NULL, &v, err);
	w->version = v;
	ret = ret ? ret :
		    api__ap_get_array(root, "", "assignments", 0,
				      API_PROTO_MAX_ASSIGNMENTS, &arr, err);
	if (!ret) {
		w->n = json_array_size(arr);
		w->items = xcalloc(w->n + 1, sizeof(*w->items));
	}
	for (i = 0; !ret && i < w->n; i++) {
		(void)snprintf(m, sizeof(m), "assignments[%zu]", i);
		ret = parse_assignment(json_array_get(arr, i), m, &w->items[i],
				       err);
	}
	ret = ret ? ret :
		    api__ap_get_int(root, "", "prune_images", 0, INT64_MAX,
				    &is_null, &v, err);
	w->prune_images = ret ? 0 : v;
	json_decref(root);
	if (ret)
		api_work_release(w);
	return ret;
}

/* Which job, attempt and hosts the assignment is for, and what to do. */
static void identity_json(struct api__jb *b, json_t *o,
			  const struct api_assignment *a)
{
	json_t *addrs = api__ap_jobj(b);
	size_t i;

	api__ap_put(b, o, "job", api__ap_jstr(b, a->job));
	if (a->job_uid)
		api__ap_put(b, o, "job_uid", api__ap_jstr(b, a->job_uid));
	api__ap_put(b, o, "attempt", api__ap_jint(b, a->attempt));
	api__ap_put(b, o, "action",
		    api__ap_jstr(b, api_action_name(a->action)));
	api__ap_put(b, o, "job_arn", api__ap_jstr(b, a->job_arn));
	api__ap_put(b, o, "algo", api__ap_jstr(b, a->algo));
	api__ap_put(b, o, "host_index", api__ap_jint(b, a->host_index));
	api__ap_put(b, o, "hosts", api__ap_jlist(b, a->hosts, a->n_hosts));
	for (i = 0; a->hosts && a->addresses && i < a->n_hosts; i++)
		if (a->hosts[i])
			api__ap_put(b, addrs, a->hosts[i],
				    api__ap_jstr(b, a->addresses[i]));
	api__ap_put(b, o, "addresses", addrs);
}

/* The job's configuration objects, kept as their texts. */
static void config_json(struct api__jb *b, json_t *o,
			const struct api_assignment *a)
{
	api__ap_put(b, o, "instance_type", api__ap_jstr(b, a->instance_type));
	api__ap_put(b, o, "hyperparameters",
		    api__ap_jtext(b, a->hyperparameters_json));
	api__ap_put(b, o, "input_data_config",
		    api__ap_jtext(b, a->input_data_config_json));
	api__ap_put(b, o, "resource_config",
		    api__ap_jtext(b, a->resource_config_json));
	if (a->debug_hook_config_json)
		api__ap_put(b, o, "debug_hook_config",
			    api__ap_jtext(b, a->debug_hook_config_json));
	if (a->profiler_config_json)
		api__ap_put(b, o, "profiler_config",
			    api__ap_jtext(b, a->profiler_config_json));
}

static json_t *channel_json(struct api__jb *b, const struct api_channel *c)
{
	json_t *ch = api__ap_jobj(b);

	api__ap_put(b, ch, "name", api__ap_jstr(b, c->name));
	api__ap_put(b, ch, "uri", api__ap_jstr(b, c->s3_uri));
	api__ap_put(b, ch, "data_type", api__ap_jstr(b, c->s3_data_type));
	api__ap_put(b, ch, "distribution", api__ap_jstr(b, c->distribution));
	if (c->content_type)
		api__ap_put(b, ch, "content_type",
			    api__ap_jstr(b, c->content_type));
	if (c->input_mode)
		api__ap_put(b, ch, "input_mode",
			    api__ap_jstr(b, c->input_mode));
	if (c->compression)
		api__ap_put(b, ch, "compression",
			    api__ap_jstr(b, c->compression));
	if (c->record_wrapper)
		api__ap_put(b, ch, "record_wrapper",
			    api__ap_jstr(b, c->record_wrapper));
	if (c->shuffle)
		api__ap_put(b, ch, "shuffle_seed",
			    api__ap_jint(b, (long long)c->shuffle_seed));
	if (c->shard_count) {
		api__ap_put(b, ch, "shard_count",
			    api__ap_jint(b, c->shard_count));
		api__ap_put(b, ch, "shard_index",
			    api__ap_jint(b, c->shard_index));
	}
	return ch;
}

/* The channels and the environment. */
static void inputs_json(struct api__jb *b, json_t *o,
			const struct api_assignment *a)
{
	json_t *chans = api__ap_jarr(b), *env = api__ap_jobj(b);
	size_t i;

	for (i = 0; a->channels && i < a->n_channels; i++)
		api__ap_push(b, chans, channel_json(b, &a->channels[i]));
	api__ap_put(b, o, "channels", chans);
	for (i = 0; a->environment && i < a->n_environment; i++)
		api__ap_put(b, env,
			    a->environment[i].key ? a->environment[i].key : "",
			    api__ap_jstr(b, a->environment[i].value));
	api__ap_put(b, o, "environment", env);
}

static json_t *framework_json(struct api__jb *b, const struct api_framework *f)
{
	json_t *sub = api__ap_jobj(b);

	api__ap_put(b, sub, "name", api__ap_jstr(b, f->name));
	api__ap_put(b, sub, "dist", api__ap_jstr(b, f->dist));
	api__ap_put(b, sub, "version", api__ap_jstr(b, f->version));
	api__ap_put(b, sub, "python", api__ap_jstr(b, f->python));
	if (f->strict)
		api__ap_put(b, sub, "strict", json_true());
	return sub;
}

static json_t *launch_json(struct api__jb *b, const struct api_assignment *a)
{
	json_t *launch = api__ap_jobj(b);

	if (a->launch_mode == API_LAUNCH_SCRIPT) {
		api__ap_put(b, launch, "mode", api__ap_jstr(b, "script"));
		api__ap_put(b, launch, "runtime", api__ap_jstr(b, a->runtime));
		api__ap_put(b, launch, "program", api__ap_jstr(b, a->program));
		api__ap_put(b, launch, "submit_directory",
			    api__ap_jstr(b, a->submit_directory));
		if (a->framework.name || a->framework.version ||
		    a->framework.python)
			api__ap_put(b, launch, "framework",
				    framework_json(b, &a->framework));
	} else if (a->launch_mode == API_LAUNCH_CONTAINER) {
		api__ap_put(b, launch, "mode", api__ap_jstr(b, "container"));
		api__ap_put(b, launch, "image", api__ap_jstr(b, a->image));
		api__ap_put(b, launch, "argv",
			    api__ap_jlist(b, a->argv, strv_len(a->argv)));
		api__ap_put(b, launch, "entrypoint",
			    a->entrypoint ?
				    api__ap_jlist(b, a->entrypoint,
						  strv_len(a->entrypoint)) :
				    json_null());
		api__ap_put(b, launch, "auth",
			    api__ap_jstr(b, a->registry_auth));
		api__ap_put(b, launch, "tls_verify",
			    json_boolean(a->tls_verify));
	} else {
		api__ap_put(b, launch, "mode", api__ap_jstr(b, "exec"));
		api__ap_put(b, launch, "argv",
			    api__ap_jlist(b, a->argv, strv_len(a->argv)));
	}
	return launch;
}

/* {"s3_uri": ..., "local_path": ...}: a folder mirrored to S3. */
static json_t *mirror_json(struct api__jb *b, const char *s3_uri,
			   const char *local_path)
{
	json_t *sub = api__ap_jobj(b);

	api__ap_put(b, sub, "s3_uri", api__ap_jstr(b, s3_uri));
	api__ap_put(b, sub, "local_path", api__ap_jstr(b, local_path));
	return sub;
}

/* Where the job's output goes: model, debug, profiler, checkpoints. */
static void outputs_json(struct api__jb *b, json_t *o,
			 const struct api_assignment *a)
{
	api__ap_put(b, o, "output_path", api__ap_jstr(b, a->output_path));
	if (a->run_as)
		api__ap_put(b, o, "run_as", api__ap_jstr(b, a->run_as));
	if (a->debug_s3_uri)
		api__ap_put(b, o, "debug_output",
			    mirror_json(b, a->debug_s3_uri,
					a->debug_local_path));
	if (a->profiler_s3_uri)
		api__ap_put(b, o, "profiler_output",
			    mirror_json(b, a->profiler_s3_uri,
					a->profiler_local_path));
	if (a->checkpoint_s3_uri || a->checkpoint_local_path)
		api__ap_put(b, o, "checkpoint",
			    mirror_json(b, a->checkpoint_s3_uri,
					a->checkpoint_local_path));
	else
		api__ap_put(b, o, "checkpoint", json_null());
	if (a->tensorboard_s3_uri && a->tensorboard_local_path)
		api__ap_put(b, o, "tensorboard",
			    mirror_json(b, a->tensorboard_s3_uri,
					a->tensorboard_local_path));
}

/* The blob store and the optional locations the job may read. */
static void storage_json(struct api__jb *b, json_t *o,
			 const struct api_assignment *a)
{
	json_t *sub = api__ap_jobj(b);

	api__ap_put(b, sub, "blob_url", api__ap_jstr(b, a->blob_url));
	api__ap_put(b, sub, "local_root", api__ap_jstr(b, a->local_root));
	api__ap_put(b, o, "storage", sub);
	if (!a->has_locations)
		return;
	sub = api__ap_jobj(b);
	api__ap_put(b, sub, "s3_prefixes",
		    a->loc_s3_any ? json_null() :
				    api__ap_jlist(b, a->loc_s3_prefixes,
						  a->n_loc_s3_prefixes));
	api__ap_put(b, sub, "file_roots",
		    a->loc_file_any ? json_null() :
				      api__ap_jlist(b, a->loc_file_roots,
						    a->n_loc_file_roots));
	api__ap_put(b, o, "locations", sub);
}

/* How the hosts find each other and split the work. */
static void cluster_json(struct api__jb *b, json_t *o,
			 const struct api_assignment *a)
{
	json_t *sub = api__ap_jobj(b);

	api__ap_put(b, sub, "master_addr", api__ap_jstr(b, a->master_addr));
	api__ap_put(b, sub, "master_port", api__ap_jint(b, a->master_port));
	api__ap_put(b, sub, "url", api__ap_jstr(b, a->rdzv_url));
	api__ap_put(b, sub, "token", api__ap_jstr(b, a->rdzv_token));
	if (a->peer_token)
		api__ap_put(b, sub, "peer_token",
			    api__ap_jstr(b, a->peer_token));
	api__ap_put(b, o, "rendezvous", sub);
	api__ap_put(b, o, "processes_per_host",
		    api__ap_jint(b, a->processes_per_host));
	sub = api__ap_jobj(b);
	api__ap_put(b, sub, "mode",
		    api__ap_jstr(b, api_dist_mode_name(a->dist_mode)));
	api__ap_put(b, sub, "mpi_processes", api__ap_jint(b, a->mpi_processes));
	api__ap_put(b, sub, "mpi_options", api__ap_jstr(b, a->mpi_options));
	api__ap_put(b, sub, "ps_servers", api__ap_jint(b, a->ps_servers));
	api__ap_put(b, o, "distribution", sub);
}

static json_t *infra_json(struct api__jb *b, const struct api_infra_check *c)
{
	json_t *sub = api__ap_jobj(b);

	api__ap_put(b, sub, "min_disk_mb", api__ap_jint(b, c->min_disk_mb));
	api__ap_put(b, sub, "min_shm_mb", api__ap_jint(b, c->min_shm_mb));
	api__ap_put(b, sub, "max_clock_skew_ms",
		    api__ap_jint(b, c->max_skew_ms));
	api__ap_put(b, sub, "controller_ms", api__ap_jint(b, c->controller_ms));
	if (c->hold)
		api__ap_put(b, sub, "hold", json_true());
	if (c->network)
		api__ap_put(b, sub, "network", json_true());
	return sub;
}

/* Members in the order docs/agent-protocol.md lists them. */
static json_t *assignment_json(struct api__jb *b,
			       const struct api_assignment *a)
{
	json_t *o = api__ap_jobj(b);

	identity_json(b, o, a);
	config_json(b, o, a);
	inputs_json(b, o, a);
	api__ap_put(b, o, "launch", launch_json(b, a));
	outputs_json(b, o, a);
	storage_json(b, o, a);
	cluster_json(b, o, a);
	api__ap_put(b, o, "grace_ms", api__ap_jint(b, a->grace_ms));
	if (a->hang_ms > 0)
		api__ap_put(b, o, "hang_ms", api__ap_jint(b, a->hang_ms));
	if (a->hang_ms > 0 && a->hang_fixed)
		api__ap_put(b, o, "hang_fixed", json_true());
	if (a->network_isolation)
		api__ap_put(b, o, "network_isolation", json_true());
	if (a->infra.enabled)
		api__ap_put(b, o, "infra_check", infra_json(b, &a->infra));
	return o;
}

int api_work_build(const struct api_work *w, struct buf *out)
{
	struct api__jb b = { 0 };
	json_t *root = api__ap_jobj(&b), *arr = api__ap_jarr(&b);
	size_t i;

	api__ap_put(&b, root, "version", api__ap_jint(&b, w->version));
	for (i = 0; w->items && i < w->n; i++)
		api__ap_push(&b, arr, assignment_json(&b, &w->items[i]));
	api__ap_put(&b, root, "assignments", arr);
	if (w->prune_images)
		api__ap_put(&b, root, "prune_images",
			    api__ap_jint(&b, w->prune_images));
	return api__ap_finish(&b, root, out);
}
