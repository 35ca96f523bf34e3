/*
 * The pure parts of membership (ha/ha.h, ha/internal.h): roles and their
 * names, raft's refusals of a change as errors, and what the members'
 * table needs to name raft's configuration.
 */
#include <stdlib.h>

#include <raft.h>

#include "ha/ha.h"
#include "ha/internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

enum ha_role ha__role(int raft_role, int is_leader)
{
	if (is_leader)
		return HA_ROLE_LEADER;
	if (raft_role == RAFT_VOTER)
		return HA_ROLE_VOTER;
	return raft_role == RAFT_STANDBY ? HA_ROLE_STANDBY : HA_ROLE_SPARE;
}

int ha__change_error(int rv, unsigned id, struct buf *err)
{
	switch (rv) {
	case RAFT_CANTCHANGE:
		(void)buf_addf(err, "another membership change is under way: "
				    "send this one once it is done");
		return ERR_CONFLICT;
	case RAFT_DUPLICATEID:
		(void)buf_addf(err, "member %u is a member already", id);
		return ERR_CONFLICT;
	case RAFT_DUPLICATEADDRESS:
		(void)buf_addf(err, "another member has that raft address");
		return ERR_CONFLICT;
	case RAFT_BADID:
		(void)buf_addf(err, "member %u is not a member", id);
		return ERR_NOTFOUND;
	case RAFT_TOOMANY:
		(void)buf_addf(err, "a cluster has at most %d members",
			       HA_MAX_MEMBERS);
		return ERR_CONFLICT;
	case RAFT_NOCONNECTION:
		(void)buf_addf(err,
			       "member %u did not answer while it was to "
			       "catch up: it stays a spare (remove it, or "
			       "add it again once it runs)",
			       id);
		return ERR_IO;
	case RAFT_NOTLEADER:
	case RAFT_LEADERSHIPLOST:
	case RAFT_SHUTDOWN:
		(void)buf_addf(err, "this member no longer leads (%s)",
			       raft_strerror(rv));
		return ERR_IO;
	}
	(void)buf_addf(err, "raft refused the change: %s", raft_strerror(rv));
	return ERR_IO;
}

const char *ha_role_name(enum ha_role role)
{
	switch (role) {
	case HA_ROLE_LEADER:
		return "leader";
	case HA_ROLE_VOTER:
		return "voter";
	case HA_ROLE_STANDBY:
		return "standby";
	case HA_ROLE_SPARE:
		break;
	}
	return "spare";
}

const struct ha_member_status *ha_status_member(const struct ha_status *st,
						unsigned id)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->members[i].id == id)
			return &st->members[i];
	return NULL;
}

static int in_rows(const struct ha_member *rows, size_t n, unsigned id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i].id == id)
			return 1;
	return 0;
}

void ha_members_plan(const struct ha_status *st, const struct ha_member *rows,
		     size_t n_rows, const struct ha_config *peers,
		     const struct ha_member ***put, size_t *n_put,
		     unsigned **del, size_t *n_del)
{
	size_t i;

	*put = NULL;
	*n_put = 0;
	*del = NULL;
	*n_del = 0;
	for (i = 0; i < st->n; i++) {
		const struct ha_member *m =
			ha_config_member(peers, st->members[i].id);

		if (!m || in_rows(rows, n_rows, m->id))
			continue;
		*put = xrealloc(*put, (*n_put + 1) * sizeof(**put));
		(*put)[(*n_put)++] = m;
	}
	for (i = 0; i < n_rows; i++) {
		if (ha_status_member(st, rows[i].id))
			continue;
		*del = xrealloc(*del, (*n_del + 1) * sizeof(**del));
		(*del)[(*n_del)++] = rows[i].id;
	}
}
