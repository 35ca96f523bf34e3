#ifndef CTRL_SEARCH_H
#define CTRL_SEARCH_H

#include <stddef.h>

#include "controller/caller.h"
#include "controller/reply.h"

/* Search with Resource TrainingJob (JSON 1.1 body). */
void ctrl_op_search(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp);

#endif
