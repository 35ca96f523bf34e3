#include <stdlib.h>
#include <string.h>

#include "api/sigv4.h"
#include "controller/caller.h"
#include "controller/ctrl.h"
#include "controller/reply.h"
#include "db/run.h"
#include "common/err.h"
#include "common/banned.h"

const struct ctrl_caller ctrl_caller_admin = { NULL, "", NULL, 1 };

void ctrl_caller_of(const struct api_credential *c, struct ctrl_caller *out)
{
	out->cred = c;
	out->owner = c->user ? c->user : c->profile;
	out->run_as = c->user;
	out->admin = c->admin;
}

int ctrl_caller_sees(const struct ctrl_caller *who, const char *owner)
{
	return who->admin || (owner && !strcmp(owner, who->owner));
}

/*
 * Another user's job is answered as a job that does not exist: an answer
 * of its own would tell which names other users took.
 */
static int denied(void)
{
	return ERR_NOTFOUND;
}

int ctrl_caller_check_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			  const char *name, struct buf *err)
{
	char *owner = NULL;
	int ret;

	if (who->admin)
		return 0;
	ret = db_job_owner(ctx->db, name, &owner, err);
	if (!ret && !ctrl_caller_sees(who, owner))
		ret = denied();
	if (ret == ERR_NOTFOUND)
		(void)buf_adds(err, CTRL_NOT_FOUND_MSG);
	free(owner);
	return ret;
}
