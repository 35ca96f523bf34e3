#ifndef CTRL_CALLER_H
#define CTRL_CALLER_H

/* Who sent a request, and which jobs that caller may see and act on. */
#include "common/buf.h"

struct ctrl_ctx;

/*
 * Who sent a request (docs/security.md): the credential's user and role,
 * or ctrl_caller_admin when the controller has no credentials.
 */
struct api_credential;

struct ctrl_caller {
	const struct api_credential *cred; /* NULL: no credentials */
	const char *owner;		   /* recorded on the jobs it creates */
	const char *run_as; /* Unix user of their ranks, NULL: the agent's */
	int admin;	    /* sees and acts on every job */
};

extern const struct ctrl_caller ctrl_caller_admin;

/* The caller a verified credential stands for (pointers into c). */
void ctrl_caller_of(const struct api_credential *c, struct ctrl_caller *out);

/* Whether who may see and act on a job that owner created. */
int ctrl_caller_sees(const struct ctrl_caller *who, const char *owner);

/*
 * Whether who may see job name: 0, ERR_NOTFOUND (no such job) or ERR_AUTH
 * (another user's job), with err saying so.
 */
int ctrl_caller_check_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			  const char *name, struct buf *err);

#endif
