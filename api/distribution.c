/*
 * Distribution modes from hyperparameters. The SDK JSON-encodes every
 * hyperparameter value (json.dumps), so `true`, `"true"` and `2`, `"2"`
 * all arrive as text; the toolkit decodes them before it looks.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/distribution.h"
#include "api/names.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static const char *const mode_names[] = {
	[API_DIST_NONE] = "none",
	[API_DIST_TORCH] = "torch_distributed",
	[API_DIST_MPI] = "mpi",
	[API_DIST_PARAMETER_SERVER] = "parameter_server",
	[API_DIST_MULTI_WORKER_MIRRORED] = "multi_worker_mirrored_strategy",
};

const char *api_dist_mode_name(enum api_dist_mode m)
{
	return api__name_of(mode_names, ARRAY_SIZE(mode_names), m, "none");
}

int api_dist_mode_parse(const char *s, enum api_dist_mode *m)
{
	long v = api__name_find(mode_names, ARRAY_SIZE(mode_names), s);

	if (v < 0)
		return ERR_INVALID;
	*m = (enum api_dist_mode)v;
	return 0;
}

/* The decoded text of a value: "x" for "\"x\"", else the value itself. */
static char *decoded(const char *value)
{
	json_t *j = json_loads(value, JSON_DECODE_ANY, NULL);
	char *s;

	if (j && json_is_string(j))
		s = xstrdup(json_string_value(j));
	else
		s = xstrdup(value);
	json_decref(j);
	return s;
}

int api_hp_true(const char *value)
{
	char *s;
	int yes;

	if (!value)
		return 0;
	s = decoded(value);
	yes = !strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "1");
	free(s);
	return yes;
}

static int hp_int(const struct api_job_spec *spec, const char *key, int lo,
		  int hi, int *out, struct buf *err)
{
	const char *v = api_job_spec_hp(spec, key);
	char *s, *end;
	long n;

	if (!v)
		return 0;
	s = decoded(v);
	errno = 0;
	n = strtol(s, &end, 10);
	if (!*s || *end || errno || n < lo || n > hi) {
		(void)buf_addf(err,
			       "Hyperparameter '%s' must be an integer from %d "
			       "to %d (got '%s').",
			       key, lo, hi, v);
		free(s);
		return ERR_INVALID;
	}
	free(s);
	*out = (int)n;
	return 0;
}

/* Modes the SDK can ask for that need software trainctl does not run. */
static const char *const unsupported[] = {
	"sagemaker_pytorch_ddp_enabled",
	"sagemaker_distributed_dataparallel_enabled",
	"sagemaker_pytorch_xla_multi_worker_enabled",
};

int api_distribution_parse(const struct api_job_spec *spec,
			   struct api_distribution *d, struct buf *err)
{
	static const struct {
		const char *key;
		enum api_dist_mode mode;
	} modes[] = {
		{ "sagemaker_torch_distributed_enabled", API_DIST_TORCH },
		{ "sagemaker_mpi_enabled", API_DIST_MPI },
		{ "sagemaker_parameter_server_enabled",
		  API_DIST_PARAMETER_SERVER },
		{ "sagemaker_multi_worker_mirrored_strategy_enabled",
		  API_DIST_MULTI_WORKER_MIRRORED },
	};
	const char *first = NULL;
	const char *v;
	size_t i;
	int ret = 0;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < ARRAY_SIZE(unsupported); i++)
		if (api_hp_true(api_job_spec_hp(spec, unsupported[i]))) {
			(void)buf_addf(err,
				       "Hyperparameter '%s': this distribution "
				       "needs SageMaker's own libraries, which "
				       "trainctl does not run; use "
				       "torch_distributed or mpi instead.",
				       unsupported[i]);
			return ERR_INVALID;
		}
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		if (!api_hp_true(api_job_spec_hp(spec, modes[i].key)))
			continue;
		if (first) {
			(void)buf_addf(err,
				       "Hyperparameters '%s' and '%s' both "
				       "enable a distribution; choose one.",
				       first, modes[i].key);
			return ERR_INVALID;
		}
		first = modes[i].key;
		d->mode = modes[i].mode;
	}
	switch (d->mode) {
	case API_DIST_TORCH:
		ret = hp_int(spec, "sagemaker_trainctl_processes_per_host", 1,
			     API_DIST_MAX_PROCS, &d->processes_per_host, err);
		break;
	case API_DIST_MPI:
		ret = hp_int(spec, "sagemaker_mpi_num_of_processes_per_host", 1,
			     API_DIST_MAX_PROCS, &d->processes_per_host, err);
		ret = ret ? ret :
			    hp_int(spec, "sagemaker_mpi_num_processes", 1,
				   API_DIST_MAX_PROCS * 256, &d->mpi_processes,
				   err);
		v = api_job_spec_hp(spec, "sagemaker_mpi_custom_mpi_options");
		if (!ret && v) {
			d->mpi_options = decoded(v);
			if (!*d->mpi_options) {
				free(d->mpi_options);
				d->mpi_options = NULL;
			}
		}
		break;
	case API_DIST_PARAMETER_SERVER:
		ret = hp_int(spec, "sagemaker_trainctl_parameter_servers", 1,
			     API_DIST_MAX_PROCS, &d->ps_servers, err);
		break;
	default:
		break;
	}
	if (ret)
		api_distribution_release(d);
	return ret;
}

void api_distribution_release(struct api_distribution *d)
{
	free(d->mpi_options);
	memset(d, 0, sizeof(*d));
}

static json_t *hostport(const char *addr, int port)
{
	struct buf b = BUF_INIT;
	json_t *s;

	(void)buf_addf(&b, "%s:%d", addr, port);
	s = json_string(b.data);
	buf_release(&b);
	return s;
}

int api_tf_config_build(enum api_dist_mode mode, const char *const *addresses,
			size_t n_hosts, size_t n_ps, int port_base,
			const char *type, int index, struct buf *out)
{
	json_t *root = json_object(), *cluster = json_object();
	json_t *worker = json_array(), *task = json_object();
	char *text;
	size_t i;
	int ret = 0;

	if (mode == API_DIST_MULTI_WORKER_MIRRORED) {
		for (i = 0; i < n_hosts; i++)
			json_array_append_new(worker,
					      hostport(addresses[i],
						       port_base + 2 * (int)i));
	} else {
		json_t *master = json_array(), *ps = json_array();

		json_array_append_new(master,
				      hostport(addresses[0], port_base));
		for (i = 1; i < n_hosts; i++)
			json_array_append_new(worker,
					      hostport(addresses[i],
						       port_base + 2 * (int)i));
		for (i = 0; i < n_ps && i < n_hosts; i++)
			json_array_append_new(
				ps, hostport(addresses[i],
					     port_base + 2 * (int)i + 1));
		json_object_set_new(cluster, "master", master);
		json_object_set_new(cluster, "ps", ps);
	}
	json_object_set_new(cluster, "worker", worker);
	json_object_set_new(root, "cluster", cluster);
	json_object_set_new(root, "environment", json_string("cloud"));
	json_object_set_new(task, "type", json_string(type));
	json_object_set_new(task, "index", json_integer(index));
	json_object_set_new(root, "task", task);
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text || buf_adds(out, text))
		ret = ERR_NOMEM;
	free(text);
	json_decref(root);
	return ret;
}
