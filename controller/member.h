#ifndef CONTROLLER_MEMBER_H
#define CONTROLLER_MEMBER_H

/*
 * trainctld as a member of a replicated controller (--member, --peers;
 * docs/ha.md). Without --peers nothing here runs.
 */
#include <signal.h>
#include <stdint.h>

#include "common/buf.h"

struct ctrl_ctx;
struct ha;
struct ha_config;

/*
 * Runs this member as a follower, from its opened store: raft applies what
 * the leader commits, and the API on --listen forwards every request to
 * the leader. Returns 0 once this member leads and has applied every
 * committed entry (the controller starts then, from the store), 1 when a
 * signal of set other than SIGHUP asked to stop, or a negative code with
 * err set. argv is what the member re-executes when it loses leadership.
 */
int ctrl_member_follow(struct ctrl_ctx *ctx, char **argv, const sigset_t *set,
		       struct buf *err);

/*
 * Whether the controller may answer a request: 1 when not a member, else
 * whether this member still leads as far as raft's loop has seen within
 * half an election timeout (ha_serving()).
 */
int ctrl_member_serving(void);

/*
 * The term in which this member leads (ha_term()), put on every answer as
 * X-Trainctl-Term; 0 when not a member.
 */
uint64_t ctrl_member_term(void);

/*
 * Checks a request's X-Trainctl-Term (NULL: none): a caller that has seen
 * a higher term than this member's knows a newer leader. Returns 0, or
 * 503 (deposed) or 400 (not a term) with why set. A controller that is not
 * a member has no term and takes any.
 */
int ctrl_member_check_term(const char *seen, struct buf *why);

/* This member's raft and --peers: NULL when not a member. */
struct ha *ctrl_member_ha(void);
const struct ha_config *ctrl_member_peers(void);

/* Stops raft, before the store closes; nothing when not a member. */
void ctrl_member_stop(void);

#endif
