#ifndef CTRL_TAGS_H
#define CTRL_TAGS_H

#include <stddef.h>

#include "controller/caller.h"
#include "controller/reply.h"

/* The most tags a resource may carry, as on the service. */
#define CTRL_MAX_TAGS 50

/* AddTags, ListTags and DeleteTags on training-job ARNs (JSON 1.1 body). */
void ctrl_op_add_tags(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *body, size_t len,
		      struct ctrl_response *resp);
void ctrl_op_list_tags(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *body, size_t len,
		       struct ctrl_response *resp);
void ctrl_op_delete_tags(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp);

#endif
