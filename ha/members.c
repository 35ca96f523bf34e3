/*
 * The pure parts of membership (ha/ha.h): role names, and what the
 * members' table needs to name raft's configuration.
 */
#include <stdlib.h>

#include "ha/ha.h"
#include "common/xalloc.h"
#include "common/banned.h"

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

static int in_status(const struct ha_status *st, unsigned id)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->members[i].id == id)
			return 1;
	return 0;
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
		if (in_status(st, rows[i].id))
			continue;
		*del = xrealloc(*del, (*n_del + 1) * sizeof(**del));
		(*del)[(*n_del)++] = rows[i].id;
	}
}
