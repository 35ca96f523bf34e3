#ifndef CTRL_BATCH_INT_H
#define CTRL_BATCH_INT_H

/* What controller/batch/'s files share (nothing outside includes it). */
#include <stddef.h>

#include "controller/caller.h"
#include "controller/reply.h"
#include "common/buf.h"

struct ctrl_ctx;

/*
 * Answers an error code from below as AWS Batch does: ClientException
 * (400) with msg for the caller's mistakes, ServerException (500) for
 * the store's own failures.
 */
void ctrl_batch_reply_err(struct ctrl_response *resp, int code,
			  const char *msg);

/* "arn:aws:batch:<region>:<account>:<what>" (caller frees). */
char *ctrl_batch_arn(const struct ctrl_ctx *ctx, const char *what);

/* The operations on objects (objects.c), each a ctrl_op_fn. */
void ctrl_batch_create_env(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp);
void ctrl_batch_update_env(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp);
void ctrl_batch_delete_env(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp);
void ctrl_batch_describe_envs(struct ctrl_ctx *ctx,
			      const struct ctrl_caller *who, const char *body,
			      size_t len, struct ctrl_response *resp);
void ctrl_batch_create_queue(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_batch_update_queue(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_batch_delete_queue(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_batch_describe_queues(struct ctrl_ctx *ctx,
				const struct ctrl_caller *who, const char *body,
				size_t len, struct ctrl_response *resp);
void ctrl_batch_create_policy(struct ctrl_ctx *ctx,
			      const struct ctrl_caller *who, const char *body,
			      size_t len, struct ctrl_response *resp);
void ctrl_batch_update_policy(struct ctrl_ctx *ctx,
			      const struct ctrl_caller *who, const char *body,
			      size_t len, struct ctrl_response *resp);
void ctrl_batch_delete_policy(struct ctrl_ctx *ctx,
			      const struct ctrl_caller *who, const char *body,
			      size_t len, struct ctrl_response *resp);
void ctrl_batch_describe_policies(struct ctrl_ctx *ctx,
				  const struct ctrl_caller *who,
				  const char *body, size_t len,
				  struct ctrl_response *resp);
void ctrl_batch_list_policies(struct ctrl_ctx *ctx,
			      const struct ctrl_caller *who, const char *body,
			      size_t len, struct ctrl_response *resp);
void ctrl_batch_create_share(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_batch_update_share(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_batch_delete_share(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_batch_describe_share(struct ctrl_ctx *ctx,
			       const struct ctrl_caller *who, const char *body,
			       size_t len, struct ctrl_response *resp);
void ctrl_batch_list_shares(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			    const char *body, size_t len,
			    struct ctrl_response *resp);

#endif
