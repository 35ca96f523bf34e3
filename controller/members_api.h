#ifndef CONTROLLER_MEMBERS_API_H
#define CONTROLLER_MEMBERS_API_H

/*
 * The members of a replicated controller (docs/ha.md), answered by the
 * leader: GET /v1/members, POST /v1/members (an admin's; adds a member),
 * DELETE /v1/members/{id} (an admin's; removes one), and their gauges on
 * /metrics. A controller that is not a member answers 404.
 */
#include <stddef.h>

#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_response;

void ctrl_members_list_route(struct ctrl_ctx *ctx, struct ctrl_response *resp);
void ctrl_members_add_route(struct ctrl_ctx *ctx, const char *body, size_t len,
			    struct ctrl_response *resp);
void ctrl_members_remove_route(struct ctrl_ctx *ctx, const char *id,
			       struct ctrl_response *resp);

/* trainctl_ha_* gauges; nothing when not a member. */
void ctrl_members_render_metrics(struct ctrl_ctx *ctx, struct buf *out);

#endif
