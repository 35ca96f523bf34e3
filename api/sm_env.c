/*
 * The SageMaker training environment, as sagemaker-training-toolkit (TK)
 * computes it. Every rule below names the TK code it follows; the files are
 * aws/sagemaker-training-toolkit src/sagemaker_training/environment.py
 * (Environment.__init__, its get_* helpers and to_env_vars()), mapping.py
 * (to_env_vars, to_cmd_args, split_by_criteria) and params.py. Values go
 * through Python's own rules (api/pyobj.h), since the bytes a script reads
 * come from json.loads, json.dumps and str().
 */
#include <stdlib.h>
#include <string.h>

#include "api/pyobj.h"
#include "api/sm_env.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define DEFAULT_BASE_DIR "/opt/ml"
#define LOG_LEVEL_INFO 20 /* logging.INFO, TK's default log level */

/* params.SAGEMAKER_HYPERPARAMETERS: split off, never framework params. */
static const char *const reserved_hps[] = {
	"sagemaker_program",
	"sagemaker_submit_directory",
	"sagemaker_enable_cloudwatch_metrics",
	"sagemaker_region",
	"sagemaker_container_log_level",
	"sagemaker_job_name",
	"default_user_module_name",
	"_tuning_objective_metric",
	"sagemaker_s3_output",
};

/*
 * get_distribution_instance_groups_from_resource_config(): any of these
 * truthy puts the current group into distribution_instance_groups.
 */
static const char *const distribution_flags[] = {
	"sagemaker_mpi_enabled",
	"sagemaker_parameter_server_enabled",
	"sagemaker_distributed_dataparallel_enabled",
	"sagemaker_pytorch_ddp_enabled",
	"sagemaker_pytorch_xla_multi_worker_enabled",
	"sagemaker_multi_worker_mirrored_strategy_enabled",
	"sagemaker_torch_distributed_enabled",
};

/* Everything one build holds, freed in one place. */
struct tk {
	struct api__py *hps_file;
	struct api__py *idc;
	struct api__py *rc;
	struct api__py *user_hps;     /* split_result.excluded */
	struct api__py *sm_hps;	      /* split_result.included */
	struct api__py *afp;	      /* additional_framework_parameters */
	struct api__py *training_env; /* dict(self) */
	struct api__py *env_src;      /* the mapping to_env_vars() formats */
	struct api__py *user_args;
	struct buf err;
};

static int is_reserved(const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(reserved_hps); i++)
		if (strlen(reserved_hps[i]) == len &&
		    !memcmp(reserved_hps[i], key, len))
			return 1;
	return 0;
}

static int has_sm_prefix(const struct api__py *key)
{
	return key->len >= 10 && !memcmp(key->str, "sagemaker_", 10);
}

/* posixpath.join(a, b) for one component. */
static char *py_join(const char *a, const char *b)
{
	struct buf out = BUF_INIT;

	if (b[0] != '/') {
		(void)buf_adds(&out, a);
		if (a[0] && a[strlen(a) - 1] != '/')
			(void)buf_addch(&out, '/');
	}
	(void)buf_adds(&out, b);
	return buf_detach(&out, NULL);
}

static struct api__py *pstr_join(const char *a, const char *b)
{
	char *p = py_join(a, b);
	struct api__py *o = api__py_strz(p);

	free(p);
	return o;
}

static const char *env_lookup(const struct api_sm_env_input *in,
			      const char *name)
{
	size_t i;

	for (i = 0; i < in->n_environment; i++)
		if (in->environment[i].key &&
		    !strcmp(in->environment[i].key, name))
			return in->environment[i].value;
	return NULL;
}

static int load_dict(const char *text, const char *file, struct api__py **out,
		     struct buf *err)
{
	struct buf why = BUF_INIT;
	int ret;

	if (!text)
		text = "{}";
	ret = api__py_loads(text, strlen(text), out, &why);
	if (!ret && (*out)->type != API__PY_DICT) {
		api__py_free(*out);
		*out = NULL;
		(void)buf_adds(&why, "not a JSON object");
		ret = ERR_INVALID;
	}
	if (ret) {
		(void)buf_addf(err, "%s: %s", file, why.data);
		ret = ERR_INVALID;
	}
	buf_release(&why);
	return ret;
}

/*
 * read_hyperparameters(): each value json.loads-ed where that works, else
 * kept as it is; then split_by_criteria() into the user's and TK's own.
 */
static int read_hyperparameters(struct tk *t, const char *text)
{
	size_t i;
	int ret;

	ret = load_dict(text, "hyperparameters.json", &t->hps_file, &t->err);
	if (ret)
		return ret;
	t->user_hps = api__py_dict();
	t->sm_hps = api__py_dict();
	for (i = 0; i < t->hps_file->n; i++) {
		const struct api__py *k = t->hps_file->keys[i];
		const struct api__py *v = t->hps_file->items[i];
		struct api__py *dec = NULL;
		struct buf why = BUF_INIT;

		if (v->type == API__PY_STR) {
			ret = api__py_loads(v->str, v->len, &dec, &why);
			buf_release(&why);
			if (ret == ERR_TOOBIG) {
				/* RecursionError is not caught by TK. */
				(void)buf_addf(&t->err,
					       "hyperparameter '%s': value "
					       "nested too deeply",
					       k->str);
				return ERR_INVALID;
			}
		}
		if (!dec)
			dec = api__py_copy(v);
		if (is_reserved(k->str, k->len) || has_sm_prefix(k))
			api__py_set(t->sm_hps, k->str, k->len, dec);
		else
			api__py_set(t->user_hps, k->str, k->len, dec);
	}
	return 0;
}

/* mapping._decode(): None is "", everything else str(). */
static void py_decode(const struct api__py *o, struct buf *out)
{
	if (o->type != API__PY_NONE)
		(void)api__py_to_str(o, out);
}

/* mapping.to_cmd_args() */
static struct api__py *to_cmd_args(const struct api__py *hps)
{
	struct api__py *args = api__py_list();
	size_t *at = api__py_sorted_keys(hps);
	struct buf b = BUF_INIT;
	size_t i, j;

	for (i = 0; i < hps->n; i++) {
		const struct api__py *k = hps->keys[at[i]];
		const struct api__py *v = hps->items[at[i]];

		/* arg_name(): "--key", "-k" for one character, "" for none. */
		buf_reset(&b);
		if (k->len)
			(void)buf_adds(&b, api__py_strlen(k) > 1 ? "--" : "-");
		(void)buf_add(&b, k->str, k->len);
		api__py_append(args, api__py_str(b.data, b.len));

		/* arg_value(): a mapping becomes "k=v,..." by sorted key. */
		buf_reset(&b);
		if (v->type == API__PY_DICT) {
			size_t *sub = api__py_sorted_keys(v);

			for (j = 0; j < v->n; j++) {
				if (j)
					(void)buf_addch(&b, ',');
				(void)api__py_to_str(v->keys[sub[j]], &b);
				(void)buf_addch(&b, '=');
				(void)api__py_to_str(v->items[sub[j]], &b);
			}
			free(sub);
		} else {
			py_decode(v, &b);
		}
		api__py_append(args, api__py_str(b.data, b.len));
	}
	free(at);
	buf_release(&b);
	return args;
}

/* An environment under construction: a later set() replaces in place. */
struct envmap {
	struct api_kv *kv;
	size_t n;
	size_t cap;
};

static void envmap_set(struct envmap *m, const char *key, const char *value)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->kv[i].key, key)) {
			free(m->kv[i].value);
			m->kv[i].value = xstrdup(value);
			return;
		}
	ALLOC_GROW(m->kv, m->n + 1, m->cap);
	m->kv[m->n].key = xstrdup(key);
	m->kv[m->n].value = xstrdup(value);
	m->n++;
}

/*
 * os.environ[name] = value as Python does it: the name must hold no '='
 * and neither may hold NUL or a surrogate fsencode() cannot write.
 */
static int envmap_py_set(struct envmap *m, const char *name, size_t nlen,
			 const char *value, size_t vlen, struct buf *err)
{
	struct buf n = BUF_INIT, v = BUF_INIT;
	int ret = 0;

	if (memchr(name, '=', nlen) || api__py_fsencode(name, nlen, &n)) {
		(void)buf_adds(err, "illegal environment variable name '");
		(void)buf_add(err, n.data, n.len);
		(void)buf_adds(err, "...'");
		ret = ERR_INVALID;
	} else if (api__py_fsencode(value, vlen, &v)) {
		(void)buf_addf(err,
			       "environment variable %s: value holds a NUL "
			       "or a lone surrogate",
			       n.data);
		ret = ERR_INVALID;
	} else {
		envmap_set(m, n.data, v.data);
	}
	buf_release(&n);
	buf_release(&v);
	return ret;
}

static void envmap_release(struct envmap *m)
{
	api_sm_env_release(m->kv, m->n, NULL);
	memset(m, 0, sizeof(*m));
}

/* mapping.to_env_vars(): "SM_" + key.upper(); str verbatim, None "". */
static int format_env(struct envmap *m, const struct api__py *src,
		      struct buf *err)
{
	struct buf name = BUF_INIT, value = BUF_INIT;
	size_t i, j;
	int ret = 0;

	for (i = 0; !ret && i < src->n; i++) {
		const struct api__py *k = src->keys[i];
		const struct api__py *v = src->items[i];

		buf_reset(&name);
		buf_reset(&value);
		(void)buf_adds(&name, "SM_");
		for (j = 0; j < k->len; j++) {
			char c = k->str[j];

			/* ASCII only: see the header. */
			(void)buf_addch(&name, c >= 'a' && c <= 'z' ?
						       (char)(c - 'a' + 'A') :
						       c);
		}
		if (v->type == API__PY_STR)
			(void)buf_add(&value, v->str, v->len);
		else if (v->type != API__PY_NONE)
			(void)api__py_dumps(v, &value);
		ret = envmap_py_set(m, name.data, name.len, value.data,
				    value.len, err);
	}
	buf_release(&name);
	buf_release(&value);
	return ret;
}

/* TK's paths, all under base_dir. */
struct dirs {
	char *code;
	char *model;
	char *input;
	char *input_data;
	char *input_config;
	char *output;
	char *output_data;
	char *output_intermediate;
};

static void dirs_init(struct dirs *d, const char *base)
{
	d->code = py_join(base, "code");
	d->model = py_join(base, "model");
	d->input = py_join(base, "input");
	d->input_data = py_join(d->input, "data");
	d->input_config = py_join(d->input, "config");
	d->output = py_join(base, "output");
	d->output_data = py_join(d->output, "data");
	d->output_intermediate = py_join(d->output, "intermediate");
}

static void dirs_release(struct dirs *d)
{
	free(d->code);
	free(d->model);
	free(d->input);
	free(d->input_data);
	free(d->input_config);
	free(d->output);
	free(d->output_data);
	free(d->output_intermediate);
}

static int tk_fail(struct tk *t, const char *msg)
{
	(void)buf_adds(&t->err, msg);
	return ERR_INVALID;
}

static struct api__py *copy_or(const struct api__py *v, struct api__py *dflt)
{
	if (!v)
		return dflt;
	api__py_free(dflt);
	return api__py_copy(v);
}

/* The instance-group half of Environment.__init__(). */
struct groups {
	struct api__py *current_hosts; /* get_current_instance_group_hosts() */
	struct api__py *names;	       /* get_instance_groups() */
	struct api__py *by_name;       /* get_instance_groups_dict() */
	struct api__py *dist_groups;   /* distribution_instance_groups */
	struct api__py *dist_hosts;    /* get_distribution_hosts() */
	struct api__py *master;	       /* get_master_hostname(), borrowed */
};

static void groups_release(struct groups *g)
{
	api__py_free(g->current_hosts);
	api__py_free(g->names);
	api__py_free(g->by_name);
	api__py_free(g->dist_groups);
	api__py_free(g->dist_hosts);
}

/* Every instance_groups entry has a string name and a list of hosts. */
static int groups_check(struct tk *t, const struct api__py *igc)
{
	size_t i;

	if (igc && igc->type != API__PY_LIST)
		return tk_fail(t, "resourceconfig.json: 'instance_groups' "
				  "must be a list");
	for (i = 0; igc && i < igc->n; i++) {
		const struct api__py *grp = igc->items[i];
		const struct api__py *name =
			api__py_get(grp, "instance_group_name");

		if (!name || name->type != API__PY_STR)
			return tk_fail(t, "resourceconfig.json: every "
					  "instance_groups entry needs a "
					  "string 'instance_group_name'");
		if (!api__py_get(grp, "hosts") ||
		    api__py_get(grp, "hosts")->type != API__PY_LIST)
			return tk_fail(t, "resourceconfig.json: every "
					  "instance_groups entry needs a "
					  "'hosts' list");
	}
	return 0;
}

/* additional_framework_parameters.get(..., from_resource_config()) */
static struct api__py *dist_groups_of(const struct tk *t,
				      const struct api__py *current_group)
{
	const struct api__py *dig;
	struct api__py *groups;
	size_t j;

	dig = api__py_get(t->afp, "sagemaker_distribution_instance_groups");
	if (dig)
		return api__py_copy(dig);
	groups = api__py_list();
	for (j = 0; j < ARRAY_SIZE(distribution_flags); j++) {
		const struct api__py *f =
			api__py_get(t->afp, distribution_flags[j]);

		if (f && api__py_truthy(f)) {
			api__py_append(groups, api__py_copy(current_group));
			break;
		}
	}
	return groups;
}

/* get_distribution_hosts(): the hosts of the distribution's groups. */
static int dist_hosts_of(struct tk *t, const struct api__py *igc,
			 const struct api__py *hosts, struct groups *g)
{
	size_t i, j;
	int in, ret;

	if (!igc || !igc->n) {
		g->dist_hosts = api__py_copy(hosts); /* local mode */
		return 0;
	}
	g->dist_hosts = api__py_list();
	for (i = 0; i < igc->n; i++) {
		const struct api__py *grp = igc->items[i];
		const struct api__py *gh = api__py_get(grp, "hosts");

		ret = api__py_contains(g->dist_groups,
				       api__py_get(grp, "instance_group_name"),
				       &in);
		if (ret)
			return tk_fail(t, "hyperparameter "
					  "sagemaker_distribution_"
					  "instance_groups must be a "
					  "list of group names");
		for (j = 0; in && j < gh->n; j++)
			api__py_append(g->dist_hosts,
				       api__py_copy(gh->items[j]));
	}
	return 0;
}

static int tk_groups(struct tk *t, const struct api__py *hosts,
		     const struct api__py *current_group, struct groups *g)
{
	const struct api__py *igc = api__py_get(t->rc, "instance_groups");
	size_t i;
	int ret;

	g->current_hosts = api__py_list();
	g->names = api__py_list();
	g->by_name = api__py_dict();
	ret = groups_check(t, igc);
	if (ret)
		return ret;
	for (i = 0; igc && i < igc->n; i++) {
		const struct api__py *grp = igc->items[i];
		const struct api__py *name =
			api__py_get(grp, "instance_group_name");

		api__py_append(g->names, api__py_copy(name));
		api__py_set(g->by_name, name->str, name->len,
			    api__py_copy(grp));
	}
	/* get_current_instance_group_hosts(): the first group so named. */
	for (i = 0; igc && i < igc->n; i++)
		if (api__py_eq(current_group,
			       api__py_get(igc->items[i],
					   "instance_group_name"))) {
			api__py_free(g->current_hosts);
			g->current_hosts = api__py_copy(
				api__py_get(igc->items[i], "hosts"));
			break;
		}

	g->dist_groups = dist_groups_of(t, current_group);
	ret = dist_hosts_of(t, igc, hosts, g);
	if (ret)
		return ret;
	if (g->dist_hosts->n)
		g->master = g->dist_hosts->items[0];
	else if (hosts->n)
		g->master = hosts->items[0];
	else
		return tk_fail(t, "resourceconfig.json: 'hosts' is empty");
	return 0;
}

static void tk_release(struct tk *t)
{
	api__py_free(t->hps_file);
	api__py_free(t->idc);
	api__py_free(t->rc);
	api__py_free(t->user_hps);
	api__py_free(t->sm_hps);
	api__py_free(t->afp);
	api__py_free(t->training_env);
	api__py_free(t->env_src);
	api__py_free(t->user_args);
	buf_release(&t->err);
}

static struct api__py *py_bool_str(const char *s)
{
	/* `mp_parameters and mp_parameters != "{}"` */
	if (!s)
		return api__py_none();
	if (!*s)
		return api__py_strz("");
	return api__py_bool(strcmp(s, "{}") != 0);
}

static void te_set(struct api__py *d, const char *key, struct api__py *v)
{
	api__py_set(d, key, strlen(key), v);
}

/* `str(sagemaker_hyperparameters.get(name, dflt))` */
static struct api__py *hp_str(const struct tk *t, const char *name,
			      const char *dflt)
{
	const struct api__py *v = api__py_get(t->sm_hps, name);
	struct buf b = BUF_INIT;
	struct api__py *o;

	if (!v)
		return api__py_strz(dflt);
	(void)api__py_to_str(v, &b);
	o = api__py_str(b.data, b.len);
	buf_release(&b);
	return o;
}

/* What Environment.__init__() requires of the resource config and the
 * SageMaker hyperparameters it puts in os.environ. */
static int tk_check(struct tk *t)
{
	const struct api__py *hosts, *current_host, *v;

	hosts = api__py_get(t->rc, "hosts");
	current_host = api__py_get(t->rc, "current_host");
	if (!hosts || hosts->type != API__PY_LIST)
		return tk_fail(t,
			       "resourceconfig.json: 'hosts' must be a list");
	if (!current_host || current_host->type != API__PY_STR)
		return tk_fail(t, "resourceconfig.json: 'current_host' must be "
				  "a string");
	v = api__py_get(t->sm_hps, "sagemaker_job_name");
	if (v && v->type != API__PY_STR)
		return tk_fail(t, "hyperparameter sagemaker_job_name must "
				  "decode to a string (TK puts it in "
				  "os.environ)");
	v = api__py_get(t->sm_hps, "sagemaker_region");
	if (v && api__py_truthy(v) && v->type != API__PY_STR)
		return tk_fail(t, "hyperparameter sagemaker_region must "
				  "decode to a string (TK puts it in "
				  "os.environ)");
	return 0;
}

/* module_name: SAGEMAKER_PROGRAM, else str(hp.get(...)): "None". */
static struct api__py *module_name_of(const struct tk *t,
				      const char *program_env)
{
	struct api__py *module_name;

	module_name = program_env ? api__py_strz(program_env) :
				    hp_str(t, "sagemaker_program", "None");
	if (module_name->len >= 3 &&
	    !memcmp(module_name->str + module_name->len - 3, ".py", 3)) {
		module_name->len -= 3;
		module_name->str[module_name->len] = '\0';
	}
	return module_name;
}

/*
 * dict(self) after the instance groups: t->training_env from
 * "additional_framework_parameters" on, in TK's order. *channels and
 * *module_name are its entries of those, for to_env_vars().
 */
static void te_fill(struct tk *t, const struct api_sm_env_input *in,
		    const struct dirs *d, const struct groups *g,
		    const char *program_env, struct api__py **channels_out,
		    struct api__py **module_name_out)
{
	const struct api__py *hosts = api__py_get(t->rc, "hosts");
	const struct api__py *current_host = api__py_get(t->rc, "current_host");
	struct api__py *te = t->training_env, *channels, *module_name;
	const char *s;
	size_t i;

	te_set(te, "additional_framework_parameters", api__py_copy(t->afp));
	channels = api__py_dict();
	for (i = 0; i < t->idc->n; i++)
		api__py_set(channels, t->idc->keys[i]->str,
			    t->idc->keys[i]->len,
			    pstr_join(d->input_data, t->idc->keys[i]->str));
	te_set(te, "channel_input_dirs", channels);
	te_set(te, "current_host", api__py_copy(current_host));
	te_set(te, "current_instance_group_hosts",
	       api__py_copy(g->current_hosts));
	te_set(te, "distribution_hosts", api__py_copy(g->dist_hosts));
	te_set(te, "distribution_instance_groups",
	       api__py_copy(g->dist_groups));
	s = in->framework_module ? in->framework_module :
				   env_lookup(in, "SAGEMAKER_TRAINING_MODULE");
	te_set(te, "framework_module", s ? api__py_strz(s) : api__py_none());
	te_set(te, "hosts", api__py_copy(hosts));
	te_set(te, "hyperparameters", api__py_copy(t->user_hps));
	te_set(te, "input_config_dir", api__py_strz(d->input_config));
	te_set(te, "input_data_config", api__py_copy(t->idc));
	te_set(te, "input_dir", api__py_strz(d->input));
	te_set(te, "instance_groups", api__py_copy(g->names));
	te_set(te, "instance_groups_dict", api__py_copy(g->by_name));
	te_set(te, "is_hetero", api__py_bool(g->names->n > 1));
	te_set(te, "is_master",
	       api__py_bool(api__py_eq(current_host, g->master)));
	te_set(te, "is_modelparallel_enabled",
	       py_bool_str(env_lookup(in, "SM_HP_MP_PARAMETERS")));
	te_set(te, "is_smddpmprun_installed", api__py_bool(0));
	te_set(te, "is_smddprun_installed", api__py_bool(0));
	s = in->job_name ? in->job_name : env_lookup(in, "TRAINING_JOB_NAME");
	te_set(te, "job_name", s ? api__py_strz(s) : api__py_none());
	te_set(te, "log_level",
	       copy_or(api__py_get(t->sm_hps, "sagemaker_container_log_level"),
		       api__py_int(LOG_LEVEL_INFO)));
	te_set(te, "master_hostname", api__py_copy(g->master));
	te_set(te, "model_dir", api__py_strz(d->model));
	te_set(te, "module_dir",
	       in->module_dir ?
		       api__py_strz(in->module_dir) :
		       hp_str(t, "sagemaker_submit_directory", d->code));
	module_name = module_name_of(t, program_env);
	te_set(te, "module_name", module_name);
	te_set(te, "network_interface_name",
	       copy_or(api__py_get(t->rc, "network_interface_name"),
		       api__py_strz("eth0")));
	te_set(te, "num_cpus", api__py_int(in->num_cpus));
	te_set(te, "num_gpus", api__py_int(in->num_gpus));
	te_set(te, "num_neurons", api__py_int(in->num_neurons));
	te_set(te, "output_data_dir", api__py_strz(d->output_data));
	te_set(te, "output_dir", api__py_strz(d->output));
	te_set(te, "output_intermediate_dir",
	       api__py_strz(d->output_intermediate));
	te_set(te, "resource_config", api__py_copy(t->rc));
	te_set(te, "topology",
	       copy_or(api__py_get(t->rc, "topology"), api__py_none()));
	/* `self._user_entry_point or hp.get("sagemaker_program")` */
	if (program_env && *program_env)
		te_set(te, "user_entry_point", api__py_strz(program_env));
	else
		te_set(te, "user_entry_point",
		       copy_or(api__py_get(t->sm_hps, "sagemaker_program"),
			       api__py_none()));
	*channels_out = channels;
	*module_name_out = module_name;
}

/* The channels' names, sorted. */
static struct api__py *sorted_names(const struct api__py *channels)
{
	struct api__py *names = api__py_list();
	size_t *at = api__py_sorted_keys(channels);
	size_t i;

	for (i = 0; i < channels->n; i++)
		api__py_append(names, api__py_copy(channels->keys[at[i]]));
	free(at);
	return names;
}

/* Adds prefix+key for every entry of d to src, e.g. "hp_epochs". */
static void src_set_prefixed(struct api__py *src, const char *prefix,
			     const struct api__py *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		struct buf k = BUF_INIT;

		(void)buf_adds(&k, prefix);
		(void)buf_add(&k, d->keys[i]->str, d->keys[i]->len);
		api__py_set(src, k.data, k.len, api__py_copy(d->items[i]));
		buf_release(&k);
	}
}

/* to_env_vars(): the mapping, in TK's order, into t->env_src. */
static void tk_env_src(struct tk *t, const struct api_sm_env_input *in,
		       const struct dirs *d, const struct groups *g,
		       const struct api__py *channels,
		       const struct api__py *module_name)
{
	const struct api__py *te = t->training_env, *v;
	struct api__py *src;

	t->env_src = src = api__py_dict();
	te_set(src, "hosts", api__py_copy(api__py_get(t->rc, "hosts")));
	te_set(src, "network_interface_name",
	       api__py_copy(api__py_get(te, "network_interface_name")));
	te_set(src, "hps", api__py_copy(t->user_hps));
	te_set(src, "user_entry_point",
	       api__py_copy(api__py_get(te, "user_entry_point")));
	te_set(src, "framework_params", api__py_copy(t->afp));
	te_set(src, "resource_config", api__py_copy(t->rc));
	te_set(src, "input_data_config", api__py_copy(t->idc));
	te_set(src, "output_data_dir", api__py_strz(d->output_data));
	te_set(src, "channels", sorted_names(channels));
	te_set(src, "current_host",
	       api__py_copy(api__py_get(t->rc, "current_host")));
	te_set(src, "current_instance_type",
	       api__py_copy(api__py_get(te, "current_instance_type")));
	te_set(src, "current_instance_group",
	       api__py_copy(api__py_get(te, "current_instance_group")));
	te_set(src, "current_instance_group_hosts",
	       api__py_copy(g->current_hosts));
	te_set(src, "instance_groups", api__py_copy(g->names));
	te_set(src, "instance_groups_dict", api__py_copy(g->by_name));
	te_set(src, "distribution_instance_groups",
	       api__py_copy(g->dist_groups));
	te_set(src, "is_hetero", api__py_copy(api__py_get(te, "is_hetero")));
	te_set(src, "module_name", api__py_copy(module_name));
	te_set(src, "log_level", api__py_copy(api__py_get(te, "log_level")));
	te_set(src, "framework_module",
	       api__py_copy(api__py_get(te, "framework_module")));
	te_set(src, "input_dir", api__py_strz(d->input));
	te_set(src, "input_config_dir", api__py_strz(d->input_config));
	te_set(src, "output_dir", api__py_strz(d->output));
	te_set(src, "num_cpus", api__py_int(in->num_cpus));
	te_set(src, "num_gpus", api__py_int(in->num_gpus));
	te_set(src, "num_neurons", api__py_int(in->num_neurons));
	te_set(src, "model_dir", api__py_strz(d->model));
	te_set(src, "module_dir", api__py_copy(api__py_get(te, "module_dir")));
	te_set(src, "training_env", api__py_copy(te));
	te_set(src, "user_args", api__py_copy(t->user_args));
	te_set(src, "output_intermediate_dir",
	       api__py_strz(d->output_intermediate));
	/* SM_TOPOLOGY only when the resource config has a non-empty one. */
	v = api__py_get(te, "topology");
	if (api__py_truthy(v))
		te_set(src, "topology", api__py_copy(v));
	src_set_prefixed(src, "channel_", channels);
	src_set_prefixed(src, "hp_", t->user_hps);
}

/* Environment.__init__(): fills t->training_env and t->env_src. */
static int tk_environment(struct tk *t, const struct api_sm_env_input *in,
			  const struct dirs *d)
{
	const char *program_env = in->user_entry_point ?
					  in->user_entry_point :
					  env_lookup(in, "SAGEMAKER_PROGRAM");
	struct api__py *te, *channels, *module_name;
	struct groups g = { 0 };
	size_t i;
	int ret;

	ret = tk_check(t);
	if (ret)
		return ret;

	t->afp = api__py_dict();
	for (i = 0; i < t->sm_hps->n; i++)
		if (!is_reserved(t->sm_hps->keys[i]->str,
				 t->sm_hps->keys[i]->len))
			api__py_set(t->afp, t->sm_hps->keys[i]->str,
				    t->sm_hps->keys[i]->len,
				    api__py_copy(t->sm_hps->items[i]));

	t->training_env = te = api__py_dict();
	te_set(te, "current_instance_type",
	       copy_or(api__py_get(t->rc, "current_instance_type"),
		       api__py_strz("local")));
	te_set(te, "current_instance_group",
	       copy_or(api__py_get(t->rc, "current_group_name"),
		       api__py_strz("homogeneousCluster")));
	ret = tk_groups(t, api__py_get(t->rc, "hosts"),
			api__py_get(te, "current_instance_group"), &g);
	if (ret)
		goto out;
	te_fill(t, in, d, &g, program_env, &channels, &module_name);

	t->user_args = to_cmd_args(t->user_hps);

	tk_env_src(t, in, d, &g, channels, module_name);
	ret = 0;
out:
	groups_release(&g);
	return ret;
}

/* The process environment, layer by layer (see the header). */
static int tk_layers(struct tk *t, const struct api_sm_env_input *in,
		     struct envmap *m)
{
	const struct api__py *v, *host;
	const char *region;
	size_t i;
	int ret;

	for (i = 0; i < in->n_environment; i++)
		if (in->environment[i].key && in->environment[i].value)
			envmap_set(m, in->environment[i].key,
				   in->environment[i].value);
	if (in->job_name)
		envmap_set(m, "TRAINING_JOB_NAME", in->job_name);
	if (in->job_arn)
		envmap_set(m, "TRAINING_JOB_ARN", in->job_arn);

	v = api__py_get(t->sm_hps, "sagemaker_job_name");
	ret = envmap_py_set(m, "SAGEMAKER_JOB_NAME", 18, v ? v->str : "",
			    v ? v->len : 0, &t->err);
	if (ret)
		return ret;
	host = api__py_get(t->rc, "current_host");
	ret = envmap_py_set(m, "CURRENT_HOST", 12, host->str, host->len,
			    &t->err);
	if (ret)
		return ret;
	/* hp.get("sagemaker_region", boto3 region) or "" */
	v = api__py_get(t->sm_hps, "sagemaker_region");
	if (v) {
		ret = envmap_py_set(m, "SAGEMAKER_REGION", 16,
				    api__py_truthy(v) ? v->str : "",
				    api__py_truthy(v) ? v->len : 0, &t->err);
	} else {
		region = env_lookup(in, "AWS_DEFAULT_REGION");
		if (!region)
			region = in->region ? in->region : "";
		envmap_set(m, "SAGEMAKER_REGION", region);
	}
	if (ret)
		return ret;
	return format_env(m, t->env_src, &t->err);
}

/* Copies a list of str into a NULL-terminated argv, as subprocess would. */
static int to_argv(const struct api__py *args, char ***out, struct buf *err)
{
	char **argv = xcalloc(args->n + 1, sizeof(*argv));
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < args->n; i++) {
		buf_reset(&b);
		if (api__py_fsencode(args->items[i]->str, args->items[i]->len,
				     &b)) {
			(void)buf_addf(err,
				       "argument %zu holds a NUL or a lone "
				       "surrogate",
				       i + 1);
			buf_release(&b);
			api_sm_argv_free(argv);
			return ERR_INVALID;
		}
		argv[i] = xstrdup(b.data);
	}
	buf_release(&b);
	*out = argv;
	return 0;
}

int api_sm_env_build(const struct api_sm_env_input *in, struct api_kv **env,
		     size_t *n_env, char ***user_args, struct buf *err)
{
	struct tk t = { 0 };
	struct envmap m = { 0 };
	struct dirs d;
	int ret;

	*env = NULL;
	*n_env = 0;
	*user_args = NULL;
	buf_init(&t.err, 0);
	dirs_init(&d, in->base_dir && *in->base_dir ? in->base_dir :
						      DEFAULT_BASE_DIR);
	if (!in->resource_config_json) {
		ret = tk_fail(&t, "resourceconfig.json: missing");
		goto out;
	}
	ret = load_dict(in->resource_config_json, "resourceconfig.json", &t.rc,
			&t.err);
	if (!ret)
		ret = load_dict(in->input_data_config_json,
				"inputdataconfig.json", &t.idc, &t.err);
	if (!ret)
		ret = read_hyperparameters(&t, in->hyperparameters_json);
	if (!ret)
		ret = tk_environment(&t, in, &d);
	if (!ret)
		ret = tk_layers(&t, in, &m);
	if (!ret)
		ret = to_argv(t.user_args, user_args, &t.err);
	if (ret)
		goto out;
	*env = m.kv;
	*n_env = m.n;
	memset(&m, 0, sizeof(m));
out:
	if (ret)
		(void)buf_add(err, t.err.data, t.err.len);
	envmap_release(&m);
	dirs_release(&d);
	tk_release(&t);
	return ret;
}

int api_sm_user_args(const char *hyperparameters_json, char ***argv,
		     struct buf *err)
{
	struct tk t = { 0 };
	int ret;

	*argv = NULL;
	buf_init(&t.err, 0);
	ret = read_hyperparameters(&t, hyperparameters_json);
	if (!ret) {
		t.user_args = to_cmd_args(t.user_hps);
		ret = to_argv(t.user_args, argv, &t.err);
	}
	if (ret)
		(void)buf_add(err, t.err.data, t.err.len);
	tk_release(&t);
	return ret;
}

void api_sm_argv_free(char **argv)
{
	strv_free(argv);
}

void api_sm_env_release(struct api_kv *env, size_t n_env, char **user_args)
{
	api_kvs_free(env, n_env);
	strv_free(user_args);
}

const char *api_sm_env_get(const struct api_kv *env, size_t n_env,
			   const char *name)
{
	size_t i;

	for (i = 0; i < n_env; i++)
		if (!strcmp(env[i].key, name))
			return env[i].value;
	return NULL;
}
