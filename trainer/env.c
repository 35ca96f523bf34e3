/*
 * The job's environment as the SageMaker training toolkit sets it (SM_*)
 * plus trainctl's own TRAINCTL_* variables. Everything is copied into the
 * struct trainer at trainer_init(), so a later setenv() by the program
 * changes nothing and every string lives as long as t.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "trainer/internal.h"
#include "common/banned.h"

extern char **environ;

#define CHANNEL_PREFIX "SM_CHANNEL_"
#define DEFAULT_CKPT_DIR "/opt/ml/checkpoints"

/* Whether any SM_ or TRAINCTL_ variable is set: are we inside a job? */
static int in_job(void)
{
	char **e;

	for (e = environ; e && *e; e++)
		if (!strncmp(*e, "SM_", 3) || !strncmp(*e, "TRAINCTL_", 9))
			return 1;
	return 0;
}

static int set_dir(struct trainer *t, char **dst, const char *var,
		   const char *def)
{
	const char *v = getenv(var);

	if (!v || !*v)
		v = def;
	*dst = trainer__strdup(v);
	if (!*dst)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	return 0;
}

static int add_host(struct trainer *t, const char *h)
{
	char **n;

	n = realloc(t->hosts, (t->n_hosts + 1) * sizeof(*n));
	if (!n)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	t->hosts = n;
	t->hosts[t->n_hosts] = trainer__strdup(h);
	if (!t->hosts[t->n_hosts])
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	t->n_hosts++;
	return 0;
}

static int load_hosts(struct trainer *t)
{
	const char *v = getenv("SM_HOSTS");
	const char *cur = getenv("SM_CURRENT_HOST");
	json_error_t jerr;
	json_t *arr, *h;
	size_t i;
	int ret = 0;

	if (cur && !*cur)
		cur = NULL;
	if (v && *v) {
		arr = json_loads(v, JSON_REJECT_DUPLICATES, &jerr);
		if (!arr || !json_is_array(arr) || json_array_size(arr) == 0) {
			json_decref(arr);
			return trainer__err(t, TRAINER_EINVAL,
					    "SM_HOSTS is not a non-empty JSON "
					    "list of host names");
		}
		json_array_foreach(arr, i, h)
		{
			if (!json_is_string(h) || !*json_string_value(h)) {
				ret = trainer__err(t, TRAINER_EINVAL,
						   "SM_HOSTS[%zu] is not a "
						   "host name",
						   i);
				break;
			}
			ret = add_host(t, json_string_value(h));
			if (ret)
				break;
		}
		json_decref(arr);
		if (ret)
			return ret;
	} else {
		ret = add_host(t, cur ? cur : "algo-1");
		if (ret)
			return ret;
	}

	t->host_index = 0;
	if (cur) {
		for (i = 0; i < t->n_hosts; i++)
			if (!strcmp(t->hosts[i], cur))
				break;
		if (i == t->n_hosts)
			return trainer__err(t, TRAINER_EINVAL,
					    "SM_CURRENT_HOST '%s' is not in "
					    "SM_HOSTS",
					    cur);
		t->host_index = i;
	}
	t->current_host = trainer__strdup(t->hosts[t->host_index]);
	if (!t->current_host)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	return 0;
}

static int load_hps(struct trainer *t)
{
	const char *v = getenv("SM_HPS");
	json_error_t jerr;

	if (!v || !*v) {
		t->hps = json_object();
		if (!t->hps)
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
		return 0;
	}
	t->hps = json_loads(v, JSON_DECODE_ANY, &jerr);
	if (!t->hps || !json_is_object(t->hps)) {
		json_decref(t->hps);
		t->hps = NULL;
		return trainer__err(t, TRAINER_EINVAL,
				    "SM_HPS is not a JSON object: %s",
				    jerr.text[0] ? jerr.text : "wrong type");
	}
	return 0;
}

static int load_channels(struct trainer *t)
{
	size_t plen = strlen(CHANNEL_PREFIX);
	struct trainer__channel *c;
	const char *eq;
	char **e;
	size_t n;

	for (e = environ; e && *e; e++) {
		if (strncmp(*e, CHANNEL_PREFIX, plen))
			continue;
		eq = strchr(*e + plen, '=');
		if (!eq || eq == *e + plen)
			continue;
		c = realloc(t->channels, (t->n_channels + 1) * sizeof(*c));
		if (!c)
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
		t->channels = c;
		c = &t->channels[t->n_channels];
		n = (size_t)(eq - (*e + plen));
		c->name = malloc(n + 1);
		c->dir = trainer__strdup(eq + 1);
		if (!c->name || !c->dir) {
			free(c->name);
			free(c->dir);
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
		}
		memcpy(c->name, *e + plen, n);
		c->name[n] = '\0';
		t->n_channels++;
	}
	return 0;
}

static int load_attempt(struct trainer *t)
{
	const char *v = getenv("TRAINCTL_ATTEMPT");
	char *end;
	long n;

	t->attempt = 1;
	if (!v || !*v)
		return 0;
	t->in_job = 1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < 1 || n > INT_MAX)
		return trainer__err(t, TRAINER_EINVAL,
				    "TRAINCTL_ATTEMPT '%s' is not a positive "
				    "integer",
				    v);
	t->attempt = (int)n;
	return 0;
}

static int load_rdzv(struct trainer *t)
{
	const char *url = getenv("TRAINCTL_RDZV_URL");
	const char *tok = getenv("TRAINCTL_RDZV_TOKEN");
	size_t n;

	if (!url || !*url)
		return 0;
	t->rdzv_url = trainer__strdup(url);
	if (!t->rdzv_url)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	/* Keys are appended after one '/'. */
	n = strlen(t->rdzv_url);
	while (n > 0 && t->rdzv_url[n - 1] == '/')
		t->rdzv_url[--n] = '\0';
	if (tok && *tok) {
		t->rdzv_token = trainer__strdup(tok);
		if (!t->rdzv_token)
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	}
	return 0;
}

int trainer__env_load(struct trainer *t)
{
	int job = in_job();
	int ret;

	ret = load_hosts(t);
	if (!ret)
		ret = load_hps(t);
	if (!ret)
		ret = load_channels(t);
	if (!ret)
		ret = load_attempt(t);
	if (!ret)
		ret = load_rdzv(t);
	if (!ret)
		ret = set_dir(t, &t->model_dir, "SM_MODEL_DIR", "./model");
	if (!ret)
		ret = set_dir(t, &t->output_dir, "SM_OUTPUT_DATA_DIR",
			      "./output");
	/*
	 * Outside a job /opt/ml is rarely writable, so the checkpoints go
	 * next to ./model and ./output.
	 */
	if (!ret)
		ret = set_dir(t, &t->ckpt_dir, "TRAINCTL_CHECKPOINT_DIR",
			      job ? DEFAULT_CKPT_DIR : "./checkpoints");
	if (ret)
		return ret;
	/*
	 * A program run by hand must be able to write its model right away;
	 * inside a job the toolkit has made the directories already. A
	 * failure here shows up when the program writes, with its own error.
	 */
	if (!job) {
		(void)mkdir(t->model_dir, 0755);
		(void)mkdir(t->output_dir, 0755);
	}
	return 0;
}

void trainer__env_release(struct trainer *t)
{
	size_t i;

	for (i = 0; i < t->n_hosts; i++)
		free(t->hosts[i]);
	free(t->hosts);
	t->hosts = NULL;
	t->n_hosts = 0;
	for (i = 0; i < t->n_channels; i++) {
		free(t->channels[i].name);
		free(t->channels[i].dir);
	}
	free(t->channels);
	t->channels = NULL;
	t->n_channels = 0;
	free(t->current_host);
	free(t->model_dir);
	free(t->output_dir);
	free(t->ckpt_dir);
	free(t->rdzv_url);
	free(t->rdzv_token);
	json_decref(t->hps);
	t->current_host = t->model_dir = t->output_dir = t->ckpt_dir = NULL;
	t->rdzv_url = t->rdzv_token = NULL;
	t->hps = NULL;
}

size_t trainer_num_hosts(const struct trainer *t)
{
	return t ? t->n_hosts : 0;
}

const char *trainer_host(const struct trainer *t, size_t i)
{
	if (!t || i >= t->n_hosts)
		return NULL;
	return t->hosts[i];
}

const char *trainer_current_host(const struct trainer *t)
{
	return t ? t->current_host : NULL;
}

size_t trainer_host_index(const struct trainer *t)
{
	return t ? t->host_index : 0;
}

const char *trainer_model_dir(const struct trainer *t)
{
	return t ? t->model_dir : NULL;
}

const char *trainer_output_dir(const struct trainer *t)
{
	return t ? t->output_dir : NULL;
}

const char *trainer_checkpoint_dir(const struct trainer *t)
{
	return t ? t->ckpt_dir : NULL;
}

/*
 * The toolkit names the variable after the channel name upper-cased, so
 * "train" and "TRAIN" find SM_CHANNEL_TRAIN.
 */
const char *trainer_channel_dir(const struct trainer *t, const char *channel)
{
	size_t i, j, n;

	if (!t || !channel || !*channel)
		return NULL;
	n = strlen(channel);
	for (i = 0; i < t->n_channels; i++) {
		const char *name = t->channels[i].name;

		if (strlen(name) != n)
			continue;
		for (j = 0; j < n; j++)
			if (toupper((unsigned char)channel[j]) != name[j])
				break;
		if (j == n)
			return t->channels[i].dir;
	}
	return NULL;
}
