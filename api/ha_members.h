#ifndef API_HA_MEMBERS_H
#define API_HA_MEMBERS_H

/*
 * The members of a replicated controller on the wire (docs/ha.md):
 * GET /v1/members answers {"Term", "LeaderId", "LastIndex", "Members":
 * [{"Id", "RaftAddress", "ApiUrl", "Role", "Reachable", "Lag"}]};
 * POST /v1/members takes {"Id", "RaftAddress", "ApiUrl"}.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct api_member {
	unsigned long id;
	const char *raft_address;
	const char *api_url; /* NULL: not known (null) */
	const char *role;    /* "leader", "voter", "standby", "spare" */
	int reachable;
	uint64_t lag;
};

struct api_members {
	uint64_t term;
	unsigned long leader_id;
	uint64_t last_index;
	struct api_member *members;
	size_t n;
};

/* The answer of GET /v1/members. 0 or ERR_INVALID (text not UTF-8). */
int api_members_build(const struct api_members *m, struct buf *out);

/*
 * The body of POST /v1/members: Id (an integer), RaftAddress and ApiUrl
 * (strings), nothing else. *raft_address and *api_url are allocated.
 * Returns 0 or ERR_INVALID with err naming what is wrong.
 */
int api_member_add_parse(const char *json, size_t len, unsigned long *id,
			 char **raft_address, char **api_url, struct buf *err);

/* Builds that body. 0 or ERR_INVALID. */
int api_member_add_build(unsigned long id, const char *raft_address,
			 const char *api_url, struct buf *out);

/*
 * The table `trainctl members` prints of a GET /v1/members answer.
 * Returns 0 or ERR_INVALID with err.
 */
int api_members_table(const char *json, size_t len, struct buf *out,
		      struct buf *err);

#endif
