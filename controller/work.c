#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/agent_proto.h"
#include "api/distribution.h"
#include "api/job_config.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/images.h"
#include "controller/jobrt.h"
#include "controller/netcheck.h"
#include "controller/rendezvous.h"
#include "controller/uris.h"
#include "controller/obs/rulerun.h"
#include "controller/work.h"
#include "controller/replicate.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

static enum api_action action_of(const char *s)
{
	if (!strcmp(s, "stop"))
		return API_ACTION_STOP;
	if (!strcmp(s, "abort"))
		return API_ACTION_ABORT;
	return API_ACTION_RUN;
}

static char *host_address(struct ctrl_ctx *ctx, const char *host)
{
	struct ctrl_host *h;
	char *addr;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	addr = xstrdup(h && h->address ? h->address : "127.0.0.1");
	pthread_mutex_unlock(&ctx->hosts_lock);
	return addr;
}

static int host_gpus(struct ctrl_ctx *ctx, const char *host)
{
	struct ctrl_host *h;
	int n;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	n = h ? h->gpus : 0;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return n;
}

/* Who the attempt's hosts are: algo-N names and addresses. */
static void fill_hosts(struct ctrl_ctx *ctx, const struct db_assignment *mine,
		       const struct db_assignment *all, size_t n_all,
		       struct api_assignment *a)
{
	struct buf b = BUF_INIT;
	size_t i;

	(void)buf_addf(&b, "algo-%d", mine->host_index + 1);
	a->algo = buf_detach(&b, NULL);
	a->host_index = mine->host_index;
	a->n_hosts = n_all;
	a->hosts = xcalloc(n_all + 1, sizeof(*a->hosts));
	a->addresses = xcalloc(n_all + 1, sizeof(*a->addresses));
	for (i = 0; i < n_all; i++) {
		(void)buf_addf(&b, "algo-%d", all[i].host_index + 1);
		a->hosts[i] = buf_detach(&b, NULL);
		a->addresses[i] = host_address(ctx, all[i].host);
	}
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/*
 * A channel's input mode as the agent acts on it: its own InputMode, else
 * the job's TrainingInputMode. FastFile is staged as File.
 */
static void fill_channel_mode(const struct api_job_spec *spec,
			      const struct api_channel *c,
			      struct api_channel *out)
{
	const char *mode = c->input_mode ? c->input_mode : spec->input_mode;

	out->input_mode =
		xstrdup(mode && !strcmp(mode, "Pipe") ? "Pipe" : "File");
	out->compression = dup_or_null(c->compression);
	out->record_wrapper = dup_or_null(c->record_wrapper);
	out->content_type = dup_or_null(c->content_type);
	out->shuffle = c->shuffle;
	out->shuffle_seed = c->shuffle_seed;
}

/*
 * A channel for some instance groups only: ShardedByS3Key splits it
 * between the hosts of those groups, in host order.
 */
static void channel_shares(const struct api_job_spec *spec,
			   const struct api_channel *c, size_t me,
			   struct api_channel *out)
{
	size_t g, k, at = 0;

	for (g = 0; g < spec->n_groups; g++) {
		for (k = 0; k < (size_t)spec->groups[g].count; k++, at++) {
			if (!api_config_channel_on(c, spec->groups[g].name))
				continue;
			if (at == me)
				out->shard_index = out->shard_count;
			out->shard_count++;
		}
	}
}

/* The SageMaker config files' texts, the channels and the environment. */
static void fill_config(const struct api_job_spec *spec,
			const struct db_assignment *mine, size_t n_all,
			struct api_assignment *a)
{
	const char *group =
		api_config_host_group(spec, (size_t)mine->host_index);
	struct buf b = BUF_INIT;
	size_t i, n;

	a->instance_type =
		xstrdup(spec->instance_type ? spec->instance_type :
			spec->n_groups	    ? spec->groups[0].instance_type :
					      "local");
	(void)api_config_hyperparameters(spec, &b);
	a->hyperparameters_json = buf_detach(&b, NULL);
	/* Channels with InstanceGroupNames go to those groups' hosts only. */
	(void)api_config_input_data(spec, group, &b);
	a->input_data_config_json = buf_detach(&b, NULL);
	(void)api_config_resource(
		spec, (const char *const *)a->hosts, n_all,
		(size_t)mine->host_index,
		strncmp(a->addresses[mine->host_index], "127.", 4) ? "eth0" :
								     "lo",
		&b);
	a->resource_config_json = buf_detach(&b, NULL);
	if (spec->debug_hook_config_json)
		a->debug_hook_config_json =
			xstrdup(spec->debug_hook_config_json);
	if (spec->profiler_config_json)
		a->profiler_config_json = xstrdup(spec->profiler_config_json);
	if (spec->debug_s3_uri) {
		a->debug_s3_uri = xstrdup(spec->debug_s3_uri);
		a->debug_local_path = xstrdup(spec->debug_local_path);
	}
	if (spec->profiler_s3_uri) {
		a->profiler_s3_uri = xstrdup(spec->profiler_s3_uri);
		a->profiler_local_path = xstrdup(spec->profiler_local_path);
	}
	if (spec->n_channels) {
		a->channels = xcalloc(spec->n_channels, sizeof(*a->channels));
		for (i = n = 0; i < spec->n_channels; i++) {
			if (!api_config_channel_on(&spec->channels[i], group))
				continue;
			a->channels[n].name = xstrdup(spec->channels[i].name);
			a->channels[n].s3_uri =
				xstrdup(spec->channels[i].s3_uri);
			a->channels[n].s3_data_type =
				xstrdup(spec->channels[i].s3_data_type);
			a->channels[n].distribution =
				xstrdup(spec->channels[i].distribution);
			/* The mode in effect: the channel's, else the
			 * job's; what is needed to stream a Pipe. */
			fill_channel_mode(spec, &spec->channels[i],
					  &a->channels[n]);
			if (spec->channels[i].instance_groups)
				channel_shares(spec, &spec->channels[i],
					       (size_t)mine->host_index,
					       &a->channels[n]);
			n++;
		}
		a->n_channels = n;
	}
	if (spec->n_environment) {
		a->environment =
			xcalloc(spec->n_environment, sizeof(*a->environment));
		for (i = 0; i < spec->n_environment; i++) {
			a->environment[i].key =
				xstrdup(spec->environment[i].key);
			a->environment[i].value =
				xstrdup(spec->environment[i].value);
		}
		a->n_environment = spec->n_environment;
	}
}

/* What runs (the image's launch), where the model and checkpoints go. */
static void fill_launch(struct ctrl_ctx *ctx, const struct ctrl_jobrt *rt,
			const struct ctrl_launch *launch,
			struct api_assignment *a)
{
	const struct api_job_spec *spec = &rt->spec;
	struct buf b = BUF_INIT;

	a->launch_mode = launch->mode;
	if (launch->argv)
		a->argv = strv_dup(launch->argv);
	a->runtime = launch->runtime ? xstrdup(launch->runtime) : NULL;
	a->program = launch->program ? xstrdup(launch->program) : NULL;
	a->submit_directory = launch->submit_directory ?
				      xstrdup(launch->submit_directory) :
				      NULL;
	api_framework_copy(&a->framework, &launch->framework);
	a->framework.strict = ctx->cfg.framework_strict;
	if (launch->mode == API_LAUNCH_CONTAINER) {
		struct ctrl_image_ref ref;
		struct buf e = BUF_INIT;

		a->image = xstrdup(launch->image);
		a->entrypoint = launch->entrypoint ?
					strv_dup(launch->entrypoint) :
					NULL;
		if (!ctrl_image_ref_parse(launch->image, &ref, &e)) {
			a->registry_auth = ctrl_registry_auth_for(
				&ctx->registry, ref.registry);
			a->tls_verify = !ctrl_registry_insecure(&ctx->registry,
								ref.registry);
			ctrl_image_ref_release(&ref);
		}
		buf_release(&e);
	}
	a->output_path = xstrdup(spec->output_path);
	a->run_as = rt->run_as ? xstrdup(rt->run_as) : NULL;
	if (spec->checkpoint_s3_uri) {
		a->checkpoint_s3_uri = xstrdup(spec->checkpoint_s3_uri);
		a->checkpoint_local_path = xstrdup(spec->checkpoint_local_path);
	}
	if (spec->tensorboard_s3_uri) {
		a->tensorboard_s3_uri = xstrdup(spec->tensorboard_s3_uri);
		a->tensorboard_local_path =
			xstrdup(spec->tensorboard_local_path);
	}
	(void)buf_addf(&b, "%s/v1/blobs", ctx->cfg.advertise_url);
	a->blob_url = buf_detach(&b, NULL);
	/* A replicated controller's objects go through the blob endpoint,
	 * which copies them to a second member: never the leader's folder,
	 * even where a host shares its file system. */
	if (ctrl_repl_on())
		return;
	(void)buf_addf(&b, "%s/s3", ctx->cfg.state_dir);
	a->local_root = buf_detach(&b, NULL);
}

/* The rendezvous: master address and port, the store's URL and token. */
static void fill_rendezvous(struct ctrl_ctx *ctx,
			    const struct db_assignment *mine, int port,
			    struct api_assignment *a)
{
	struct buf b = BUF_INIT;
	char token[65];

	a->master_addr = xstrdup(a->addresses[0]);
	a->master_port = port;
	if (!ctx->rdzv)
		return;
	(void)buf_addf(&b, "%s/v1/rendezvous/%s/%d", ctx->cfg.advertise_url,
		       mine->job, mine->attempt);
	a->rdzv_url = buf_detach(&b, NULL);
	ctrl_rdzv_token(ctx, mine->job, mine->job_uid, mine->attempt, token);
	a->rdzv_token = xstrdup(token);
	/* The checkpoint copies outlive an attempt: a retry's hosts fetch
	 * what the last one's kept, so the token is the job's, not the
	 * attempt's (attempt 0 is never a rendezvous). */
	if (mine->job_uid) {
		ctrl_rdzv_token(ctx, mine->job, mine->job_uid, 0, token);
		a->peer_token = xstrdup(token);
	}
}

/* The distribution mode and how many processes each host runs. */
static int fill_distribution(struct ctrl_ctx *ctx, const struct ctrl_jobrt *rt,
			     const struct db_assignment *mine,
			     struct api_assignment *a, struct buf *err)
{
	const struct api_distribution *d;
	int ret = ctrl_jobrt_dist(rt, &d, err);

	if (ret)
		return ret;
	a->dist_mode = d->mode;
	a->mpi_processes = d->mpi_processes;
	a->mpi_options = d->mpi_options ? xstrdup(d->mpi_options) : NULL;
	a->ps_servers = d->ps_servers;
	/* As the toolkit: the host's GPUs, else one process per host. */
	a->processes_per_host = d->processes_per_host ?
					d->processes_per_host :
					host_gpus(ctx, mine->host);
	if (a->processes_per_host < 1 ||
	    (d->mode != API_DIST_TORCH && d->mode != API_DIST_MPI))
		a->processes_per_host = 1;
	return 0;
}

/*
 * Whether every host of the attempt passed its infrastructure checks,
 * the network part judged across them included.
 */
static int all_checked(const struct ctrl_ctx *ctx,
		       const struct db_assignment *all, size_t n)
{
	struct buf err = BUF_INIT;
	struct ctrl_net_limits lim;
	struct ctrl_net_median med;
	size_t i;
	int ok = 1;

	for (i = 0; i < n && ok; i++) {
		struct api_status st;

		if (!all[i].report_json) {
			ok = 0;
			break;
		}
		ok = !api_status_parse(all[i].report_json,
				       strlen(all[i].report_json), &st, &err) &&
		     st.n == 1 && st.items[0].check_ms > 0;
		api_status_release(&st);
	}
	if (ok && ctx->cfg.infra_net) {
		ctrl_netcheck_limits(&ctx->cfg, &lim);
		ok = !ctrl_netcheck_verdict(all, n, &lim, &med, &err);
	}
	buf_release(&err);
	return ok;
}

/* The attempt's facts from the store, read before jobs_lock is taken. */
struct attempt_info {
	int ret; /* of db_attempt_info(); err says why */
	int port;
	int64_t started;
	struct buf err;
};

/*
 * Fills a from the job's runtime, the attempt's facts and its
 * assignments. Caller holds jobs_lock.
 */
static int fill(struct ctrl_ctx *ctx, const struct ctrl_jobrt *rt,
		const struct attempt_info *info,
		const struct db_assignment *mine,
		const struct db_assignment *all, size_t n_all,
		struct api_assignment *a, struct buf *err)
{
	const struct api_job_spec *spec = &rt->spec;
	struct ctrl_launch launch;
	int ret, stop;

	memset(a, 0, sizeof(*a));
	ret = ctrl_image_resolve(&ctx->registry, rt, &launch, err);
	if (!ret && launch.mode == API_LAUNCH_CONTAINER && !launch.image) {
		(void)buf_addf(err, "job '%s': its image is not pinned",
			       mine->job);
		ctrl_launch_release(&launch);
		ret = ERR_INTERNAL;
	}
	if (ret)
		return ret;
	if (info->ret) {
		(void)buf_adds(err, info->err.data);
		ctrl_launch_release(&launch);
		return info->ret;
	}
	a->job = xstrdup(mine->job);
	a->job_uid = mine->job_uid ? xstrdup(mine->job_uid) : NULL;
	a->attempt = mine->attempt;
	a->action = action_of(mine->action);
	a->job_arn = ctrl_job_arn(ctx, mine->job);
	fill_hosts(ctx, mine, all, n_all, a);
	fill_config(spec, mine, n_all, a);
	fill_launch(ctx, rt, &launch, a);
	fill_rendezvous(ctx, mine, info->port, a);
	ret = fill_distribution(ctx, rt, mine, a, err);
	if (!ret) {
		a->grace_ms = ctx->cfg.grace_ms;
		a->hang_ms = ctrl_rules_hang_ms(spec, ctx->cfg.hang_timeout_ms,
						&stop, &a->hang_fixed);
	}
	a->network_isolation = spec->network_isolation;
	if (spec->infra_check || ctx->cfg.infra_check) {
		a->infra.enabled = 1;
		a->infra.min_disk_mb = ctx->cfg.infra_min_disk_mb;
		a->infra.min_shm_mb = ctx->cfg.infra_min_shm_mb;
		a->infra.max_skew_ms = ctx->cfg.infra_max_skew_ms;
		a->infra.controller_ms = time_now_ms();
		a->infra.network = ctx->cfg.infra_net;
		a->infra.hold = !all_checked(ctx, all, n_all);
	}
	ctrl_uris_owner_locations(ctx, rt->owner, a);
	ctrl_launch_release(&launch);
	return ret;
}

int ctrl_work_build(struct ctrl_ctx *ctx, const char *host, int64_t version,
		    struct buf *out, struct buf *err)
{
	struct db_assignment *mine = NULL;
	struct attempt_info info = { 0, 0, 0, BUF_INIT };
	struct api_work w;
	size_t n = 0;
	size_t i;
	int ret;

	memset(&w, 0, sizeof(w));
	w.version = version;
	w.prune_images = ctrl_hosts_prune_want(ctx, host);
	ret = db_assignments_list(ctx->db, NULL, host, 0, &mine, &n, err);
	if (ret)
		return ret;
	w.items = xcalloc(n ? n : 1, sizeof(*w.items));
	for (i = 0; i < n; i++) {
		struct db_assignment *all = NULL;
		struct ctrl_jobrt *rt;
		size_t n_all = 0;

		if (db_assignments_list(ctx->db, mine[i].job, NULL,
					mine[i].attempt, &all, &n_all, err))
			continue;
		/* The attempt can end (its assignments deleted) between the
		 * two reads: then there is nothing to send for it, and its
		 * host list must not be indexed. */
		if ((size_t)mine[i].host_index >= n_all ||
		    all[mine[i].host_index].host_index != mine[i].host_index) {
			db_assignments_free(all, n_all);
			continue;
		}
		info.port = 0;
		buf_reset(&info.err);
		info.ret = db_attempt_info(ctx->db, mine[i].job,
					   mine[i].attempt, &info.port,
					   &info.started, &info.err);
		pthread_mutex_lock(&ctx->jobs_lock);
		rt = ctrl_jobrt_get(ctx, mine[i].job);
		if (rt && !fill(ctx, rt, &info, &mine[i], all, n_all,
				&w.items[w.n], err))
			w.n++;
		else
			log_warn("host '%s': cannot build assignment of job "
				 "'%s': %s",
				 host, mine[i].job, err->data);
		pthread_mutex_unlock(&ctx->jobs_lock);
		db_assignments_free(all, n_all);
	}
	db_assignments_free(mine, n);
	buf_release(&info.err);
	ret = api_work_build(&w, out);
	api_work_release(&w);
	return ret;
}
