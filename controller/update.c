#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/requests.h"
#include "api/update.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/update.h"
#include "controller/warmpool.h"
#include "db/db.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * What an update may change, by the service's rules: the checks that need
 * the job as stored. Returns 0 or ERR_INVALID with err saying why.
 */
static int check_update(const struct api_update_request *u,
			const struct db_job *job, struct buf *err)
{
	if (u->profiler) {
		(void)buf_adds(err,
			       "ProfilerConfig and ProfilerRuleConfigurations "
			       "cannot be updated: the profiler's config is "
			       "given to the program when the job starts, and "
			       "a job's rules are the ones it was created "
			       "with");
		return ERR_INVALID;
	}
	if (u->remote_debug > 0) {
		(void)buf_adds(err,
			       "RemoteDebugConfig.EnableRemoteDebug: remote "
			       "debugging (SSM sessions into a running job) "
			       "is not supported; use the hosts' own SSH");
		return ERR_INVALID;
	}
	if (u->remote_debug >= 0 && strcmp(job->status, "InProgress")) {
		(void)buf_addf(err,
			       "RemoteDebugConfig can be updated only while "
			       "the training job is InProgress; it is %s.",
			       job->status);
		return ERR_INVALID;
	}
	return 0;
}

void ctrl_op_update(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_update_request u;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	struct db_job job;
	char *request = NULL;
	int have_job = 0;
	int ret;

	ret = api_update_request_parse(body, len, &u, &err);
	if (!ret)
		ret = ctrl_caller_check_job(ctx, who, u.name, &err);
	if (!ret) {
		ret = db_job_get(ctx->db, u.name, &job, &err);
		have_job = !ret;
	}
	if (!ret)
		ret = check_update(&u, &job, &err);
	/* The warm pool's rules (controller/warmpool.h); its period is in
	 * the stored request after this, as the rest of the update puts it
	 * there too. */
	if (!ret && u.keep_alive >= 0)
		ret = ctrl_warm_pool_set_keep_alive(ctx, u.name, u.keep_alive,
						    &err);
	if (!ret && api_request_apply_update(job.request_json, &u, &request))
		ret = ERR_INTERNAL;
	if (!ret)
		ret = db_job_set_request(ctx->db, u.name, request,
					 time_now_ms(), &err);
	if (!ret && api_create_response(job.arn, &out))
		ret = ERR_TOOBIG;
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		ctrl_jobs_changed(ctx);
		log_info("job '%s' updated", u.name);
		ctrl_reply_json(resp, &out);
	}
	if (have_job)
		db_job_release(&job);
	free(request);
	api_update_request_release(&u);
	buf_release(&err);
	buf_release(&out);
}
