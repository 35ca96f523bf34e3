#ifndef CTRL_UPDATE_H
#define CTRL_UPDATE_H

#include <stddef.h>

#include "controller/caller.h"
#include "controller/reply.h"

/* UpdateTrainingJob (JSON 1.1 body). */
void ctrl_op_update(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp);

#endif
